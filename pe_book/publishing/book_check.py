"""Open every page of the built book in headless Chromium and check it.

``pe-book check-book [--html book/_build/html] [--screenshots book/_build/screenshots]``
(:mod:`pe_book.commands.check_book`, ``make check-book``)

The HTML is served on 127.0.0.1 (``http.server`` in a thread) and every page is loaded by
Chromium (Debian packages ``chromium`` and ``chromium-driver``) through selenium. For each page:

* **figures**: every ``<img>`` has loaded (``naturalWidth > 0``) and every ``<figure>`` holds an
  image or a table;
* **mathematics**: where the page has math (Sphinx's ``.math`` elements), MathJax has rendered
  each of them (an ``mjx-container`` inside, no ``mjx-merror``);
* **links**: every local ``href``/``src`` resolves to a file of the build, and every ``#anchor``
  to an element of its target page;
* **offline**: the browser requested nothing but the local server (``data:``, ``blob:`` and
  the browser's own ``chrome:`` resources aside);
* **console**: no JavaScript error (the browser's own request for ``/favicon.ico`` aside);
* **text** (:func:`text_problems`, on the page's text without code): no raw MyST markup (a
  ``{glue:text}`` that was not rendered), no ``nan``, no Python reprs (``True``, ``None``,
  ``'quoted'`` values, ``np.float64(...)``, ``[0, 1]``, unrounded floats such as
  ``702.664361`` or ``1.281e+04``);
* **width**: no table, figure or image wider than the text column (in a :data:`WIDTH` px wide
  window; ``book/_static/tables.css`` sets the tables' type and cells), and no image shown below
  :data:`MIN_SCALE` of its drawn width (its type would be too small to read);
* **intro**: the root page shows a table (the verdicts) on its first screen.

A full-page screenshot of each page goes to the screenshots folder, with ``report.json``. Exit
status 1 if any page fails any check above. Environment: ``CHROMIUM`` and
``CHROMEDRIVER`` override the paths of the browser and its driver.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_HTML = ROOT / "book" / "_build" / "html"
DEFAULT_SHOTS = ROOT / "book" / "_build" / "screenshots"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-extensions",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--hide-scrollbars",
]
WIDTH = 1280
MAX_HEIGHT = 12000  # screenshots are cut off below this many pixels
SKIP_DIRS = ("_static", "_sources", "_images")
FIRST_SCREEN = 900  # px: what a reader sees before scrolling
#: Smallest share of its drawn width an image may be shown at: matplotlib draws at 100 dpi, so
#: below 0.6 of its size a 10-point label is under 8.3 px tall (a figure wider than about 11 inches).
MIN_SCALE = 0.6

#: What must not show in a page's text (code aside), each with what it means.
RAW_MARKUP = "raw MyST markup"
TEXT_RULES = [
    (re.compile(r"\{(?:glue|numref|ref|cite|doc|eq|math)(?::\w+)?\}`?"), RAW_MARKUP),
    # nan as a value prints as nan, NaN or NAN; case-sensitive, so that a name (the author Nan Yang) passes
    (re.compile(r"(?<![\w.])(?:nan|NaN|NAN)(?!\w)"), "nan (a value not computed: say why, e.g. 'not run')"),
    (re.compile(r"(?<![\w.])(?:True|False|None)(?!\w)"), "Python repr (True/False/None)"),
    (re.compile(r"\w\(s\)"), "unresolved plural, e.g. seed(s)"),
    (re.compile(r"(?:^|[\s(\[{,:=])'[\w.+/-]+'(?=[\s)\]},:;.]|$)"), "Python repr (a quoted string)"),
    (re.compile(r"\bnp\.\w+\(|\b(?:array|tensor)\("), "Python repr (numpy/torch)"),
    (re.compile(r"(?<![\w.])\[\d+(?:, \d+)+\]"), "Python repr (a list)"),
    (re.compile(r"(?<![\w.,])\d+\.\d{6,}(?![\w.])"), "unrounded float"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]\d+(?![\w.])"), "float in e-notation"),
]


@dataclass
class PageReport:
    page: str
    problems: list[str] = field(default_factory=list)
    images: int = 0
    math: int = 0
    links: int = 0
    screenshot: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


# ----------------------------------------------------------------------------- static parsing


class _Collector(HTMLParser):
    """Ids, local references and the presence of math in one HTML file."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str]] = []  # (tag.attr, value)
        self.has_math = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if "math" in (attrs.get("class") or "").split():
            self.has_math = True
        for key in ("href", "src"):
            if attrs.get(key) and tag in ("a", "link", "script", "img", "iframe", "source"):
                self.refs.append((f"{tag}.{key}", attrs[key]))


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(encoding="utf8", errors="replace"))
    return collector


