"""Looking at the built site (and at JupyterLab) the way a reader does: headless Chromium driven
over the DevTools protocol, for the layout checks of the test suite and the screenshots of the
how-to-run page.

Chromium is not a Python package: install it with the system's package manager (Debian:
``apt-get install chromium``) or point ``$CHROMIUM`` at a Chrome/Chromium binary.
:func:`find_chromium` returns None when there is none, and the tests that need it skip, saying so.

    with serve(html_folder) as base, Chromium() as browser:
        browser.open(base + "/chapters/invariances/01_conserved_quantities.html")
        problems = browser.evaluate(LAYOUT_CHECK_JS)
        browser.screenshot(Path("page.png"))
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# the flags of a quiet, offline, headless Chromium (no sandbox: it may run as root in CI)
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-allow-origins=*", "--disable-dev-shm-usage")  # scrollbars shown, as a reader sees them


def find_chromium() -> str | None:
    """A Chromium or Chrome binary: ``$CHROMIUM``, else the usual names on the PATH."""
    env = os.environ.get("CHROMIUM")
    if env and Path(env).exists():
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on localhost (a free port) while the block runs; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


class BrowserError(RuntimeError):
    pass


class Chromium:
    """A headless Chromium with one page, driven over the DevTools protocol (a websocket)."""

    def __init__(self, width: int = 1280, height: int = 900, binary: str | None = None,
                 timeout: float = 60.0, scale: float = 1.0) -> None:
        self.width, self.height, self.timeout, self.scale = width, height, timeout, scale
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise BrowserError("no Chromium found: install it (Debian: apt-get install chromium) "
                               "or set $CHROMIUM to a Chrome/Chromium binary")
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen | None = None
        self._ws: Any = None
        self._profile: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Chromium:
        import websocket

        self._profile = tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True)
        profile = Path(self._profile.name)
        self._proc = subprocess.Popen(
            [self.binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise BrowserError("Chromium did not start (no DevToolsActivePort)")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self._ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=self.timeout,
                                               suppress_origin=True)
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  width=self.width, height=self.height, deviceScaleFactor=self.scale, mobile=False)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.close()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        if self._profile is not None:
            self._profile.cleanup()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are skipped)."""
        msg_id = next(self._ids)
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"JavaScript error: {result['exceptionDetails'].get('text')}: "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float | None = None, poll: float = 0.25) -> Any:
        """Evaluate ``expression`` until it is truthy; its value (raises after ``timeout`` s)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression!r}")
            time.sleep(poll)

    def open(self, url: str) -> None:
        """Load ``url`` and wait until the page and its math (MathJax) are rendered."""
        # mark the page being left, so that its own "complete" state is not mistaken for the new one's
        self.evaluate("window.__leaving = true")
        self.call("Page.navigate", url=url)
        self.wait_for("!window.__leaving && document.readyState === 'complete' && !!document.body")
        self.evaluate("(window.MathJax && MathJax.startup && MathJax.startup.promise)"
                      " ? MathJax.startup.promise.then(() => true) : true")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """Save a PNG of the viewport (or of the whole page)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params |= {"captureBeyondViewport": True,
                       "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}}
        data = self.call("Page.captureScreenshot", **params)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


# What a reader sees. For every element that holds content wider than some box around it (a long
# display equation, a wide table, a long code line or output), the nearest such box must scroll
# (overflow-x auto or scroll) and show its scrollbar: content cut off by a box that hides its
# overflow, a scroll container without a visible scrollbar, or content spilling out of the page's
# main column, is a problem. Returns [{what, where, problem, content, box}], empty when fine.
LAYOUT_CHECK_JS = r"""
(() => {
  const problems = [];
  const main = document.querySelector('main') || document.querySelector('article') || document.body;
  const mainRight = main.getBoundingClientRect().right;
  const targets = [
    ['ledger', '.claims-ledger'],
    ['display math', 'mjx-container[display="true"]'],
    ['display math', 'div.math'],
    ['code', 'div.highlight pre'],
    ['output', 'div.output pre, div.cell_output pre'],
    ['table', 'main table'],
  ];
  const label = (el) => {
    const sec = el.closest('section[id]');
    return (sec ? '#' + sec.id : '') + ' ' + (el.textContent || '').trim().slice(0, 60);
  };
  for (const [what, selector] of targets) {
    for (const el of document.querySelectorAll(selector)) {
      if (!el.offsetParent && el.tagName !== 'MJX-CONTAINER') continue;  // hidden
      const width = el.scrollWidth;
      let box = el, verdict = null;
      while (box && box !== document.documentElement) {
        const style = getComputedStyle(box);
        const narrower = box.clientWidth + 1 < width && box.clientWidth > 0;
        if (narrower && ['auto', 'scroll'].includes(style.overflowX)) { verdict = 'scrolls'; break; }
        if (narrower && ['hidden', 'clip'].includes(style.overflowX)) { verdict = 'clipped'; break; }
        if (box === main) break;
        box = box.parentElement;
      }
      if (verdict === 'scrolls' && box.offsetHeight - box.clientHeight < 3) {
        problems.push({what, where: label(el), problem: 'scrolls without a visible scrollbar',
                       content: Math.round(width), box: box.clientWidth});
      } else if (verdict === 'clipped') {
        problems.push({what, where: label(el), problem: 'clipped by a box that hides its overflow',
                       content: Math.round(width), box: box.clientWidth});
      } else if (verdict === null && el.getBoundingClientRect().right > mainRight + 2) {
        problems.push({what, where: label(el), problem: 'spills out of the main column',
                       content: Math.round(width), box: Math.round(main.clientWidth)});
      }
    }
  }
  for (const el of document.querySelectorAll('mjx-merror')) {  // TeX that MathJax could not typeset
    problems.push({what: 'math', where: label(el.closest('mjx-container') || el),
                   problem: 'MathJax error: ' + (el.getAttribute('data-mjx-error') || '?'), content: 0, box: 0});
  }
  return problems;
})()
"""

# The ledgers as a reader sees them: per ledger, its header, the number of rows, whether every row
# shows a bearing and a statement, and whether the verdict column is visible without scrolling.
LEDGER_CHECK_JS = r"""
(() => Array.from(document.querySelectorAll('table.claims-table')).map((t) => {
  const wrap = t.closest('.claims-ledger') || t.parentElement;
  const head = Array.from(t.querySelectorAll('thead th')).map((th) => th.textContent.trim());
  const rows = Array.from(t.querySelectorAll('tbody tr'));
  const last = t.querySelector('thead th:last-child');
  return {
    head,
    rows: rows.length,
    bearings: rows.filter((r) => r.querySelector('.bearing') && r.querySelector('.bearing').textContent.trim()).length,
    statements: rows.filter((r) => r.cells[0] && r.cells[0].textContent.trim().length > 10).length,
    verdictVisible: last ? last.getBoundingClientRect().right <= wrap.getBoundingClientRect().right + 1 : false,
    fits: wrap.scrollWidth <= wrap.clientWidth + 1,
  };
}))()
"""

# The report's scorecards and ledgers (book/reproduction.md) as a reader sees them: per table, its
# section ('scorecards' or 'ledgers'), its header, and whether the columns a reader scans for (a
# ledger's verdict and measured value, a scorecard's status and claims) end inside the visible part
# of the table's scroll box when it is not scrolled, and whether the whole table fits the box (no
# sideways scrolling at all). Returns [{section, head, rows, keyVisible, fits, where}].
REPORT_TABLES_JS = r"""
(() => {
  const key = {ledgers: ['verdict', 'measured'], scorecards: ['status', 'claims']};
  const out = [];
  for (const section of ['scorecards', 'ledgers']) {
    for (const t of document.querySelectorAll('section#' + section + ' table')) {
      const box = t.closest('.pst-scrollable-table-container') || t.parentElement;
      box.scrollLeft = 0;
      const right = box.getBoundingClientRect().right;
      const heads = Array.from(t.querySelectorAll('thead th'));
      const names = heads.map((th) => th.textContent.trim());
      const wanted = heads.filter((th, i) => key[section].includes(names[i]));
      const sec = t.closest('section[id]');
      out.push({section, head: names, rows: t.querySelectorAll('tbody tr').length,
                keyVisible: wanted.length === key[section].length
                  && wanted.every((th) => th.getBoundingClientRect().right <= right + 1),
                fits: box.scrollWidth <= box.clientWidth + 1 && t.getBoundingClientRect().right <= right + 1,
                where: sec ? sec.id : ''});
    }
  }
  return out;
})()
"""

# The search controls a reader sees: every visible search field or search button (the sidebar's
# field, the header's button on narrow screens). Returns [{what, x, y}].
SEARCH_BOXES_JS = r"""
(() => Array.from(document.querySelectorAll('.search-button-field, .search-button, form.bd-search input'))
  .filter((e) => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
                   return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; })
  .map((e) => ({what: e.className, x: Math.round(e.getBoundingClientRect().x), y: Math.round(e.getBoundingClientRect().y)})))()
"""

# Tables as a reader reads them: no word, id or number broken across two lines inside a cell.
# Every whitespace-separated token of every visible cell of every table in the main column (the
# HTML ledgers and the Markdown tables) is measured with a DOM Range: its client rects must all sit
# on one line (within a few pixels of the same top). A break right after a hyphen or a slash
# between two letters ("low-rank", "and/or") is a word boundary and allowed in prose; inside code
# (ids, values) nothing may break. Font-independent: it asks where the browser put each token.
# Returns [{table, ledger, token, lines, cell}] (ledger: the table is an HTML ledger), empty when fine.
BROKEN_TOKENS_JS = r"""
(() => {
  const problems = [];
  const main = document.querySelector('main') || document.body;
  const tables = Array.from(main.querySelectorAll('table')).filter((t) => t.offsetParent !== null);
  const lines = (range) => {
    const tops = [];
    for (const r of range.getClientRects()) {
      if (r.width < 0.5 || r.height < 0.5) continue;
      if (!tops.some((t) => Math.abs(t - r.top) < 3)) tops.push(r.top);
    }
    return tops.length;
  };
  tables.forEach((table, ti) => {
    for (const cell of table.querySelectorAll('th, td')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      let node;
      while ((node = walker.nextNode())) {
        const parent = node.parentElement;
        if (!parent || parent.closest('mjx-container, .MathJax, script, style')) continue;
        const inCode = !!parent.closest('code, kbd, samp, pre');
        const text = node.textContent;
        // the pieces that must each sit on one line: in code, every whitespace-free token; in
        // prose, words and numbers (letters, digits and '_' joined by '.', ',', ':' or an
        // apostrophe, a minus sign before a digit, an exponent such as 1e-3). A break at a
        // hyphen between words or after punctuation such as '|' or '(' splits no word.
        const tokenRe = inCode ? /\S+/g
          : /(?:(?<![\p{L}\p{N}])[-\u2212](?=\p{N}))?[\p{L}\p{N}_]+(?:[.,:'\u2019][\p{L}\p{N}_]+|(?<=\p{N}[eE])[-+\u2212]\p{N}+)*/gu;
        for (const m of text.matchAll(tokenRe)) {
          const pieces = [[m.index, m.index + m[0].length]];
          for (const [a, b] of pieces) {
            const range = document.createRange();
            range.setStart(node, a);
            range.setEnd(node, b);
            const n = lines(range);
            if (n > 1) {
              problems.push({table: ti, ledger: table.classList.contains('claims-table'),
                             token: text.slice(a, b), lines: n, cell: (cell.textContent || '').trim().slice(0, 50)});
            }
          }
        }
      }
    }
  });
  return problems;
})()
"""

# Contrast of what a reader must read, by WCAG 2: the text colour against the colour behind it
# (the nearest opaque background up the tree, semi-transparent ones composited; element opacity
# fades the text). Returns [{what, text, ratio, weight, color, background}] for the first elements
# of each kind (ledger ids, values, verdicts and headers, bearing badges, Markdown table cells and
# code, figure captions, the re-run box).
CONTRAST_JS = r"""
(() => {
  const canvas = document.createElement('canvas').getContext('2d');
  const rgba = (css) => {
    canvas.fillStyle = '#000'; canvas.fillStyle = css;
    const v = canvas.fillStyle;
    if (v.startsWith('#')) return [parseInt(v.slice(1, 3), 16), parseInt(v.slice(3, 5), 16), parseInt(v.slice(5, 7), 16), 1];
    const n = v.match(/[\d.]+/g).map(Number);
    return [n[0], n[1], n[2], n.length > 3 ? n[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];
    if (layers.length && layers[layers.length - 1][3] >= 1) bg = layers.pop();
    while (layers.length) bg = over(layers.pop(), bg);
    return bg;
  };
  const lum = (c) => {
    const ch = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const opacity = (el) => { let o = 1; for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; };
  const kinds = [
    ['ledger id', 'table.claims-table code.claim-id'],
    ['ledger value', 'table.claims-table td.claim-measured code'],
    ['ledger tolerance', 'table.claims-table td.claim-tolerance code'],
    ['ledger text', 'table.claims-table td.claim-text'],
    ['ledger source', 'table.claims-table .claim-source'],
    ['ledger header', 'table.claims-table th'],
    ['ledger verdict', 'table.claims-table td.verdict b'],
    ['ledger bearing', 'table.claims-table .bearing'],
    ['ledger summary', '.claims-summary'],
    ['report source', 'section#ledgers .ib-source, section#ledgers .ib-paper, section#scorecards .ib-source'],
    ['table cell', 'main table:not(.claims-table) td'],
    ['table header', 'main table:not(.claims-table) th'],
    ['table code', 'main table:not(.claims-table) code'],
    ['figure caption', 'figcaption .caption-text, figcaption p'],
    ['re-run box', 'div.rerun-box p'],
    ['re-run box code', 'div.rerun-box code'],
  ];
  const out = [];
  for (const [what, selector] of kinds) {
    const els = Array.from(document.querySelectorAll(selector)).filter((e) => e.offsetParent !== null && (e.textContent || '').trim()).slice(0, 40);
    for (const el of els) {
      const s = getComputedStyle(el);
      const bg = background(el);
      let fg = rgba(s.color);
      fg = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
      const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
      out.push({what, text: el.textContent.trim().slice(0, 30), ratio: Math.round(100 * (l1 + 0.05) / (l2 + 0.05)) / 100,
                weight: Number(s.fontWeight), color: s.color, background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')'});
    }
  }
  return out;
})()
"""

# Switch the page between the theme's light and dark modes (as its button does).
def set_theme_js(theme: str) -> str:
    return (f"(() => {{ document.documentElement.dataset.theme = '{theme}';"
            f" document.documentElement.dataset.mode = '{theme}'; return getComputedStyle(document.body).backgroundColor; }})()")

# Tables and ledgers wider than the column: each must carry the visible cue of book.js (its frame
# says so above it, and shows a shadow on the right edge while there is more to the right).
# Returns [{where, problem}], empty when fine.
SCROLL_CUE_JS = r"""
(() => {
  const out = [];
  for (const box of document.querySelectorAll('.pst-scrollable-table-container, .claims-ledger')) {
    if (box.offsetParent === null || box.scrollWidth <= box.clientWidth + 1) continue;
    const frame = box.parentElement;
    const where = (box.textContent || '').trim().slice(0, 50);
    if (!frame || !frame.classList.contains('ib-scroll-frame') || !frame.classList.contains('ib-scrolls')) {
      out.push({where, problem: 'scrolls sideways without the cue (no frame from book.js)'});
      continue;
    }
    const label = getComputedStyle(frame, '::before');
    if (label.display === 'none' || !label.content || label.content === 'none') {
      out.push({where, problem: 'the cue above it is not shown'});
    }
    const shadow = getComputedStyle(frame, '::after');
    if (box.scrollLeft + box.clientWidth < box.scrollWidth - 1 && Number(shadow.opacity) < 0.5) {
      out.push({where, problem: 'no shadow on the right edge while more columns are there'});
    }
  }
  return out;
})()
"""
