"""``tuned-lens``: train a checkpoint's tuned lens (interpret/tuned_lens.py) on its own training
pairs and write it beside the weights, with the per-layer KL on the dev sets before and after."""

from __future__ import annotations

import random
import time


def cmd_tuned_lens(args) -> int:
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.interpret.tuned_lens import mean_kl, save_tuned_lens, train_tuned_lens
    from transformer_viz.text.corpora import encode_pairs
    from transformer_viz.training.translation import TrainConfig, load_corpora

    ckpt = load_checkpoint(args.checkpoint)
    src, tgt = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
    tc = TrainConfig(src_lang=src, tgt_lang=tgt, tatoeba_copies=1 if args.tatoeba_dir else 0)
    # the dev split carved as in training
    corpora = load_corpora(tc, args.data_dir, args.tatoeba_dir)
    train = random.Random(args.seed).sample(corpora.train, min(args.pairs, len(corpora.train)))
    held_out = [p for name in corpora.validation for p in corpora.validation[name][: args.held_out]]
    model, max_len = ckpt.model, ckpt.config.max_len
    train_ids = encode_pairs(ckpt.tokenizer, train, max_len)
    held_ids = encode_pairs(ckpt.tokenizer, held_out, max_len)
    start = time.time()
    plain = mean_kl(model, None, held_ids)
    lens = train_tuned_lens(model, train_ids, steps=args.steps, seed=args.seed)
    tuned = mean_kl(model, lens, held_ids)
    report = {"training_pairs": len(train_ids), "steps": args.steps,
              "held_out_pairs": len(held_ids),
              "held_out": "the first pairs of each dev set (Multi30k val, Tatoeba dev)",
              "kl_plain": [round(v, 4) for v in plain], "kl_tuned": [round(v, 4) for v in tuned],
              "minutes": round((time.time() - start) / 60, 1)}
    save_tuned_lens(lens, args.checkpoint, report)
    for layer, (p, t) in enumerate(zip(plain, tuned)):
        print(f"decoder layer {layer}: KL to the output {p:.3f} nats (plain lens), "
              f"{t:.3f} (tuned lens)")
    return 0


def add_commands(sub) -> None:
    from transformer_viz.cli.common import data_flags

    p = sub.add_parser("tuned-lens", help="train a checkpoint's tuned lens (one affine map per "
                                          "decoder layer) and write it beside its weights")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (written into)")
    data_flags(p)
    p.add_argument("--pairs", type=int, default=4000, help="training pairs drawn (default: 4000)")
    p.add_argument("--steps", type=int, default=300, help="optimiser steps (default: 300)")
    p.add_argument("--held-out", type=int, default=500, help="pairs of each dev set measured")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_tuned_lens)
