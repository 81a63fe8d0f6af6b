"""The book's machinery: the command line behind ``make book``, ``make execute``, ``make sync``,
``make lab`` and the page checks (``python -m implicit_bias.book --help``).

- :mod:`.sources`    the book's root, the chapters in table-of-contents order, what a chapter
                     declares (parameters, profiles), .py/.ipynb pairing and its guard
- :mod:`.params`     checking a run's profile and parameters before any kernel starts
- :mod:`.execute`    papermill execution, parallel jobs, failure reports
- :mod:`.common`     what several of these share (a task, its outcome, the failure-page key)
- :mod:`.estimate`   the run-time estimate printed before a ``full`` run without a GPU
- :mod:`.report`     the generated pages: reproduction report, errata; claims of a seed folder
- :mod:`.site`       staging, failed chapters' pages, the banner and the strict Jupyter Book build
- :mod:`.sphinx_ext` the book's Sphinx extension (reference text, figure numbers, reference list)
- :mod:`.jupyter`    the project's kernel and JupyterLab
- :mod:`.cli`        the commands
"""

from .cli import main
from .execute import Outcome, execute_many, execute_one, print_failures
from .report import (chapter_title, claims_summary, read_glued, render_errata, render_report,
                     write_report)
from .site import announce, device_description, jupyter_book_build, stage_source, use_local_mathjax
from .sources import (ROOT, NotebookEdited, all_chapters, chapter_spec, find_root,
                      notebook_from_source, resolve_chapters, strip_volatile, sync, synced_notebook)

__all__ = [
    "ROOT", "NotebookEdited", "Outcome", "all_chapters", "announce", "chapter_spec", "chapter_title",
    "claims_summary", "device_description", "execute_many", "execute_one", "find_root",
    "jupyter_book_build", "main", "notebook_from_source", "print_failures", "read_glued",
    "render_errata", "render_report", "resolve_chapters", "stage_source", "strip_volatile", "sync",
    "synced_notebook", "use_local_mathjax", "write_report",
]
