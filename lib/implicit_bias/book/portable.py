"""Verdicts that hold on every machine: what the test suite compares, and on which kernels.

Torch and MKL do not give the same bits on every CPU (nor on a GPU, nor on ARM), so the book
promises: bitwise on one machine, the same verdicts on every machine, values within their stated
tolerance. Two pieces keep that promise honest:

1. **What nbval compares.** A chapter's ledger cell (the only cell whose output is checked) is
   compared by :func:`compare_ledger_outputs`, not character by character: the ledgers glued in the
   committed and the re-executed outputs must agree on ids, bearings, items and verdicts exactly,
   and on values within tolerance (:func:`implicit_bias.claims.compare`). ``conftest.py`` installs
   it on nbval's ledger cells.
2. **Every test run is a run on another machine.** :func:`execute_one <.execute.execute_one>`
   records, in each committed notebook's metadata, the CPU kernels that wrote it
   (:func:`kernel_signature`). The test suite then runs with other kernels
   (:func:`other_kernels_env`): another ATen vector width, another MKL code path, and a narrower
   instruction set for oneDNN, which computes the convolutions and which ATen's setting does not
   reach. A claim whose verdict depends on the CPU then fails CI where it was introduced, not on a
   reader's laptop. (Notebooks executed before oneDNN was recorded lack its field ``onednn``; the
   readers of the metadata take that as oneDNN's own choice, ``ALL``.)
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..claims import GLUE_KEY, compare

METADATA_KEY = "implicit_bias"
GLUE_MIME = "application/papermill.record/text/plain"
# ATen's kernels, fastest first (ATEN_CPU_CAPABILITY takes the lower-case names); "DEFAULT" is the
# generic build every CPU runs
ATEN_LEVELS = ("AVX512", "AVX2", "DEFAULT")
# MKL code paths (MKL_CBWR): "AUTO" is MKL's own choice for the CPU (the variable unset). A fixed
# branch gives the same bits on every CPU that supports it (MKL's conditional reproducibility), and
# differs from AUTO. AVX2 costs nothing on a modern x86 CPU; COMPATIBLE (SSE2) about 1.5x.
MKL_BRANCHES = ("AVX2", "AUTO", "COMPATIBLE")
# oneDNN's instruction sets (ONEDNN_MAX_CPU_ISA takes these names), widest first; "ALL" is oneDNN's
# own choice for the CPU (the variable unset). A committing machine's oneDNN ran at the set that
# goes with its ATen level (or wider: AVX512 machines may have AMX); the tests cap oneDNN one set
# below that of the narrowest committed ATen level: AVX512 -> AVX2, AVX2 -> AVX, DEFAULT -> SSE41.
ONEDNN_ISAS = ("AVX512_CORE", "AVX2", "AVX", "SSE41")
ONEDNN_OF_ATEN = {"AVX512": "AVX512_CORE", "AVX2": "AVX2", "DEFAULT": "AVX"}
ONEDNN_ENV, ONEDNN_OLD_ENV = "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"  # oneDNN reads either
OPT_OUT_ENV = "IMPLICIT_BIAS_TEST_KERNELS"  # "native": run the tests on this machine's own kernels


def kernel_signature() -> dict[str, str]:
    """The CPU kernels this process computes with: ATen's vector width (as torch reports it, after
    ``ATEN_CPU_CAPABILITY``), MKL's code path (``MKL_CBWR``, "AUTO" when unset), oneDNN's widest
    instruction set (``ONEDNN_MAX_CPU_ISA``, "ALL" when unset) and the machine."""
    import torch

    return {"aten": torch.backends.cpu.get_cpu_capability().upper(),
            "mkl_cbwr": (os.environ.get("MKL_CBWR") or "AUTO").upper(),
            "onednn": (os.environ.get(ONEDNN_ENV) or os.environ.get(ONEDNN_OLD_ENV) or "ALL").upper(),
            "machine": platform.machine()}


def record_kernels(nb: Any, signature: Mapping[str, str] | None = None) -> None:
    """Write :func:`kernel_signature` into an executed notebook's metadata."""
    meta = nb.metadata.setdefault(METADATA_KEY, {})
    meta["kernels"] = dict(signature or kernel_signature())


def committed_kernels(notebooks: Iterable[Path]) -> list[dict[str, str]]:
    """The distinct kernel signatures recorded in committed notebooks (read as JSON, no kernel)."""
    found: list[dict[str, str]] = []
    for path in notebooks:
        try:
            meta = json.loads(Path(path).read_text()).get("metadata", {})
        except (OSError, ValueError):
            continue
        sig = meta.get(METADATA_KEY, {}).get("kernels")
        if sig and sig not in found:
            found.append(sig)
    return found


