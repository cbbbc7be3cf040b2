"""Local Sphinx extension of the book.

Links to the published site. A chapter is a page of this site and a Colab
notebook at once, and a relative link to another chapter or to a download
is dead in Colab. So the notebooks link to the published site
(``html_baseurl``, ``_config.yml``'s ``html.baseurl``), which works in Colab
and in a downloaded notebook; this extension turns every such link into a
relative one when it builds the site, so the site works offline and from
``file://``, and fails the build (a warning, with ``-W``) when a link names a
page, a file or an anchor the site does not have.

Sphinx 7.4 registers some inline scripts twice (once with the file name None,
once with ''), so every page declares, for example, ``THEBE_JS_URL`` twice
and a browser reports the second declaration as an error. Sphinx 8 fixed
this upstream; until Jupyter Book 1 moves to it, this handler keeps the first
of each identical script on every page.

The book runs code in Colab, Binder or a local Jupyter, never through Thebe
(``launch_buttons.thebe`` is false), so the Thebe loader and its
configuration, which name a CDN, are left out of the pages altogether.

Hidden code cells (the ``hide-input`` and ``hide-output`` tags) open with a
``<summary>`` that myst-nb labels ``aria-label="Toggle hidden content"``,
while the reader sees "Show code cell source": a screen reader would say one
thing and a voice-control user would have to say the other (WCAG 2.5.3,
axe-core's ``label-content-name-mismatch``). This extension writes the
summary without that label, so its name is the text it shows ("Show code
cell source", "Hide code cell source" once open).

``revformer.source`` listings are Markdown outputs whose fence the theme
highlights with its accessible light and dark styles;
``_static/revformer-book.css`` sets their head in the theme's muted text
colour, which keeps its contrast in both modes.
"""


import html
import posixpath
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _is_thebe(script):
    filename = getattr(script, "filename", None) or ""
    body = (getattr(script, "attributes", {}) or {}).get("body", "")
    return "thebe" in filename or "THEBE_JS_URL" in body


def _script_identity(script):
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", None) or "",
            tuple(sorted((k, str(v)) for k, v in attributes.items())))


def dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        identity = _script_identity(script)
        if identity in seen or _is_thebe(script):
            continue
        seen.add(identity)
        unique.append(script)
    scripts[:] = unique


def default_light_mode(app, config):
    """pydata-sphinx-theme writes ``dataset.mode = stored || ""`` and then logs a
    console error for the empty mode on a reader's first visit; give it a valid
    default instead."""
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "light")
    config.html_context = context


_LINK = re.compile(r'((?:href|src)=")([^"]*)(")')


def relative_site_links(app, pagename, templatename, context, doctree):
    """Rewrite ``href="<html_baseurl>/X"`` (and ``src=``) in the page body into a link relative to the page."""
    base = (app.config.html_baseurl or "").rstrip("/") + "/"
    body = context.get("body")
    if base == "/" or not body:
        return
    here = posixpath.dirname(app.builder.get_target_uri(pagename))
    seen = app.__dict__.setdefault("revformer_site_links", [])  # this build's pages only

    def rewrite(match):
        url = html.unescape(match.group(2))
        if not url.startswith(base):
            return match.group(0)
        target, _, fragment = url[len(base):].partition("#")
        seen.append((pagename, target, fragment))
        relative = posixpath.relpath(target or "index.html", here or ".")
        return match.group(1) + html.escape(relative + (f"#{fragment}" if fragment else "")) + match.group(3)

    context["body"] = _LINK.sub(rewrite, body)


def check_site_links(app, exception):
    """Every rewritten link names a file the build wrote, and an anchor that file has."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    texts = {}
    for page, target, fragment in app.__dict__.get("revformer_site_links", []):
        path = out / (target or "index.html")
        if not path.is_file():
            logger.warning(f"{page}: link to {target!r} on the site, which the build did not write")
            continue
        if fragment:
            text = texts.setdefault(path, path.read_text(encoding="utf-8", errors="replace"))
            if f'id="{fragment}"' not in text:
                logger.warning(f"{page}: link to {target}#{fragment}, an anchor that page does not have")


def visit_hidden_cell(self, node):
    """myst-nb's ``visit_HideCellInput`` without ``aria-label`` on the summary: its name is its text."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n')
    self.body.append("<summary>\n")
    self.body.append(f'<p class="collapsed admonition-title">{html.escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{html.escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def depart_hidden_cell(self, node):
    self.body.append("</details>\n")


STATIC = Path(__file__).parent / "_static"


def add_static(app):
    app.config.html_static_path.append(str(STATIC))


def setup(app):
    from myst_nb.sphinx_ import HideCodeCellNode

    app.setup_extension("myst_nb")  # registers HideCodeCellNode first, so the visitor below replaces its own
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    app.connect("builder-inited", add_static)
    app.add_css_file("revformer-book.css")
    app.connect("config-inited", default_light_mode)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("html-page-context", relative_site_links, priority=950)
    app.connect("build-finished", check_site_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
