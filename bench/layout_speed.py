"""A product x W^T with few rows, from a cold cache: the weight row-major (d_out, d_in), as
nn.Linear keeps it and F.linear reads it, against a transposed contiguous copy (d_in, d_out), as
transformer_viz/models/products.py reads it for up to FEW_ROWS rows.

    python bench/layout_speed.py --threads 2
    python bench/layout_speed.py --threads 2 --checkpoint checkpoints/de-en --rows 1 5 8 16 32

The weight shapes are the checkpoint's decoder ones (W_Q|W_K|W_V, W_O, the feed-forward pair, the
output projection). Before every timed product a buffer larger than the last-level cache is written,
so that the weight comes from memory, as it does in a decoding step, where every other weight has
been read since. Median of --repeats products per shape, rows and layout; time.perf_counter.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.models.transformer.config import ModelConfig  # noqa: E402


def shapes(cfg: ModelConfig) -> list[tuple[str, int, int]]:
    """(name, d_out, d_in) of the products in one decoder step."""
    return [("W_Q|W_K|W_V", 3 * cfg.d_model, cfg.d_model), ("W_O", cfg.d_model, cfg.d_model),
            ("FFN W_1", cfg.d_ff, cfg.d_model), ("FFN W_2", cfg.d_model, cfg.d_ff),
            ("output projection", cfg.vocab_size, cfg.d_model)]


def cold_median(product, flush: torch.Tensor, repeats: int) -> float:
    """Median microseconds of ``product()``, the cache flushed before each call."""
    times = []
    for _ in range(repeats):
        flush.add_(1.0)
        start = time.perf_counter()
        product()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="checkpoints/de-en",
                        help="whose config gives the shapes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, nargs="*", default=[1, 5, 8, 16, 32])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--flush-mb", type=int, default=64,
                        help="size of the buffer written between products")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = ModelConfig.load(Path(args.checkpoint) / "config.json")
    flush = torch.zeros(args.flush_mb * 2**20 // 4)
    torch.manual_seed(0)
    print(f"{args.checkpoint}: d_model {cfg.d_model}, d_ff {cfg.d_ff}, V {cfg.vocab_size}; "
          f"{args.threads} threads; median µs of {args.repeats} cold products\n")
    print("| weight | (d_out, d_in) | rows | row-major (F.linear) | transposed (addmm) "
          "| row-major ÷ transposed |")
    print("|---|---|---:|---:|---:|---:|")
    with torch.no_grad():
        for name, d_out, d_in in shapes(cfg):
            weight, bias = torch.randn(d_out, d_in), torch.randn(d_out)
            weight_t = weight.t().contiguous()
            for rows in args.rows:
                x = torch.randn(rows, d_in)
                row_major = cold_median(lambda: F.linear(x, weight, bias), flush, args.repeats)
                transposed = cold_median(lambda: torch.addmm(bias, x, weight_t), flush,
                                         args.repeats)
                print(f"| {name} | ({d_out}, {d_in}) | {rows} | {row_major:.0f} | "
                      f"{transposed:.0f} | {row_major / transposed:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
