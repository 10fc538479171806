"""How long padding one training batch takes on the CPU: make_batch against the row-by-row way it
replaced (the reference of tests/unit/test_train.py), on the base model's GPU batches of 25,000
tokens from the prepared corpora, the two alternating batch by batch. Median milliseconds.

    .venv/bin/python bench/batch_speed.py --data gpu-data --batches 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_train import _make_batch_row_by_row  # noqa: E402
from transformer_viz.text.corpora import make_batch, token_batches  # noqa: E402
from transformer_viz.training.gpu_run.data import Prepared  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="gpu-data", help="a folder written by gpu_run prepare")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-tokens", type=int, default=25_000)
    args = parser.parse_args()
    prepared = Prepared.load(args.data)
    examples = (prepared.examples("multi30k_train", "de", "en", 256) * 2
                + prepared.examples("tatoeba_train", "de", "en", 256))
    batches = token_batches(examples, args.batch_tokens, shuffle=True, seed=1)
    masked, by_row = [], []
    for k in range(args.batches):
        rows = [examples[i] for i in batches[k % len(batches)]]
        t = time.perf_counter()
        make_batch(rows, 0, 1, 2)
        masked.append(time.perf_counter() - t)
        t = time.perf_counter()
        _make_batch_row_by_row(rows, 0, 1, 2)
        by_row.append(time.perf_counter() - t)
    ms = 1000 * statistics.median(masked), 1000 * statistics.median(by_row)
    print(f"{args.batches} batches of {args.batch_tokens} tokens: make_batch {ms[0]:.2f} ms, "
          f"row by row {ms[1]:.2f} ms (median), {ms[1] / ms[0]:.1f}x")


if __name__ == "__main__":
    main()
