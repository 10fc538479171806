"""Engine speed: training throughput against torch.nn.Transformer, and the traced forward of the
base config.

    python bench/engine_speed.py [--threads 2] [--rounds 5] [--amp off|bf16]

1. Training-step throughput (target tokens per second) of the `small` config against a model built
   on `torch.nn.Transformer` with the same sizes (same embeddings ×√d_model, positional encoding,
   tied output projection, dropout, loss and optimiser), alternating A, B, A, B … in one process;
   the ratio ours/reference is taken round by round and its median printed (target ≥ 0.9).
2. A traced forward pass (every intermediate recorded) of a 20-token sentence through the `base`
   config (the paper's sizes): median milliseconds over repeated runs (target ≤ 50 ms), with the
   untraced forward beside it, in float32 and with bfloat16 weights
   (`load_checkpoint(..., dtype="bfloat16")`, `--dtype bfloat16` in the CLI).
Timings use time.perf_counter; the first runs are warm-up and are not counted.
"""

from __future__ import annotations

import argparse
import copy
import contextlib
import math
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.core.trace import Trace  # noqa: E402
from transformer_viz.models.transformer.config import preset  # noqa: E402
from transformer_viz.models.transformer.model import Transformer, sinusoidal_positional_encoding  # noqa: E402


class ReferenceTransformer(nn.Module):
    """The same model built on torch.nn.Transformer (Post-LN, ReLU), for a like-for-like
    comparison."""

    def __init__(self, cfg) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.core = nn.Transformer(cfg.d_model, cfg.h, cfg.N, cfg.N, cfg.d_ff, cfg.dropout,
                                   batch_first=True)
        self.dropout = nn.Dropout(cfg.dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(cfg.max_len, cfg.d_model,
                                                                  cfg.pe_base), persistent=False)

    def forward(self, src, tgt):
        scale = math.sqrt(self.cfg.d_model)
        x = self.dropout(self.embed(src) * scale + self.pe[: src.size(1)])
        y = self.dropout(self.embed(tgt) * scale + self.pe[: tgt.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        out = self.core(x, y, tgt_mask=causal, src_key_padding_mask=src == self.cfg.pad_id,
                        tgt_key_padding_mask=tgt == self.cfg.pad_id,
                        memory_key_padding_mask=src == self.cfg.pad_id)
        return out @ self.embed.weight.t()


def make_batch(cfg, batch: int, length: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, cfg.vocab_size, (batch, length), generator=g)
    tgt = torch.randint(4, cfg.vocab_size, (batch, length + 1), generator=g)
    # Realistic padding: sentences of different lengths in one batch.
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=g)
    for b, n in enumerate(lengths.tolist()):
        src[b, n:] = cfg.pad_id
        tgt[b, n + 1:] = cfg.pad_id
    return src, tgt[:, :-1], tgt[:, 1:]


def train_steps(model, optimizer, batch, steps: int, amp: str) -> float:
    """Target tokens per second over ``steps`` training steps."""
    src, tgt_in, tgt_out = batch
    n_tokens = int((tgt_out != 0).sum())
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if amp == "bf16"
                else contextlib.nullcontext())
    start = time.perf_counter()
    for _ in range(steps):
        with autocast:
            logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                               ignore_index=0, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return n_tokens * steps / (time.perf_counter() - start)


def bench_training(args) -> None:
    torch.manual_seed(0)
    cfg = preset("small", vocab_size=8000)
    ours, ref = Transformer(cfg).train(), ReferenceTransformer(cfg).train()
    opt_ours = torch.optim.Adam(ours.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    batch = make_batch(cfg, args.batch, args.length, seed=1)
    print(f"training step, small config ({ours.num_parameters():,} parameters; reference "
          f"{sum(p.numel() for p in ref.parameters()):,}), batch {args.batch}×{args.length}, "
          f"amp {args.amp}, "
          f"{torch.get_num_threads()} threads")
    train_steps(ours, opt_ours, batch, 2, args.amp)  # warm-up
    train_steps(ref, opt_ref, batch, 2, args.amp)
    ratios, ours_rates, ref_rates = [], [], []
    for r in range(args.rounds):
        a = train_steps(ours, opt_ours, batch, args.steps, args.amp)
        b = train_steps(ref, opt_ref, batch, args.steps, args.amp)
        ours_rates.append(a)
        ref_rates.append(b)
        ratios.append(a / b)
        print(f"  round {r + 1}: ours {a:8.0f} tok/s   nn.Transformer {b:8.0f} tok/s   "
              f"ratio {a / b:.3f}")
    print(f"  median: ours {statistics.median(ours_rates):.0f} tok/s, nn.Transformer "
          f"{statistics.median(ref_rates):.0f} tok/s, ratio {statistics.median(ratios):.3f} "
          "(target >= 0.9)")


def bench_traced_forward(args) -> None:
    torch.manual_seed(0)
    cfg = preset("base", dropout=0.0)
    model32 = Transformer(cfg).eval()
    # load_checkpoint(..., dtype="bfloat16") does the same
    model16 = copy.deepcopy(model32).to(torch.bfloat16)
    src = torch.randint(4, cfg.vocab_size, (1, 20))
    tgt = torch.randint(4, cfg.vocab_size, (1, 20))
    variants = {("float32", True): model32, ("float32", False): model32,
                ("bfloat16", True): model16, ("bfloat16", False): model16}
    times = {key: [] for key in variants}
    with torch.no_grad():
        for _ in range(args.rounds):  # variants alternate, so a noisy moment hits them all alike
            for (dtype, traced), model in variants.items():
                for i in range(args.forward_runs // args.rounds + 2):
                    start = time.perf_counter()
                    model(src, tgt, trace=Trace() if traced else None)
                    if i >= 2:
                        times[(dtype, traced)].append((time.perf_counter() - start) * 1000)
        trace = Trace()
        model32(src, tgt, trace=trace)
        diff = (model16(src, tgt).float() - model32(src, tgt)).abs().max().item()
    print(f"forward, base config (d_model 512, h 8, N 6, {model32.num_parameters():,} parameters), "
          f"20 source and 20 target tokens, {len(trace)} tensors recorded, "
          f"{torch.get_num_threads()} threads")
    for (dtype, traced), values in times.items():
        target = "  (target <= 50 ms)" if traced else ""
        print(f"  {dtype:8s} {'traced' if traced else 'untraced':8s} "
              f"median {statistics.median(values):6.1f} ms  "
              f"(min {min(values):.1f}, max {max(values):.1f}){target}")
    print(f"  largest |logit difference| bfloat16 vs float32: {diff:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (0 = torch's default)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="training steps per round and model")
    parser.add_argument("--batch", type=int, default=96)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--amp", default="off", choices=["off", "bf16"])
    parser.add_argument("--forward-runs", type=int, default=40,
                        help="timed forward passes per variant")
    parser.add_argument("--only", choices=["training", "forward"])
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.only != "forward":
        bench_training(args)
    if args.only != "training":
        bench_traced_forward(args)


if __name__ == "__main__":
    main()
