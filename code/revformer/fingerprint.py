"""A fingerprint of the package's own files: ``python -m revformer.fingerprint``.

Trained models are cached under a key that includes it, so a changed model,
loss or training loop can never be loaded from a cache written by the old
code; the Makefile re-executes the chapters when it changes. Only the
standard library is imported, so the Makefile can ask for it cheaply.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SUFFIXES = (".py", ".js", ".json")


def package_files() -> list[Path]:
    """Every source and data file of the package, in a fixed order."""
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts)


def source_fingerprint() -> str:
    """SHA-256 over each file's path (relative to the package) and contents."""
    digest = hashlib.sha256()
    for path in package_files():
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


if __name__ == "__main__":
    print(source_fingerprint())
