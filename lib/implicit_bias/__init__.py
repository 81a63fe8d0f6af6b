"""implicit_bias: the shared library of the executable book on what gradient training makes
deep ReLU networks learn.

Modules (import them explicitly, e.g. ``from implicit_bias import spectra``):

- :mod:`runtime`   seeds, devices, profiles, quiet mode
- :mod:`models`    MLPs, bias-free CNNs, ResNet blocks, ordered weight matrices
- :mod:`train`     full-batch GD / SGD / Adam, schedules, recording callbacks, divergence checks
- :mod:`ensembles` many small networks trained as one batched computation (torch.func + vmap)
- :mod:`spectra`   singular values and every rank measure of the book, Jacobians, NTK
- :mod:`data`      digits, mnist1d, synthetic tasks, distribution shifts, local MNIST/CIFAR readers
- :mod:`claims`    the ledger of checked claims printed at the end of each chapter
- :mod:`cache`     results of expensive runs stored by (config, library version)
- :mod:`plotting`  the house style of the figures
- :mod:`book`      the command line behind ``make book`` (execute chapters, build the site)
"""

__version__ = "0.1.0"

from .runtime import describe_run, resolve_device, select_profile, set_seed  # noqa: E402

__all__ = ["__version__", "describe_run", "resolve_device", "select_profile", "set_seed"]
