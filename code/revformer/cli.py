"""Command line.

``python -m revformer reproduce --out DIR [--device auto|cpu|cuda] [--quiet]``
trains (or loads) the three groups and writes the eight result files;
``python -m revformer bench [--rounds N] [--book] [--out FILE]`` runs the
speed benchmark (see ``revformer.bench``).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="revformer", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    rep = commands.add_parser("reproduce", help="train the three groups and write the eight result files")
    rep.add_argument("--out", required=True, help="folder for the result files")
    rep.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    rep.add_argument("--cache", default=None,
                     help="folder of cached trained models (default: $REVFORMER_CACHE or ~/.cache/revformer)")
    rep.add_argument("--quiet", action="store_true", help="no progress bars and no summary")
    commands.add_parser("bench", help="the speed benchmark (python -m revformer bench --help)", add_help=False)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from .bench import main as bench

        return bench(argv[1:])
    args = build_parser().parse_args(argv)
    from .artifacts import reproduce  # torch is imported only when a command needs it

    try:
        exp = reproduce(args.out, device=args.device, cache_dir=args.cache,
                        progress=False if args.quiet else None)
    except ValueError as error:
        print(f"revformer: {error}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"budget: {exp.budget.reason}")
        for row in exp.ablation():
            source = "cache" if exp.run(row["group"]).from_cache else f"{row['train_seconds']:.1f} s"
            print(f"{row['group']:>10}: val loss {row['val_loss']:.6f}, digits "
                  f"{row['digit_accuracy']:.2%}, sequences {row['sequence_accuracy']:.2%} ({source})")
        print(f"wrote 8 files to {args.out}")
    return 0


# glibc's mallopt settings (malloc.h): the size from which a block is mapped
# from the system on its own, and how much free memory at the top of the
# heap is kept rather than handed back. 32 MiB is the largest threshold
# glibc accepts on 64-bit systems.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 1024 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Let freed blocks serve later allocations instead of going back to the system.

    Each batch allocates the same tensors again, from a few hundred KiB to
    a few MiB (a ``[512,14,64]`` activation is 1.8 MiB). By default glibc
    maps every block over 128 KiB from the system on its own and unmaps it
    when freed, or hands free memory at the top of its heap back, so most
    new tensors start on fresh pages: the kernel zeroes and maps each 4 KiB
    page on first touch (here 170,000 to 260,000 page faults a run, against
    76,000 with these settings, most of those from loading PyTorch). Kept
    in the heap, a freed block is reused at once, often still in the cache.
    The numbers computed do not change, only where the memory comes from.

    For this process and the workers forked from it, which end when the run
    does; the book's kernels keep the default. Returns whether both settings
    took (only with glibc, so on Linux; elsewhere nothing changes).
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except AttributeError:  # a C library without mallopt (musl)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


def command() -> None:
    """The ``revformer`` program (and ``python -m revformer``): ``main``, then exit.

    Python's cyclic garbage collector is kept off PyTorch's objects, the
    hundred thousand and more that importing it creates: off while they are
    made (collections that would free nothing), then frozen (``gc.freeze``)
    so that later collections skip them. Together about half a second of a
    run, most of it while the other cores wait.

    Once ``main`` has returned, every file is written and closed, so the
    process ends at once (``os._exit`` after flushing its two streams)
    instead of tearing down each module and tensor first, which the system
    does anyway: another tenth of a second. An error still leaves the usual
    way, with its traceback.

    Freed memory is kept for reuse (``keep_freed_memory``): measured here,
    0.2 s less CPU and 0.1 s less time over a run (medians of four).
    """
    if len(sys.argv) > 1 and sys.argv[1] in ("reproduce", "bench"):
        keep_freed_memory()
        gc.disable()
        import torch  # noqa: F401

        gc.freeze()
        gc.enable()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    command()
