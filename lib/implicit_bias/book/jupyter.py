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
    argv = [f"--ServerApp.root_dir={root}", f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}"]
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
    import jupytext.header
    from jupyterlab.labapp import LabApp

    # jupytext writes its version into a .py header when it saves one; the chapters' headers
    # carry none, so a save from JupyterLab would change every header it touches
    jupytext.header.INSERT_AND_CHECK_VERSION_NUMBER = False
    LabApp.launch_instance(argv=lab_argv(root, port, token, open_browser, extra))
    return 0
