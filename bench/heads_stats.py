"""Attention is not attribution, measured, and the heads a translation needs most: the README's
numbers for the page "What does a head do?", over the first --limit sentences of a Multi30k split.

Per sentence: the greedy translation (engine.run_sentence, as the page shows it), then
teacher-forced on it

- per decoder layer, how often cross-attention's most-attended source token (argmax over the source,
  per head) is the most-attributed one (argmax of integrated gradients, and of gradient × input),
  counted over every target position of every sentence and averaged over the layer's heads; and the
  same for the attention averaged over the heads;
- per head, the drop of log p(translation) when that head alone is off (text.explain.heads_run),
  averaged over the sentences: the five largest;
- integrated gradients' completeness gap,
  Σ_t |Σ_s IG_ts − (f_t(e) − f_t(e'))| / Σ_t |f_t(e) − f_t(e')|.

    nohup nice -n 10 .venv/bin/python bench/heads_stats.py --checkpoint checkpoints/de-en \\
        --limit 500 --ig-steps 16 > /tmp/heads_stats.log 2>&1 &

Writes bench/results/heads_stats.json (or --out) every --save-every sentences (partial numbers while
it runs) and at the end, and prints the tables as markdown. One torch thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.engine import run_sentence  # noqa: E402
from transformer_viz.interpret import explain as X  # noqa: E402
from transformer_viz.text.corpora import read_any_split  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "heads_stats.json"


def sentence_numbers(ckpt, source: str, steps: int) -> dict:
    run = run_sentence(ckpt, source)
    cfg, model = ckpt.config, ckpt.model
    cross = np.stack([run.trace[f"decoder.{i}.cross_attn.weights"][0].numpy()
                      for i in range(cfg.N)])  # (N, h, T, S)
    ig, delta = X.integrated_gradients(model, run.src_ids, run.tgt_ids, steps)
    gxi = X.gradient_x_input(model, run.src_ids, run.tgt_ids)
    heads = X.heads_run(model, run.src_ids, run.tgt_ids)
    T = cross.shape[2]
    return {"T": T, "ig": X.argmax_agreement(cross, ig), "gxi": X.argmax_agreement(cross, gxi),
            "drops": heads.drops, "gap": float(np.abs(ig.sum(-1) - delta).sum()),
            "delta": float(np.abs(delta).sum()),
            "heads": [str(h) for h in heads.heads]}


def summary(rows: list[dict], args) -> dict:
    positions = sum(r["T"] for r in rows)

    # over every target position of every sentence
    def weighted(method: str, key: str) -> list[float]:
        return (sum(r[method][key] * r["T"] for r in rows) / positions).round(4).tolist()

    drops = np.mean([r["drops"] for r in rows], axis=0)
    order = np.argsort(-drops)[:5]
    return {"checkpoint": args.checkpoint, "split": args.split, "sentences": len(rows),
            "target_positions": positions,
            "ig_steps": args.ig_steps,
            "agreement_ig_per_layer_mean_over_heads": weighted("ig", "per_layer"),
            "agreement_ig_head_mean_attention": weighted("ig", "mean_heads"),
            "agreement_gxi_per_layer_mean_over_heads": weighted("gxi", "per_layer"),
            "agreement_gxi_head_mean_attention": weighted("gxi", "mean_heads"),
            "top5_heads_mean_drop_nats": [[rows[0]["heads"][i], round(float(drops[i]), 4)]
                                          for i in order],
            "ig_completeness_gap": round(sum(r["gap"] for r in rows)
                                         / sum(r["delta"] for r in rows), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default="checkpoints/de-en")
    parser.add_argument("--data-dir", default=None, help="Multi30k (default: TRANSFORMER_VIZ_DATA)")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--ig-steps", type=int, default=16)
    parser.add_argument("--save-every", type=int, default=25)
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"the JSON written (default {OUT.name} in bench/results)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ckpt = load_checkpoint(args.checkpoint)
    src_lang, tgt_lang = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
    pairs = read_any_split(args.split, src_lang, tgt_lang, args.data_dir, limit=args.limit)
    rows, start = [], time.perf_counter()
    for n, (source, _) in enumerate(pairs, 1):
        rows.append(sentence_numbers(ckpt, source, args.ig_steps))
        if n % args.save_every == 0 or n == len(pairs):
            result = summary(rows, args)
            args.out.parent.mkdir(exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
            print(f"{n} sentences, {time.perf_counter() - start:.0f} s", flush=True)
    result = summary(rows, args)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    print("\n| decoder layer | " + " | ".join(str(i) for i in range(ckpt.config.N)) + " |")
    print("|---|" + "---|" * ckpt.config.N)
    for key, name in (("agreement_ig_per_layer_mean_over_heads", "IG, mean over heads"),
                      ("agreement_ig_head_mean_attention", "IG, head-averaged attention"),
                      ("agreement_gxi_per_layer_mean_over_heads", "grad × input, mean over heads"),
                      ("agreement_gxi_head_mean_attention",
                       "grad × input, head-averaged attention")):
        print(f"| {name} | " + " | ".join(f"{100 * v:.1f} %" for v in result[key]) + " |")


if __name__ == "__main__":
    main()