def pages(html_dir: Path) -> list[Path]:
    return sorted(
        p for p in html_dir.rglob("*.html") if not any(part in SKIP_DIRS for part in p.relative_to(html_dir).parts)
    )


def check_links(html_dir: Path, page: Path) -> tuple[int, list[str]]:
    """Local references of ``page`` that do not resolve (files, and anchors in HTML files)."""
    problems, count = [], 0
    base = "http://book.invalid/" + page.relative_to(html_dir).as_posix()
    for where, value in _parse(page).refs:
        parts = urlsplit(value)
        if parts.scheme in ("http", "https", "mailto", "javascript", "data", "tel") or value.startswith("//"):
            continue
        count += 1
        target = urlsplit(urljoin(base, value))
        rel = unquote(target.path).lstrip("/")
        path = html_dir / rel
        if rel == "" or path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            problems.append(f"broken {where} {value!r}: {path.relative_to(html_dir)} does not exist")
            continue
        fragment = unquote(target.fragment)
        if fragment and path.suffix == ".html" and fragment not in _parse(path).ids:
            problems.append(f"broken anchor {where} {value!r}: no id {fragment!r} in {path.relative_to(html_dir)}")
    return count, problems


def text_problems(text: str, context: int = 40) -> list[str]:
    """What :data:`TEXT_RULES` find in a page's ``text`` (its code removed), each with its context."""
    problems = []
    for pattern, what in TEXT_RULES:
        for match in list(pattern.finditer(text))[:3]:
            start, end = max(0, match.start() - context), min(len(text), match.end() + context)
            snippet = " ".join(text[start:end].split())
            problems.append(f"{what}: ...{snippet}...")
    return problems


def page_findings(text: str, wide: list[str], shrunk: list[str] = ()) -> list[str]:
    """The problems that a page's ``text`` (every :data:`TEXT_RULES` finding), its elements
    wider than the text column (``wide``) and its images shown below :data:`MIN_SCALE` of their
    size (``shrunk``) show; each fails the page."""
    return (text_problems(text) + [f"wider than the text column: {w}" for w in wide]
            + [f"figure too small to read (draw it narrower, e.g. in more rows): {s}" for s in shrunk])


# ----------------------------------------------------------------------------- serving


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on stderr
        pass


class serve:
    """Serve ``directory`` on 127.0.0.1 (a free port) while the ``with`` block runs."""

    def __init__(self, directory: Path):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.url

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


# ----------------------------------------------------------------------------- browser


#: The browser and its driver: the environment variable that names each, else the first of its
#: names on PATH (Debian's chromium and chromium-driver; the Chrome of GitHub's runners).
BROWSER = {"CHROMIUM": ("chromium", "chromium-browser", "google-chrome"), "CHROMEDRIVER": ("chromedriver",)}


def browser_paths() -> dict[str, str | None]:
    """``{"CHROMIUM": path, "CHROMEDRIVER": path}``, None for one not found (:data:`BROWSER`)."""
    return {env: os.environ.get(env) or next((p for p in map(shutil.which, names) if p), None)
            for env, names in BROWSER.items()}


