"""``python -m implicit_bias.book``: the book's command line."""

import sys

from .cli import main

sys.exit(main())
