"""Source or prefix, measured over held-out sets: for each sentence, its greedy translation and
every written token's source share (interpret/source_share.py); reported per set: the mean source
share, the share of written tokens that took little from the source, and the share of sentences with
a content source token that no written token used. Then the same on inputs built broken from the
same sentences (words shuffled, the other language's sentence, one word repeated five times): a
model that stops reading the source should show it as more flags.

    .venv/bin/python bench/source_share.py --checkpoint checkpoints/de-en --limit 500 \\
        --broken-limit 100

Prints a JSON summary; one torch thread; test sets are read, never trained or tuned on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.engine import run_sentence  # noqa: E402
from transformer_viz.interpret.source_share import source_shares  # noqa: E402
from transformer_viz.text.corpora import read_any_split  # noqa: E402


def broken(pairs: list[tuple[str, str]], rng: random.Random) -> dict[str, list[str]]:
    """Inputs the model should not be able to translate faithfully, made from the same sentences."""
    def shuffled(text: str) -> str:
        words = text.split()
        rng.shuffle(words)
        return " ".join(words)

    def repeated(text: str) -> str:
        words = text.split()
        word = words[len(words) // 2]
        return " ".join(words + [word] * 5)

    return {"words shuffled": [shuffled(s) for s, _ in pairs],
            "the other language": [t for _, t in pairs],
            "a word repeated": [repeated(s) for s, _ in pairs]}


def measure(ckpt, sentences: list[str], steps: int) -> dict:
    shares, low, unused = [], [], []
    for text in sentences:
        run = run_sentence(ckpt, text, trace=False)
        result = source_shares(ckpt.model, run.src_ids, run.tgt_ids, steps)
        content = np.array([tok.strip("▁") not in ("", "</s>", ".", ",", "!", "?")
                            for tok in run.src_tokens])
        shares.extend(result.source_share.tolist())
        low.extend(result.low_source.tolist())
        unused.append(bool(result.unused_sources(content).any()))
    return {"sentences": len(sentences), "tokens": len(shares),
            "mean_source_share": round(float(np.mean(shares)), 4),
            "tokens_low_source": round(float(np.mean(low)), 4),
            "sentences_with_unused_source": round(float(np.mean(unused)), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, default=Path("checkpoints/de-en"))
    parser.add_argument("--data-dir", default="../shared/data/multi30k")
    parser.add_argument("--tatoeba-dir", default="../shared/data/tatoeba-large")
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--splits", nargs="+", default=["test_2016_flickr", "tatoeba_dev"])
    parser.add_argument("--broken-limit", type=int, default=None,
                        help="the first n sentences of each split for the broken inputs "
                             "(default: --limit)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    ckpt = load_checkpoint(args.checkpoint)
    src, tgt = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
    out, start = {"checkpoint": str(args.checkpoint), "ig_steps": args.steps}, time.time()
    for split in args.splits:
        pairs = read_any_split(split, src, tgt, args.data_dir, args.tatoeba_dir, args.limit)
        out[split] = measure(ckpt, [s for s, _ in pairs], args.steps)
        few = pairs[:args.broken_limit or len(pairs)]
        for name, texts in broken(few, random.Random(args.seed)).items():
            out[f"{split}, {name}"] = measure(ckpt, texts, args.steps)
        print(json.dumps(out, indent=1), flush=True)
    out["minutes"] = round((time.time() - start) / 60, 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
