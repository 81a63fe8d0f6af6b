"""Re-running a chapter interactively, as a reader does with ``make lab``: a real Jupyter server
(the same command, on localhost, a free port, a token, its own runtime folder) opens a chapter's
``.py`` as a notebook through its REST API (jupytext's contents manager), runs it on another seed
in the project's kernel over the kernel's websocket channels, and the claims hold; saving from the
server writes both paired files and changes nothing when nothing was edited. The server is stopped
even when the test fails."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from implicit_bias import book
from implicit_bias.book import jupyter

CHAPTER = Path("chapters") / "invariances" / "02_paths_and_trees.py"  # about 8 s of CPU
SEED = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A Jupyter server started with ``python -m implicit_bias.book lab`` (what ``make lab`` runs)."""

    def __init__(self, root: Path, workdir: Path, extra: tuple[str, ...] = ()) -> None:
        self.root, self.port, self.token = root, free_port(), secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "server.log"
        env = {**os.environ,
               "JUPYTER_RUNTIME_DIR": str(workdir / "runtime"),
               "JUPYTER_CONFIG_DIR": str(workdir / "config"),   # no user configuration
               "IPYTHONDIR": str(workdir / "ipython"),
               "JUPYTER_PLATFORM_DIRS": "1"}
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "implicit_bias.book", "lab", "--no-browser", "--root", str(root),
                 "--port", str(self.port), "--token", self.token, *(["--", *extra] if extra else [])],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir)

    def request(self, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.base}{path}", data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode()
        return json.loads(text) if text else None

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}):\n{self.log.read_text()}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.request("GET", "/api/status", timeout=5)
                return
            time.sleep(0.5)
        raise RuntimeError(f"the server did not answer within {timeout} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.request("POST", "/api/shutdown", timeout=10)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "book"
    for suffix in (".py", ".ipynb"):
        src = (book.ROOT / CHAPTER).with_suffix(suffix)
        (root / CHAPTER).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, (root / CHAPTER).with_suffix(suffix))
    srv = Server(root, tmp_path)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()
    assert srv.proc.poll() is not None, "the server is still running"


