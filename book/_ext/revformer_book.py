"""Local Sphinx extension of the book.

Sphinx 7.4 registers some inline scripts twice (once with the file name None,
once with ''), so every page declares, for example, ``THEBE_JS_URL`` twice
and a browser reports the second declaration as an error. Sphinx 8 fixed
this upstream; until Jupyter Book 1 moves to it, this handler keeps the first
of each identical script on every page.

The book runs code in Colab, Binder or a local Jupyter, never through Thebe
(``launch_buttons.thebe`` is false), so the Thebe loader and its
configuration, which name a CDN, are left out of the pages altogether.
"""


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


def setup(app):
    app.connect("config-inited", default_light_mode)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
