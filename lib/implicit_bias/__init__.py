"""implicit_bias: the shared library of the executable book on what gradient training makes
deep ReLU networks learn.

Its tree mirrors the book. Import modules explicitly, e.g. ``from implicit_bias import spectra``.

The toolkit every part uses:

- :mod:`models`    MLPs, bias-free CNNs, ResNet blocks, ordered weight matrices
- :mod:`train`     full-batch GD / SGD / Adam, schedules, recording callbacks, divergence checks
- :mod:`ensembles` many small networks trained as one batched computation (stacked products for
                   MLPs, torch.func + vmap for the rest)
- :mod:`spectra`   singular values and every rank measure of the book, Jacobians, NTK
- :mod:`data`      digits, mnist1d, synthetic tasks, distribution shifts, local MNIST/CIFAR readers
- :mod:`plotting`  the house style of the figures

The book's machinery:

- :mod:`runtime`   seeds, devices, profiles, quiet mode
- :mod:`chapter`   what every chapter does first (profile, seed, device, the run line)
- :mod:`claims`    the ledger of checked claims printed at the end of each chapter
- :mod:`cache`     results of expensive runs stored by (config, the code that computes them)
- :mod:`book`      the command line behind ``make book`` (execute chapters, reports, the site)

One subpackage per part of the book, named like its folder under ``chapters/`` (a part never
imports another part, and the toolkit never imports a part; ``tests/test_layout.py`` checks it):

- :mod:`invariances`        Le & Jegelka: conserved quantities, paths, margins and alignment
- :mod:`rank_minimization`  Timor, Vardi & Shamir: the two-neuron simulator, deep constructions
- :mod:`extrapolation`      Kang et al.: the optimal constant solution, theory, selective decisions
- :mod:`bottleneck`         Jacot: Jacobian and NTK closed forms, finite-depth bounds, constructions, depth sweeps
"""

__version__ = "0.1.0"

__all__ = ["__version__", "describe_run", "resolve_device", "select_profile", "set_seed"]
_RUNTIME = ("describe_run", "resolve_device", "select_profile", "set_seed")


def __getattr__(name: str):  # PEP 562: importing the package does not import torch (the test
    if name in _RUNTIME:     # suite chooses the CPU kernels before torch loads; conftest.py)
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'implicit_bias' has no attribute {name!r}")