class Kernel:
    """A kernel's channels over the server's websocket (Jupyter messaging protocol, JSON)."""

    def __init__(self, srv: Server, kernel_id: str) -> None:
        import websocket

        self.session = uuid.uuid4().hex
        url = f"ws://127.0.0.1:{srv.port}/api/kernels/{kernel_id}/channels?session_id={self.session}"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {srv.token}"],
                                              timeout=300)

    def execute(self, code: str) -> tuple[list[dict], dict]:
        """Run ``code``; its iopub outputs and its execute_reply."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": self.session, "version": "5.3",
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        outputs, reply, idle = [], None, False
        while reply is None or not idle:
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if msg["channel"] == "shell" and kind == "execute_reply":
                reply = msg["content"]
            elif kind == "status":
                idle = msg["content"]["execution_state"] == "idle"
            elif kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append(msg)
        return outputs, reply

    def close(self) -> None:
        self.ws.close()


def text_of(outputs: list[dict]) -> str:
    parts = []
    for msg in outputs:
        content = msg["content"]
        parts.append(content.get("text") or content.get("data", {}).get("text/plain", "")
                     or "\n".join(content.get("traceback", [])))
    return "\n".join(parts)


def test_kernel_is_registered_in_the_environment():
    spec = Path(sys.prefix) / "share" / "jupyter" / "kernels" / jupyter.KERNEL_NAME / "kernel.json"
    assert spec.exists(), "run make install (it registers the kernel 'implicit-bias')"
    data = json.loads(spec.read_text())
    assert data["display_name"] == jupyter.KERNEL_DISPLAY_NAME
    assert Path(data["argv"][0]).resolve() == Path(sys.executable).resolve()


def test_a_chapter_opens_runs_on_another_seed_and_saves_through_jupyter(server: Server):
    path = CHAPTER.as_posix()
    py, ipynb = server.root / CHAPTER, (server.root / CHAPTER).with_suffix(".ipynb")
    py_before, nb_before = py.read_text(), ipynb.read_text()

    # the .py opens as a notebook (jupytext's contents manager), with the committed outputs
    model = server.request("GET", f"/api/contents/{path}?type=notebook&content=1")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    sources = [("".join(c["source"]) if isinstance(c["source"], list) else c["source"]) for c in cells]
    assert [c["cell_type"] for c in cells] == [c.cell_type for c in book.notebook_from_source(py).cells]
    assert any(c.get("outputs") for c in cells if c["cell_type"] == "code")

    # saving an unedited notebook changes neither file (but for one key of the .ipynb: jupytext
    # never writes the .py's text_representation into a paired .ipynb, and the notebooks committed
    # before this convention carry it; sync and execute keep it where it is)
    server.request("PUT", f"/api/contents/{path}", {"type": "notebook", "format": "json",
                                                   "content": model["content"]})
    assert py.read_text() == py_before, "saving from Jupyter rewrote the .py"
    saved, committed_nb = (nbformat.reads(t, as_version=4) for t in (ipynb.read_text(), nb_before))
    for nb in (saved, committed_nb):
        nb.metadata.get("jupytext", {}).pop("text_representation", None)
    assert saved == committed_nb, "saving an unedited notebook from Jupyter changed the .ipynb"
    assert book.sync(py, root=server.root) is False, "after a save from Jupyter, make sync has work"


    # run it in the project's kernel, on another seed (injected after the parameters cell, as
    # papermill does)
    session = server.request("POST", "/api/sessions", {"path": path, "type": "notebook", "name": "",
                                                       "kernel": {"name": jupyter.KERNEL_NAME}})
    kernel = Kernel(server, session["kernel"]["id"])
    try:
        last: list[dict] = []
        for cell, source in zip(cells, sources):
            if cell["cell_type"] != "code":
                continue
            outputs, reply = kernel.execute(source)
            assert reply["status"] == "ok", text_of(outputs)
            if "parameters" in cell["metadata"].get("tags", []):
                _, reply = kernel.execute(f"seed = {SEED}")
                assert reply["status"] == "ok"
            last = outputs
            if "start_chapter(" in source:
                assert f"profile=ci  seed={SEED}  device=CPU" in text_of(outputs)
    finally:
        kernel.close()
        server.request("DELETE", f"/api/sessions/{session['id']}")
    table = text_of(last)
    held = re.search(r"(\d+) of (\d+) claims hold", table)
    assert held, table
    committed = book.read_glued(book.ROOT / CHAPTER.with_suffix(".ipynb"))["claims"]["claims"]
    assert int(held.group(2)) == len(committed)
    assert held.group(1) == held.group(2), f"claims fail on seed {SEED}:\n{table}"
    for claim in committed:
        assert claim["id"] in table

    # an edit saved from Jupyter lands in both files
    edited = json.loads(json.dumps(model["content"]))
    first_md = next(c for c in edited["cells"] if c["cell_type"] == "markdown")
    src = first_md["source"] if isinstance(first_md["source"], str) else "".join(first_md["source"])
    first_md["source"] = src + "\n\nA sentence added in JupyterLab."
    server.request("PUT", f"/api/contents/{path}", {"type": "notebook", "format": "json", "content": edited})
    assert "# A sentence added in JupyterLab." in py.read_text()
    assert "A sentence added in JupyterLab." in ipynb.read_text()
    assert py.read_text().splitlines()[:13] == py_before.splitlines()[:13], "the .py header changed"


def test_jupyterlab_myst_is_active_in_the_server(server: Server):
    """The server make lab starts loads jupyterlab-myst (the chapters' MyST renders in JupyterLab):
    installed at the pinned version, enabled, compatible with the pinned JupyterLab (its status
    is "ok", not a version conflict), and in the page configuration that the browser loads."""
    pins = dict(re.findall(r"^([\w-]+)==([\w.]+)", (book.ROOT / "requirements.txt").read_text(), re.M))
    extensions = {e["name"]: e for e in server.request("GET", "/lab/api/extensions?refresh=0")}
    myst = extensions.get("jupyterlab-myst")
    assert myst is not None, f"jupyterlab-myst is not installed: {sorted(extensions)}"
    assert myst["installed"] and myst["enabled"], myst
    assert myst["status"] == "ok", f"jupyterlab-myst is not compatible with this JupyterLab: {myst}"
    assert myst["installed_version"] == pins["jupyterlab-myst"]
    req = urllib.request.Request(f"{server.base}/lab", headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        page = r.read().decode()
    assert '"name": "jupyterlab-myst"' in page, "the lab page does not load jupyterlab-myst"


@pytest.mark.slow
@pytest.mark.skipif(__import__("implicit_bias.book.browser", fromlist=["x"]).find_chromium() is None,
                    reason="no Chromium: apt-get install chromium (or set $CHROMIUM)")
def test_a_chapter_renders_its_myst_in_jupyterlab(tmp_path: Path):
    """In JupyterLab (as make lab starts it, in headless Chromium), a chapter's .py opened as a
    notebook shows its MyST as the book does: theorem and proof boxes, admonitions and math are
    rendered, and no directive or role is left as raw source."""
    from implicit_bias.book import browser

    root = tmp_path / "book"
    chapter = Path("chapters") / "invariances" / "01_conserved_quantities.py"  # boxes, math, a summary
    for suffix in (".py", ".ipynb"):
        (root / chapter).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2((book.ROOT / chapter).with_suffix(suffix), (root / chapter).with_suffix(suffix))
    srv = Server(root, tmp_path, extra=("--LabApp.expose_app_in_browser=True",))
    try:
        srv.wait_ready()
        # every cell drawn, not only those in view (JupyterLab draws a long notebook lazily)
        srv.request("PUT", "/lab/api/settings/@jupyterlab/notebook-extension:tracker",
                    {"raw": json.dumps({"windowingMode": "none"})})
        with browser.Chromium(width=1200, height=900, timeout=300) as chrome:
            chrome.open(f"{srv.base}/lab?token={srv.token}&reset")
            chrome.wait_for("window.jupyterapp && jupyterapp.started && true", timeout=120)
            chrome.evaluate("jupyterapp.started.then(() => jupyterapp.restored).then(() => true)")
            chrome.evaluate(f"jupyterapp.commands.execute('docmanager:open', {{path: '{chapter.as_posix()}', "
                            "factory: 'Jupytext Notebook'}).then(() => true)")
            chrome.evaluate(jupyter._FIND_PANEL)
            chrome.wait_for(jupyter._PANEL_READY, timeout=120)
            n_markdown = sum(c.cell_type == "markdown" for c in book.notebook_from_source(book.ROOT / chapter).cells)
            seen = chrome.wait_for(f"""(() => {{
                const cells = Array.from(document.querySelectorAll('.jp-MarkdownCell .myst'));
                if (cells.length < {n_markdown}) return null;
                const text = cells.map((c) => c.textContent).join('\\n');
                const count = (sel) => cells.reduce((n, c) => n + c.querySelectorAll(sel).length, 0);
                return {{cells: cells.length, proofs: count('.myst-proof'), admonitions: count('.myst-admonition'),
                         math: count('.katex'), raw: ['{{prf:', ':::', '```{{', '$$'].filter((t) => text.includes(t))}};
            }})()""", timeout=120)
    finally:
        srv.stop()
    assert seen["cells"] >= n_markdown, seen
    assert seen["proofs"] > 0 and seen["admonitions"] > 0 and seen["math"] > 10, seen
    assert not seen["raw"], f"MyST left as raw source in JupyterLab: {seen['raw']}"
