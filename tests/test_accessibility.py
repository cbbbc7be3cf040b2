"""Every built page of the book passes axe-core's WCAG 2 A and AA rules, in light and in dark mode.

axe-core (Deque's accessibility engine) is read from disk, where the Makefile
installs it (``make test``: ``npm install --prefix .venv/axe axe-core@VERSION``),
and injected into each page with Playwright: the test needs no network. It
checks the page's own content (``article.bd-article``: the text, the code
cells and their outputs, the source listings), not the theme's navigation,
and fails on every serious or critical violation, naming the page, the mode,
the rule and a few of the elements.

Besides the ``wcag2a`` and ``wcag2aa`` rules it runs
``label-content-name-mismatch`` (WCAG 2.5.3, tagged experimental in axe): the
hidden-code toggles say "Show code cell source", and their accessible name
must say so too (``book/_ext``).
"""
import functools
import http.server
import json
import os
import re
import threading
from pathlib import Path

import pytest

from book_facts import HTML, ROOT, toc_files

pytestmark = [pytest.mark.book, pytest.mark.browser]

AXE = Path(os.environ.get("AXE_CORE_JS") or ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js")
CONTENT = "article.bd-article"  # the page's content, without the theme's navigation around it
MODES = ("light", "dark")
SEVERE = ("serious", "critical")
OPTIONS = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa"]},
    "rules": {"label-content-name-mismatch": {"enabled": True}},
    "resultTypes": ["violations"],
}
SHOWN_NODES = 4  # the targets named for each violation


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    if not (HTML / "index.html").exists():
        pytest.fail("no built book in _build/html: run `make book` first (`make test` does)")
    pinned = re.search(r"^AXE_VERSION := (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed ({AXE}): `make test` installs it "
                    f"(npm install --no-save --prefix .venv/axe axe-core@{pinned})")
    installed = json.loads((AXE.parent / "package.json").read_text())["version"]
    if installed != pinned and not os.environ.get("AXE_CORE_JS"):
        pytest.fail(f"{AXE} is axe-core {installed}, the Makefile pins {pinned}: run `make test` to install it")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _violations(browser, site, name, mode):
    """axe's serious and critical violations in the content of page ``name`` shown in ``mode``."""
    context = browser.new_context()
    # what the theme's light/dark switch stores: the page's first script reads it before it paints
    context.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    tab = context.new_page()
    try:
        # the network is cut: a page may only load the site's own files
        tab.route("**/*", lambda r: r.continue_() if r.request.url.startswith(site) else r.abort())
        tab.goto(f"{site}/{name}.html", wait_until="load")
        if tab.locator(".math").count():
            tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                                  " && document.querySelectorAll('mjx-container').length > 0", timeout=20000)
        tab.wait_for_timeout(200)
        assert tab.evaluate("document.documentElement.dataset.theme") == mode, \
            f"{name}: the page did not switch to {mode} mode (how does the theme store its mode now?)"
        assert tab.locator(CONTENT).count() == 1, f"{name}: no {CONTENT} (the page's content) to check"
        tab.add_script_tag(path=str(AXE))
        violations = tab.evaluate("([scope, options]) => axe.run({include: [[scope]]}, options)"
                                  ".then(result => result.violations)", [CONTENT, OPTIONS])
    finally:
        context.close()
    return [v for v in violations if v["impact"] in SEVERE]


def _report(name, mode, violation):
    nodes = violation["nodes"]
    targets = "; ".join(" ".join(node["target"]) for node in nodes[:SHOWN_NODES])
    more = f" and {len(nodes) - SHOWN_NODES} more" if len(nodes) > SHOWN_NODES else ""
    why = " ".join(nodes[0].get("failureSummary", "").split()) if nodes else ""
    return (f"{name} ({mode}): {violation['id']} ({violation['impact']}, {len(nodes)} nodes): "
            f"{violation['help']}\n    at {targets}{more}\n    first: {why}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", toc_files())
def test_page_content_passes_axe(browser, site, name, mode):
    assert (HTML / f"{name}.html").is_file(), f"{name}.html was not built"
    found = _violations(browser, site, name, mode)
    if found:
        pytest.fail("axe-core (WCAG 2 A/AA) finds, in the page's content:\n"
                    + "\n".join(_report(name, mode, v) for v in found), pytrace=False)
