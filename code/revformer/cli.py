"""Command line.

``python -m revformer reproduce --out DIR [--device auto|cpu|cuda] [--seed N] [--quiet]``
trains (or loads) the three groups and writes the eight result files;
``python -m revformer bench [--rounds N] [--book] [--out FILE]`` runs the
speed benchmark (see ``revformer.bench``);
``python -m revformer web --out DIR [--cache DIR]`` exports the cached models'
weights and the JavaScript model for the browser (see ``revformer.web``);
``python -m revformer questions export --format gift|moodle-xml|qti|csv --seed N`` writes the
graded questions with their key for a learning platform (see ``revformer.exports``).
"""
from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="revformer", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    rep = commands.add_parser("reproduce", help="train the three groups and write the eight result files")
    rep.add_argument("--out", required=True, help="folder for the result files")
    rep.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    rep.add_argument("--cache", default=None,
                     help="folder of cached trained models (default: $REVFORMER_CACHE or ~/.cache/revformer)")
    rep.add_argument("--seed", type=int, default=None,
                     help="seed of the models' initial weights (default: $REVFORMER_SEED, else 42)")
    rep.add_argument("--quiet", action="store_true", help="no progress bars and no summary")
    web = commands.add_parser("web", help="export the trained weights and the JavaScript model for the browser")
    web.add_argument("--out", required=True, help="folder for revformer-weights.js and revformer-model.js")
    web.add_argument("--cache", default=None,
                     help="folder of cached trained models (default: $REVFORMER_CACHE or ~/.cache/revformer)")
    sweep = commands.add_parser("sweep", help="every group for several seeds: seeds.csv and learning_curves.csv")
    sweep.add_argument("--out", required=True, help="folder for the two files")
    sweep.add_argument("--seeds", default=None,
                       help="seeds separated by commas (default: the build's seed, then 0, 1, 2, 3)")
    sweep.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    sweep.add_argument("--cache", default=None, help="folder of cached trained models")
    sweep.add_argument("--quiet", action="store_true", help="no progress bars and no summary")
    commands.add_parser("bench", help="the speed benchmark (python -m revformer bench --help)", add_help=False)
    questions = commands.add_parser("questions", help="the graded questions for a learning platform")
    action = questions.add_subparsers(dest="action", required=True)
    export = action.add_parser("export", help="write the graded questions with their key in a platform's format")
    export.add_argument("--format", required=True, choices=["gift", "moodle-xml", "qti", "csv"], dest="fmt")
    export.add_argument("--seed", type=int, required=True,
                        help="the seed the course's book was built with (its answers that come from the run)")
    export.add_argument("--answers", default="_build/graded-answers.json",
                        help="the build's record of its pages' answers (default: _build/graded-answers.json)")
    export.add_argument("--language", default="en", choices=["en", "zh_CN"])
    export.add_argument("--out", default=None,
                        help="the file to write (default: revformer-questions-SEED-LANGUAGE and the format's suffix)")
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from .bench import main as bench

        return bench(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "web":
        return _web(args)
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "questions":
        return _questions(args)
    from .artifacts import reproduce  # torch is imported only when a command needs it

    try:
        exp = reproduce(args.out, device=args.device, cache_dir=args.cache,
                        progress=False if args.quiet else None, seed=args.seed)
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


def _web(args) -> int:
    from .web import export_size, main as web

    try:
        written = web(args.out, cache_dir=args.cache)
    except ValueError as error:
        print(f"revformer: {error}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(written)} to {args.out} ({export_size(args.out):,} bytes)")
    return 0


def _sweep(args) -> int:
    from .sweep import run_sweep

    try:
        rows, _ = run_sweep(args.out, seeds=args.seeds, device=args.device, cache_dir=args.cache,
                            progress=False if args.quiet else None)
    except ValueError as error:
        print(f"revformer: {error}", file=sys.stderr)
        return 2
    if not args.quiet:
        for row in rows:
            print(f"{row['group']:>10} seed {row['seed']:>4}: val loss {row['val_loss']:.6f}, sequences "
                  f"{row['sequence_accuracy']:.2%}, first perfect step {row['first_perfect_step']}")
        print(f"wrote seeds.csv and learning_curves.csv to {args.out}")
    return 0


def _questions(args) -> int:
    from .exports import SUFFIXES, read_answers, write

    out = args.out or f"revformer-questions-{args.seed}-{args.language}{SUFFIXES[args.fmt]}"
    try:
        written = write(args.fmt, out, args.language, read_answers(args.answers, args.seed))
    except ValueError as error:
        print(f"revformer: {error}", file=sys.stderr)
        return 2
    print(f"wrote the graded questions ({args.fmt}, {args.language}, seed {args.seed}) to {written}")
    return 0


def command() -> None:
    """The ``revformer`` program (and ``python -m revformer``)."""
    sys.exit(main())


if __name__ == "__main__":
    command()
