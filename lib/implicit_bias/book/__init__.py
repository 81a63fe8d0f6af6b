"""The book's machinery: the command line behind ``make book``, ``make execute``, ``make sync`` and
the page checks (``python -m implicit_bias.book --help``).

- :mod:`.sources`  the book's root, the chapters in table-of-contents order, .py/.ipynb pairing
- :mod:`.execute`  papermill execution, parallel jobs, failure reports
- :mod:`.report`   the generated pages: reproduction report, errata
- :mod:`.site`     staging and the strict Jupyter Book build
- :mod:`.cli`      the commands
"""

from .cli import main
from .execute import Outcome, execute_many, execute_one, print_failures
from .report import chapter_title, read_glued, render_errata, render_report, write_report
from .site import announce, device_description, jupyter_book_build, stage_source, use_local_mathjax
from .sources import (ROOT, all_chapters, find_root, notebook_from_source, resolve_chapters,
                      strip_volatile, sync)

__all__ = [
    "ROOT", "Outcome", "all_chapters", "announce", "chapter_title", "device_description",
    "execute_many", "execute_one", "find_root", "jupyter_book_build", "main", "notebook_from_source",
    "print_failures", "read_glued", "render_errata", "render_report", "resolve_chapters",
    "stage_source", "strip_volatile", "sync", "use_local_mathjax", "write_report",
]
