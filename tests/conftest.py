"""Fixtures shared by the test modules of ``tests/``: ``run_cli_many`` runs many command lines of
the book's CLI in one Python process, as ``python -m implicit_bias.book`` would run each, so that a
test of many bad inputs pays for one interpreter start instead of one per input; ``path_network``
builds the deep network with one active path, a known KKT point."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

_MANY = """
import contextlib, io, json, sys
from implicit_bias.book.cli import main
results = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code
    results.append({"rc": rc, "out": out.getvalue(), "err": err.getvalue()})
print(json.dumps(results))
"""


def _run_cli_many(argv: Sequence[Sequence[str]], cwd: Path, env: Mapping[str, str] | None = None,
                 timeout: float = 300) -> list[dict[str, Any]]:
    """``[{"rc", "out", "err"}]``: the exit status, stdout and stderr of each command line of
    ``argv`` (the CLI's arguments, without ``python -m implicit_bias.book``), run in ``cwd``."""
    done = subprocess.run([sys.executable, "-c", _MANY, json.dumps([list(a) for a in argv])], cwd=cwd,
                          env=None if env is None else dict(env), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def run_cli_many():
    """:func:`_run_cli_many`: ``run_cli_many(argv, cwd, env=None, timeout=300)``."""
    return _run_cli_many


@pytest.fixture
def path_network():
    """A factory ``(d, width, depth, c) -> weights``: one stacked bias-free network ``(1, out,
    in)`` with one active path of weight ``c`` per layer (other units zero). Fed by ``x = e_1`` it
    outputs ``c^depth``; with ``c = 1`` its parameters equal ``grad N(x)`` (Euler), a KKT point of
    the max-margin and of the interpolation problem on that one point."""
    import torch

    def make(d: int, width: int, depth: int, c: float) -> list:
        Ws = [torch.zeros(1, width, d, dtype=torch.float64)]
        Ws[0][0, 0, 0] = c
        for _ in range(depth - 2):
            W = torch.zeros(1, width, width, dtype=torch.float64)
            W[0, 0, 0] = c
            Ws.append(W)
        last = torch.zeros(1, 1, width, dtype=torch.float64)
        last[0, 0, 0] = c
        return Ws + [last]

    return make
