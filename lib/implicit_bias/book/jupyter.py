"""Re-running chapters interactively: the project's Jupyter kernel and JupyterLab.

- :func:`install_kernel` (run by ``make install``) registers the book's environment as the kernel
  ``implicit-bias`` ("Python 3 (implicit-bias book)") inside the environment (nothing is written
  outside it), and installs a kernel configuration that drops one log line every kernel prints at
  start ("Kernel is running over TCP without encryption": true of every local kernel, whose ZMQ
  sockets only listen on localhost) so that execution logs show what matters.
- :func:`lab` (``make lab``) starts JupyterLab in the book's root. jupytext's contents manager is
  active, so a chapter's ``.py`` opens as a notebook (right click, *Open With > Notebook*) and
  saving writes both the ``.py`` and the ``.ipynb``; the ``.py`` header is kept as it is (no
  jupytext version lines added on save).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

KERNEL_NAME = "implicit-bias"
KERNEL_DISPLAY_NAME = "Python 3 (implicit-bias book)"

KERNEL_CONFIG = '''\
# Installed by `python -m implicit_bias.book install-kernel` (make install); read by every IPython
# kernel of this environment. Local kernels talk to their client over ZMQ sockets on localhost;
# ipykernel 7 logs a warning about it at every start, which floods the execution logs of the book
# (one line per chapter and per nbval run). Drop that one message, nothing else.
import logging


class _DropLocalTcpWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Kernel is running over TCP without encryption" not in record.getMessage()


logging.getLogger("IPKernelApp").addFilter(_DropLocalTcpWarning())
'''


def kernel_config_path(prefix: str | Path = sys.prefix) -> Path:
    return Path(prefix) / "etc" / "ipython" / "ipython_kernel_config.py"


def install_kernel(prefix: str | Path = sys.prefix) -> list[Path]:
    """Register this environment's Python as the kernel ``implicit-bias`` under ``prefix`` and
    install the kernel configuration; returns the files written."""
    from ipykernel.kernelspec import install

    spec_dir = Path(install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME, prefix=str(prefix)))
    config = kernel_config_path(prefix)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(KERNEL_CONFIG)
    return [spec_dir / "kernel.json", config]


def lab_argv(root: Path, port: int | None = None, token: str | None = None,
             open_browser: bool = True, extra: Sequence[str] = ()) -> list[str]:
    """The JupyterLab options :func:`lab` uses."""
    argv = [f"--ServerApp.root_dir={root}", f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}",
            # offline and quiet: no extension listing from PyPI, no update or news checks
            "--LabApp.extension_manager=readonly",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=None"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI machines run as root
        argv.append("--ServerApp.allow_root=True")
    if port is not None:
        argv.append(f"--ServerApp.port={port}")
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if not open_browser:
        argv.append("--ServerApp.open_browser=False")
    return [*argv, *extra]


def lab(root: Path, port: int | None = None, token: str | None = None, open_browser: bool = True,
        extra: Sequence[str] = ()) -> int:
    """Run JupyterLab in ``root`` until it is stopped (Ctrl-C)."""
    from jupyterlab.labapp import LabApp

    headers_without_versions()
    LabApp.launch_instance(argv=lab_argv(root, port, token, open_browser, extra))
    return 0


def headers_without_versions() -> None:
    """Make jupytext (in this process) write ``.py`` headers as the chapters have them.

    When it saves a ``.py``, jupytext 1.19 writes ``text_representation`` with its format and
    program versions; the chapters' headers carry only the extension and the format name, so every
    save from JupyterLab would change the header of the chapter saved. jupytext offers a metadata
    filter for this, but writes the filter itself into every header; here the two version keys are
    dropped after jupytext builds the header's metadata (jupytext is pinned; tests/test_jupyter.py
    checks that saving an unedited chapter leaves its ``.py`` byte for byte).
    """
    import jupytext.header as header

    build = header.insert_jupytext_info_and_filter_metadata
    if getattr(build, "implicit_bias_wrapped", False):
        return

    def without_versions(metadata, fmt, text_format, unsupported_keys):
        out = build(metadata, fmt, text_format, unsupported_keys)
        representation = out.get("jupytext", {}).get("text_representation", {})
        representation.pop("format_version", None)
        representation.pop("jupytext_version", None)
        return out

    without_versions.implicit_bias_wrapped = True  # type: ignore[attr-defined]
    header.insert_jupytext_info_and_filter_metadata = without_versions


# JavaScript run in JupyterLab (started with expose_app_in_browser) for the screenshot; nbPanel()
# finds the notebook panel (the shell's current widget follows the focus, which a headless window
# may not have)
_FIND_PANEL = ("(() => { window.nbPanel = () => Array.from(jupyterapp.shell.widgets('main'))"
               ".find((x) => x.content && x.content.widgets); return true; })()")
_PANEL_READY = ("(() => { const w = nbPanel();"
                " return w && w.context && w.context.isReady && w.content.widgets.length > 0; })()")
# JupyterLab may ask which kernel to start for a .py opened as a notebook: accept the preselected
# one (the project's, the server's default kernel)
_KERNEL_STARTED = ("(() => { const ok = document.querySelector('.jp-Dialog .jp-mod-accept');"
                   " if (ok) { ok.click(); }"
                   " const s = nbPanel().sessionContext; return !!(s.session && s.session.kernel); })()")
_NO_TOASTS = ("(() => { const s = document.createElement('style');"
              " s.textContent = '.Toastify { display: none !important; }';"
              " document.head.appendChild(s); return true; })()")
_SET_SEED = """(() => {
    const nb = nbPanel().content;
    const cell = nb.widgets.find((w) => (w.model.getMetadata('tags') || []).includes('parameters'));
    const src = cell.model.sharedModel.getSource();
    cell.model.sharedModel.setSource(src.replace(/^seed = .*$/m, 'seed = SEED  # changed: any seed'));
    return true; })()"""
# done when the run line printed by start_chapter shows the new seed and every code cell has run
_RUN_DONE = """(() => {
    const nb = nbPanel().content;
    const run = nb.widgets.find((w) => w.model.sharedModel.getSource().includes('start_chapter('));
    return JSON.stringify(run.model.outputs.toJSON()).includes('seed=SEED  device=')
      && nb.widgets.every((w) => w.model.type !== 'code' || w.model.sharedModel.execution_count !== null)
      && nbPanel().sessionContext.session.kernel.status === 'idle'; })()"""
_SHOW_PARAMETERS = """(() => {
    const nb = nbPanel().content;
    const i = nb.widgets.findIndex((w) => (w.model.getMetadata('tags') || []).includes('parameters'));
    nb.activeCellIndex = i;
    nb.mode = 'command';
    return Promise.resolve(nb.scrollToItem(i, 'start')).then(() => true); })()"""
# the end of the rendered text above the parameters cell stays in view (MyST: boxes, math)
_SCROLL_UP = """(() => { const s = nbPanel().content.node.closest('.jp-WindowedPanel-outer')
    || nbPanel().content.node; s.scrollTop = Math.max(0, s.scrollTop - OFFSET); return true; })()"""


def lab_screenshot(png: Path, chapter: str = "chapters/invariances/02_paths_and_trees.py",
                   seed: int = 3, width: int = 900, height: int = 940, scale: float = 2.0,
                   above: int = 260) -> Path:
    """The picture of the how-to-run page: JupyterLab (started as ``make lab`` starts it, on a
    copy of the book) with a chapter's ``.py`` opened as a notebook, its seed changed and all cells
    run, taken in headless Chromium. The file browser is folded away and the window is narrow,
    drawn at ``scale`` pixels per CSS pixel, so that the text stays readable at the width of the
    page; ``above`` CSS pixels of the rendered text before the parameters cell stay in view. On
    failure, what the browser showed is saved next to ``png``."""
    import secrets
    import shutil
    import socket
    import subprocess
    import tempfile
    import time
    import urllib.request

    from .browser import Chromium
    from .sources import ROOT

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "book"
        for name in ("chapters", "book"):
            shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("_build", "__pycache__"))
        for name in ("_config.yml", "_toc.yml", "Makefile", "README.md"):
            shutil.copy2(ROOT / name, root / name)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        token = secrets.token_hex(16)
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": f"{tmp}/runtime", "JUPYTER_CONFIG_DIR": f"{tmp}/config"}
        server = subprocess.Popen(
            [sys.executable, "-m", "implicit_bias.book", "lab", "--no-browser", "--root", str(root),
             "--port", str(port), "--token", token, "--", "--LabApp.expose_app_in_browser=True"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            for _ in range(240):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                    break
                except OSError:
                    time.sleep(0.5)
            with Chromium(width=width, height=height, timeout=300, scale=scale) as chrome:
                try:
                    chrome.open(f"http://127.0.0.1:{port}/lab?token={token}&reset")
                    chrome.wait_for("window.jupyterapp && jupyterapp.started && true", timeout=120)
                    chrome.evaluate("jupyterapp.started.then(() => jupyterapp.restored).then(() => true)")
                    chrome.evaluate(f"jupyterapp.commands.execute('docmanager:open', {{path: '{chapter}', "
                                    "factory: 'Jupytext Notebook'}).then(() => true)")
                    chrome.evaluate(_FIND_PANEL)
                    chrome.wait_for(_PANEL_READY, timeout=120)
                    chrome.evaluate("(() => { jupyterapp.shell.activateById(nbPanel().id);"
                                    " jupyterapp.shell.collapseLeft(); jupyterapp.shell.collapseRight();"
                                    " return true; })()")
                    chrome.wait_for(_KERNEL_STARTED, timeout=120)
                    chrome.evaluate(_NO_TOASTS)
                    chrome.evaluate(_SET_SEED.replace("SEED", str(seed)))
                    chrome.evaluate("jupyterapp.commands.execute('notebook:clear-all-cell-outputs').then(() => true)")
                    chrome.evaluate("(() => { jupyterapp.commands.execute('notebook:run-all-cells'); return true; })()")
                    chrome.wait_for(_RUN_DONE.replace("SEED", str(seed)), timeout=300)
                    chrome.evaluate(_SHOW_PARAMETERS)
                    time.sleep(1.0)  # let the scroll settle
                    chrome.evaluate(_SCROLL_UP.replace("OFFSET", str(above)))
                    time.sleep(1.5)
                    chrome.screenshot(png)
                except Exception:
                    chrome.screenshot(png.with_suffix(".failed.png"))
                    raise
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)
    return png
