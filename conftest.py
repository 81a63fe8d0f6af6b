"""Test-session settings shared by the unit tests and nbval: silent progress bars, a headless
matplotlib backend, and one CPU thread per kernel (deterministic, and two notebooks can run in
parallel on two cores)."""

import os

os.environ.setdefault("IMPLICIT_BIAS_QUIET", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OMP_NUM_THREADS", "1")
