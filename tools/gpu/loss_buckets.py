"""Where a checkpoint's loss on a dev set lies: the mean negative log-likelihood per target token
(no label smoothing), by how often the token occurs in the training targets and by its position
in the sentence. It tells a model that has not learnt the rarer words, or the later positions,
from one that is worse everywhere.

    .venv/bin/python tools/gpu/loss_buckets.py checkpoints/de-en runs/.../base-de-en \
        --data gpu-data --split val
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.checkpoints.load import load_metadata  # noqa: E402
from transformer_viz.training.gpu_run.data import (TRAIN_SPLITS, Prepared,  # noqa: E402
                                                   loss_batches)

FREQUENCY = (10, 100, 1000)  # occurrences in the training targets: < 10, 10–99, 100–999, more
POSITION = (5, 10, 15, 20, 30)  # target positions: 0–4, 5–9, …, 30 on


def _bucket(value: int, edges: tuple[int, ...]) -> int:
    return sum(value >= edge for edge in edges)


def _label(k: int, edges: tuple[int, ...]) -> str:
    low = 0 if k == 0 else edges[k - 1]
    return f"{low}–{edges[k] - 1}" if k < len(edges) else f"{low}+"


def buckets(model, examples, counts: collections.Counter) -> dict[str, dict[str, float]]:
    """Mean NLL per target token, by training frequency and by position, for the examples."""
    sums = {"frequency": collections.Counter(), "position": collections.Counter()}
    sizes = {"frequency": collections.Counter(), "position": collections.Counter()}
    pad = model.cfg.pad_id
    with torch.no_grad():
        for batch in loss_batches(examples, model.cfg):
            logits = model(batch.src, batch.tgt_in).float()  # (B, T, V)
            nll = F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, reduction="none",
                                  ignore_index=pad)  # (B, T)
            for row_ids, row_nll in zip(batch.tgt_out.tolist(), nll.tolist()):
                for t, (token, loss) in enumerate(zip(row_ids, row_nll)):
                    if token == pad:
                        continue
                    for kind, k in (("frequency", _bucket(counts[token], FREQUENCY)),
                                    ("position", _bucket(t, POSITION))):
                        sums[kind][k] += loss
                        sizes[kind][k] += 1
    edges = {"frequency": FREQUENCY, "position": POSITION}
    return {kind: {_label(k, edges[kind]): sums[kind][k] / sizes[kind][k]
                   for k in sorted(sizes[kind])} for kind in sums}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", help="checkpoint directories of one direction")
    parser.add_argument("--data", default="gpu-data", help="a folder written by gpu_run prepare")
    parser.add_argument("--split", default="val", help="val or tatoeba_dev")
    parser.add_argument("--limit", type=int, default=1000, help="the split's first LIMIT pairs")
    args = parser.parse_args()
    prepared = Prepared.load(args.data)
    for directory in args.checkpoints:
        meta = load_metadata(directory)
        src, tgt = meta["src_lang"], meta["tgt_lang"]
        model = load_checkpoint(directory).model.eval()
        train = [pair for split in TRAIN_SPLITS
                 for pair in prepared.examples(split, src, tgt, model.cfg.max_len)]
        counts = collections.Counter(token for _, target in train for token in target)
        counts[model.cfg.eos_id] += len(train)  # each target ends in </s> (make_batch adds it)
        examples = prepared.examples(args.split, src, tgt, model.cfg.max_len)[:args.limit]
        for kind, row in buckets(model, examples, counts).items():
            print(f"{directory} ({args.split}, by {kind}): "
                  + ", ".join(f"{label} {loss:.2f}" for label, loss in row.items()), flush=True)


if __name__ == "__main__":
    main()