def _which(env: str) -> str:
    found = browser_paths()[env]
    if not found:
        raise SystemExit(f"book_check: {BROWSER[env][0]} not found; install it (make chromium) or set {env}")
    return found


def start_browser(profile_dir: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _which("CHROMIUM")
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile_dir}", f"--window-size={WIDTH},900"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service(executable_path=_which("CHROMEDRIVER"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    return driver


_WAIT_MATHJAX = """
const done = arguments[arguments.length - 1];
const deadline = Date.now() + 30000;
(function poll() {
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) {
    mj.startup.promise.then(() => done("ok"), (e) => done("error: " + e));
  } else if (Date.now() > deadline) {
    done("MathJax did not start within 30 s");
  } else {
    setTimeout(poll, 100);
  }
})();
"""

_WAIT_IMAGES = """
const done = arguments[arguments.length - 1];
const images = Array.from(document.images);
images.forEach((img) => { img.loading = "eager"; });
Promise.all(images.map((img) => img.decode().then(() => null, () => null))).then(() =>
  done(images.map((img) => [img.getAttribute("src"), img.complete, img.naturalWidth])));
"""

_INSPECT = """
const math = Array.from(document.querySelectorAll(".math"));
return {
  math: math.length,
  unrendered: math.filter((el) => !el.querySelector("mjx-container")).map((el) => el.textContent.slice(0, 60)),
  containers: document.querySelectorAll("mjx-container").length,
  merrors: Array.from(document.querySelectorAll("mjx-merror, [data-mjx-error]")).map((el) => el.textContent.slice(0, 60)),
  empty_figures: Array.from(document.querySelectorAll("figure")).filter(
    (f) => !f.querySelector("img, table, svg")).map((f) => f.id || f.className),
  height: Math.max(document.body.scrollHeight, document.documentElement.scrollHeight),
};
"""

# The article's text without code (hidden cells, code blocks, inline literals), the tables,
# figures and images wider than its column, and the images shown below arguments[0] of their size.
_READ = """
const article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
const copy = article.cloneNode(true);
copy.querySelectorAll(".cell_input, .highlight, .highlight-python, .highlight-bash, .highlight-default, code, "
  + "script, style, .headerlink, .toggle-details__summary, button, .tag_hide-input > .cell_input").forEach(
  (el) => { if (!el.closest || !el.closest(".cell_output")) el.remove(); });
copy.querySelectorAll(".cell_output .highlight").forEach((el) => el.remove());
// the text column: the article's content box (its padding is not text), and what passes its right
// edge is cut off by the scrolling output box that holds it, even where it fits the article's width
const box = article.getBoundingClientRect(), pad = getComputedStyle(article);
const column = {left: box.left + parseFloat(pad.paddingLeft), right: box.right - parseFloat(pad.paddingRight)};
const wide = [];
article.querySelectorAll("table, figure, img, .cell_output > .output").forEach((el) => {
  const rect = el.getBoundingClientRect(), width = Math.max(el.scrollWidth, rect.width);
  if (rect.left + width > column.right + 2) {
    const caption = el.querySelector && el.querySelector("caption, figcaption");
    wide.push(`${el.tagName.toLowerCase()} ${Math.round(width)} px wide, ${Math.round(rect.left + width - column.right)} px `
      + `past the ${Math.round(column.right - column.left)} px text column`
      + (caption ? `: ${caption.textContent.trim().slice(0, 60)}` : (el.id ? ` #${el.id}` : "")));
  }
});
const shrunk = [];
article.querySelectorAll("img").forEach((img) => {
  const shown = img.getBoundingClientRect().width;
  if (img.naturalWidth && shown && shown < arguments[0] * img.naturalWidth) {
    shrunk.push(`${(img.getAttribute("alt") || img.getAttribute("src")).slice(0, 80)}: shown at `
      + `${(shown / img.naturalWidth).toFixed(2)} of its drawn width`);
  }
});
const tables = Array.from(article.querySelectorAll("table"));
return {text: copy.innerText || copy.textContent, wide: wide, shrunk: shrunk,
        first_table: tables.length ? tables[0].getBoundingClientRect().top + window.scrollY : null};
"""


