"""Test-session settings shared by the unit tests and nbval.

- Silent progress bars, a headless matplotlib backend, one CPU thread per kernel (deterministic,
  and two notebooks can run in parallel on two cores).
- **Other kernels than the committing machine's** (``implicit_bias.book.portable``): every test
  run computes with an ATen vector width, an MKL code path and a oneDNN instruction set (the
  convolutions) that did not write the committed notebooks, so a verdict that depends on the CPU fails here, not on a reader's laptop. Set
  ``IMPLICIT_BIAS_TEST_KERNELS=native`` to run on this machine's own kernels.
- **Ledger cells are compared for what every machine must agree on**: ids, bearings, items and
  verdicts exactly, values within their tolerance (``implicit_bias.claims.compare``), instead of
  nbval's character-by-character comparison. Other checked cells keep nbval's comparison.
"""

import os
from pathlib import Path

os.environ.setdefault("IMPLICIT_BIAS_QUIET", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from implicit_bias.book import portable  # noqa: E402  (no torch import: the kernels come first)

ROOT = Path(__file__).resolve().parent
TEST_KERNELS = portable.test_kernels_env(ROOT)
os.environ.update(TEST_KERNELS)  # before torch is imported and before any kernel starts


def pytest_report_header(config):
    chosen = ", ".join(f"{k}={v}" for k, v in TEST_KERNELS.items()) or "this machine's own"
    return f"implicit_bias: notebooks execute with other CPU kernels than the committed ones: {chosen}"


def _compare_ledger(self, test, ref, skip_compare=None):
    """nbval's ``IPyNbCell.compare_outputs`` for a ledger cell (see the module docstring)."""
    problems = portable.compare_ledger_outputs(ref, test)
    self.comparison_traceback = [
        "The ledger differs from the committed one beyond what another machine may change "
        "(ids, bearings, items and verdicts must be equal; values within tolerance):",
        *(f"  - {p}" for p in problems),
        "Re-execute the chapter (make execute CHAPTER=...) if the change is intended; if a verdict "
        "or value moves with the CPU alone, the claim needs a margin (CONTRIBUTING.md, Claims).",
    ]
    return not problems


def pytest_collection_modifyitems(session, config, items):
    import types

    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return
    for item in items:
        if isinstance(item, IPyNbCell) and portable.glued_ledger(item.cell.get("outputs", [])):
            item.compare_outputs = types.MethodType(_compare_ledger, item)
