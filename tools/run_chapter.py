"""Run chapters top to bottom in a fresh kernel, as the book build does: ``python tools/run_chapter.py 08 [12 ...] [--seed 7]``.

Quicker than a whole ``make book`` while writing a chapter. It uses the book's
settings (the static build, no progress bars, the models' cache in
``_build/revformer-cache``), stops at the first cell that raises, and reports
any warning a cell printed (the book build fails on those). ``--out DIR``
keeps the executed notebooks.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(number: str, seed: int, out: Path | None, language: str = "en") -> bool:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    matches = sorted((ROOT / "book").glob(f"{number}_*.ipynb")) or sorted((ROOT / "book").glob(f"{number}.ipynb"))
    if not matches:
        print(f"no chapter {number!r} in book/")
        return False
    path = matches[0]
    nb = nbformat.read(path, as_version=4)
    os.environ.update(REVFORMER_STATIC_BUILD="1", REVFORMER_PROGRESS="0", REVFORMER_SEED=str(seed))
    os.environ.setdefault("REVFORMER_CACHE", str(ROOT / "_build" / "revformer-cache"))
    from revformer.i18n import startup_folder

    # the build's kernels draw every figure in every language (revformer.i18n.watch_figures)
    os.environ["IPYTHONDIR"] = str(startup_folder(ROOT / "_build" / "ipython"))
    os.environ["REVFORMER_LANGUAGE"] = language
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
        ok = True
    except CellExecutionError as error:
        print(f"{path.name} (seed {seed}): a cell failed\n{error}")
        ok = False
    warnings = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if o.get("name") == "stderr"]
    for text in warnings:
        print(f"{path.name}: a cell wrote to stderr (the build fails on warnings):\n{text[:2000]}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / path.name)
    print(f"{path.name} (seed {seed}): {'ran' if ok else 'FAILED'} in {time.perf_counter() - start:.0f} s")
    return ok and not warnings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="+", help="chapter numbers (08) or page names")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=None, help="keep the executed notebooks here")
    parser.add_argument("--language", default="en", choices=("en", "zh_CN"),
                        help="the kernel's language (zh_CN: sentences and figures in Chinese, from the catalogues)")
    args = parser.parse_args(argv)
    results = [run(c, args.seed, args.out, args.language) for c in args.chapters]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