def _requests(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def check_page(driver, server: str, html_dir: Path, page: Path, shots: Path) -> PageReport:
    rel = page.relative_to(html_dir).as_posix()
    report = PageReport(rel)
    report.links, report.problems = check_links(html_dir, page)
    driver.get_log("performance"), driver.get_log("browser")  # drop what the previous page left
    driver.set_window_size(WIDTH, 900)
    driver.get(server + rel)
    if _parse(page).has_math:
        status = driver.execute_async_script(_WAIT_MATHJAX)
        if status != "ok":
            report.problems.append(f"MathJax: {status}")
    images = driver.execute_async_script(_WAIT_IMAGES)
    report.images = len(images)
    for src, complete, width in images:
        if not complete or not width:
            report.problems.append(f"image not loaded: {src}")
    info = driver.execute_script(_INSPECT)
    report.math = info["math"]
    if _parse(page).has_math and not info["containers"]:
        report.problems.append("page has math but no mjx-container")
    for text in info["unrendered"]:
        report.problems.append(f"math not rendered: {text!r}")
    for text in info["merrors"]:
        report.problems.append(f"MathJax error: {text!r}")
    for name in info["empty_figures"]:
        report.problems.append(f"figure without image or table: {name!r}")
    read = driver.execute_script(_READ, MIN_SCALE)
    report.problems += page_findings(read["text"], read["wide"], read["shrunk"])
    if rel == "index.html" and (read["first_table"] is None or read["first_table"] > FIRST_SCREEN):
        report.problems.append(f"intro: no table on the first {FIRST_SCREEN} px (the verdicts come first)")
    time.sleep(0.2)  # let late requests (fonts, icons) show up in the log
    for url in _requests(driver):
        if not (url.startswith(server) or url.startswith(("data:", "blob:", "about:", "chrome:"))):
            report.problems.append(f"request outside the local server: {url}")
    for entry in driver.get_log("browser"):
        # the browser asks for /favicon.ico by itself; the book has no favicon
        if entry.get("level") == "SEVERE" and "/favicon.ico " not in entry.get("message", ""):
            report.problems.append(f"console: {entry.get('message', '')[:200]}")
    height = min(int(info["height"]), MAX_HEIGHT)
    driver.set_window_size(WIDTH, max(height, 900))
    shot = shots / (rel.removesuffix(".html").replace("/", "__") + ".png")
    driver.save_screenshot(str(shot))
    report.screenshot = shot.relative_to(shots.parent).as_posix() if shot.is_relative_to(shots.parent) else str(shot)
    return report


def check_book(html_dir: Path = DEFAULT_HTML, shots: Path = DEFAULT_SHOTS) -> list[PageReport]:
    html_dir = Path(html_dir).resolve()
    if not (html_dir / "index.html").is_file():
        raise SystemExit(f"book_check: {html_dir}/index.html not found; build the book first (make book)")
    shots = Path(shots).resolve()
    if shots.exists():
        shutil.rmtree(shots)
    shots.mkdir(parents=True)
    _parse.cache_clear()
    reports = []
    with tempfile.TemporaryDirectory(prefix="pe-book-chromium-") as profile, serve(html_dir) as server:
        driver = start_browser(profile)
        try:
            for page in pages(html_dir):
                reports.append(check_page(driver, server, html_dir, page, shots))
        finally:
            driver.quit()
    (shots / "report.json").write_text(
        json.dumps([{**r.__dict__, "ok": r.ok} for r in reports], indent=1), encoding="utf8"
    )
    return reports
