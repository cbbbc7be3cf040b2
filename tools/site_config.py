"""The one reader of ``_config.yml`` and of the package's version, for every tool of the book.

``tools/book.py`` (the build, the setup cells, ``retarget``) and ``tools/translations.py``
(the Chinese edition) both read these; neither imports the other for them, so the
tools depend in one direction: ``book`` -> ``translations`` -> ``site_config``.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def config_text() -> str:
    return (ROOT / "_config.yml").read_text(encoding="utf-8")


def named() -> tuple[str, str]:
    """The repository URL and the site URL (with its final slash) of ``_config.yml``."""
    text = config_text()
    repo = re.search(r"^\s+url:\s*(\S+)\s*$", text, re.M)
    site = re.search(r"^\s+baseurl:\s*(\S+)\s*$", text, re.M)
    if not repo or not site:
        raise SystemExit("_config.yml must name repository.url and html.baseurl")
    return repo.group(1).rstrip("/"), site.group(1).rstrip("/") + "/"


def package_version() -> str:
    text = (ROOT / "code" / "revformer" / "__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)
