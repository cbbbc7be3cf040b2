"""A worker process: train one group and write it to the cache.

``python -m revformer.worker --config JSON --group NAME --steps N --threads T --cache DIR``.
``load_experiment`` starts one per missing group on a multi-core CPU.
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m revformer.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="ExperimentConfig.to_dict() as JSON")
    parser.add_argument("--group", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args(argv)

    import torch

    from .config import ExperimentConfig
    from .experiment import train_into_cache

    torch.set_num_threads(max(1, args.threads))
    config = ExperimentConfig.from_dict(json.loads(args.config))
    print(train_into_cache(config, args.group, args.steps, args.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
