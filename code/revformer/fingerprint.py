"""Fingerprints of the package's own files: ``python -m revformer.fingerprint``.

Trained models are cached under a key that includes ``training_fingerprint()``,
the hash of every module that takes part in training a group (a test checks
that the list is complete), so a changed model, loss or training loop can never
be loaded from a cache written by the old code, while a changed question or
exercise checker retrains nothing. It hashes each module's program (its syntax
tree without docstrings), not its text: a comment, a docstring or a line wrapped
for the page changes no weight and retrains nothing. The book build re-executes every chapter
when ``source_fingerprint()``, the hash of all the package's files, changes.
Only the standard library is imported, so the build can ask for it cheaply.
"""
from __future__ import annotations

import ast
import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SUFFIXES = (".py", ".js", ".json")


def package_files() -> list[Path]:
    """Every source and data file of the package, in a fixed order."""
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts)


# The modules a worker imports to train a group: what decides the weights, losses and curves.
TRAINING_MODULES = ("__init__.py", "attention.py", "cache.py", "config.py", "data.py", "files.py",
                    "fingerprint.py", "generate.py", "model.py", "train.py", "worker.py")


def _digest(paths, program: bool = False) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        if program and path.suffix == ".py":  # the code, without its comments, docstrings and layout
            digest.update(_program(path.read_text(encoding="utf-8")).encode() + b"\0")
        else:
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _program(source: str) -> str:
    """``source``'s syntax tree without its docstrings, as text: what the module does, not how it reads."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def source_fingerprint() -> str:
    """SHA-256 over each file's path (relative to the package) and contents: all of them."""
    return _digest(package_files())


def training_fingerprint() -> str:
    """The same over the programs of the modules that train a group (``TRAINING_MODULES``)."""
    return _digest((PACKAGE / name for name in TRAINING_MODULES), program=True)


if __name__ == "__main__":
    print(source_fingerprint())