def available_aten_levels() -> list[str]:
    """ATen levels this CPU can run, fastest first (read from the CPU flags, without torch)."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line
                    break
    except OSError:
        pass
    if platform.machine() not in ("x86_64", "AMD64"):
        return ["DEFAULT"]  # ARM and others: torch picks its own; only the generic one is forced
    have = set(flags.split())
    levels = []
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= have:
        levels.append("AVX512")
    if "avx2" in have:
        levels.append("AVX2")
    return levels + ["DEFAULT"]


def other_kernels_env(committed: Sequence[Mapping[str, str]], available: Sequence[str],
                      machine: str | None = None) -> dict[str, str]:
    """Environment variables that make this machine compute with kernels none of the committed
    notebooks was written with: the fastest ATen level not among theirs, the first MKL branch not
    among theirs, and oneDNN capped below their ATen levels (:func:`onednn_cap`; MKL and oneDNN
    only on x86). Empty when nothing was recorded (nothing to differ from)."""
    if not committed:
        return {}
    env: dict[str, str] = {}
    used_aten = {c.get("aten", "").upper() for c in committed}
    other = [lvl for lvl in available if lvl not in used_aten]
    if other and other[0] != available[0]:  # this machine's best level is theirs: step down
        env["ATEN_CPU_CAPABILITY"] = other[0].lower()
    machine = machine or platform.machine()
    if machine in ("x86_64", "AMD64"):
        used_mkl = {c.get("mkl_cbwr", "AUTO").upper() for c in committed}
        branch = next((b for b in MKL_BRANCHES if b not in used_mkl), None)
        if branch is not None and branch != "AUTO":
            env["MKL_CBWR"] = branch
        cap = onednn_cap(committed)
        if cap is not None:
            env[ONEDNN_ENV] = cap
    return env


def onednn_cap(committed: Sequence[Mapping[str, str]]) -> str | None:
    """oneDNN's instruction set for the tests (``ONEDNN_MAX_CPU_ISA``): one below the set that goes
    with the narrowest ATen level of the committed notebooks (:data:`ONEDNN_OF_ATEN`), and not a cap
    they recorded themselves (a notebook without the field ``onednn`` ran with oneDNN's own
    choice). None when no narrower set is left."""
    levels = [c.get("aten", "").upper() for c in committed]
    known = [lvl for lvl in ATEN_LEVELS if lvl in levels]
    if not known:
        return None
    used = {c.get("onednn", "ALL").upper() for c in committed}
    start = ONEDNN_ISAS.index(ONEDNN_OF_ATEN[known[-1]]) + 1
    return next((isa for isa in ONEDNN_ISAS[start:] if isa not in used), None)


def test_kernels_env(root: Path) -> dict[str, str]:
    """What the test suite sets before any kernel starts (see the module docstring); honours
    ``IMPLICIT_BIAS_TEST_KERNELS=native`` and variables the user set already."""
    if os.environ.get(OPT_OUT_ENV, "").lower() == "native":
        return {}
    committed = committed_kernels(sorted((root / "chapters").rglob("*.ipynb")))
    env = other_kernels_env(committed, available_aten_levels())
    if ONEDNN_OLD_ENV in os.environ:  # the user's cap, under oneDNN's older name, stays
        env.pop(ONEDNN_ENV, None)
    return {k: v for k, v in env.items() if k not in os.environ}


def glued_ledger(outputs: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The ledger JSON glued among a cell's outputs (nbformat or nbval's), or None."""
    for out in outputs:
        data = out.get("data") or {}
        meta = (out.get("metadata") or {}).get("scrapbook") or {}
        if GLUE_MIME in data and meta.get("name", GLUE_KEY) == GLUE_KEY:
            text = data[GLUE_MIME]
            text = "".join(text) if isinstance(text, list) else text
            try:
                value = json.loads(text)
            except ValueError:
                import ast

                value = json.loads(ast.literal_eval(text))  # glued as a Python string literal
            if isinstance(value, str):
                value = json.loads(value)
            if isinstance(value, dict) and "claims" in value:
                return value
    return None


def compare_ledger_outputs(reference: Sequence[Mapping[str, Any]],
                           test: Sequence[Mapping[str, Any]]) -> list[str]:
    """Differences between the committed and the re-executed outputs of a ledger cell that no
    machine may cause (see :func:`implicit_bias.claims.compare`)."""
    ref, new = glued_ledger(reference), glued_ledger(test)
    if ref is None:
        return ["the committed cell has no glued ledger"]
    if new is None:
        return ["the re-executed cell glued no ledger (did ledger.report() run?)"]
    return compare(ref, new)
