"""What the tests know about the book: read from the repository's own files."""
from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
EXERCISE_CHAPTERS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 19, 20)
FIGURE_CHAPTERS = (8, 10, 11, 12)  # BOOK_MAP asks these for figures


def _load_book_tool():
    """``tools/book.py``, the script that derives every place naming the repository and site."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_tool", ROOT / "tools" / "book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


book_tool = _load_book_tool()


def toc_files() -> list[str]:
    files = [TOC["root"]]
    for part in TOC.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    files += [c["file"] for c in TOC.get("chapters", [])]
    return files


def chapter_files() -> list[str]:
    """The toc entries that are numbered chapters, in toc order."""
    return [f for f in toc_files() if re.match(r"book/\d\d_", f)]


def chapter_number(name: str) -> int:
    return int(Path(name).name[:2])


def load_notebook(name: str) -> dict:
    return json.loads((ROOT / f"{name}.ipynb").read_text(encoding="utf-8"))


def source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def python_of(cell) -> str:
    """A code cell's source without IPython's ! and % lines, for ast."""
    return "\n".join(line for line in source(cell).splitlines() if not line.lstrip().startswith(("!", "%")))


def revformer_public_names() -> set[str]:
    """Every public function, class and constant defined by a revformer module."""
    import revformer

    names = set()
    for info in pkgutil.walk_packages(revformer.__path__, "revformer."):
        if info.name.endswith("__main__"):  # importing it would run the command line
            continue
        if info.name.startswith("revformer.exercises.solutions"):  # the reader writes these names
            continue
        module = importlib.import_module(info.name)
        tree = ast.parse(Path(module.__file__).read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


EDITIONS = ("en", "zh_CN")  # the English site, and its Chinese edition in the folder zh_CN/


def address(name: str, edition: str) -> str:
    """A page's address in the served site: ``book/04_one_head``, or ``zh_CN/book/04_one_head``."""
    return name if edition == "en" else f"{edition}/{name}"


def page(name: str, edition: str = "en") -> Path:
    return (HTML if edition == "en" else HTML / edition) / f"{name}.html"
