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

    def __init__(self, root: Path, workdir: Path) -> None:
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
                 "--port", str(self.port), "--token", self.token],
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
