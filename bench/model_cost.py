"""What the model itself costs per new sentence: the part of the server's CPU no change to the pages
removes.

For each translation checkpoint, --sentences sentences of the load tests' kind (bench/load_test.py's
new_sentence: 5-14 random words of the app's vocabulary and a serial number) are each decoded
greedily, decoded by beam search as the Overview does (the checkpoint's own settings), and traced
(the teacher-forced pass the step-by-step pages show). Reported per sentence: the mean source and
output lengths, the CPU milliseconds (time.thread_time, one torch thread as the app sets it) of each
part, greedy decoding's time per written token (encoding the source included), and the bytes of
weights a decoder step reads (the products with every decoder weight and the output projection),
which set its floor where the weights do not fit in the cache.

    .venv/bin/python bench/model_cost.py
    .venv/bin/python bench/model_cost.py --checkpoints checkpoints/de-en --sentences 60

Prints a JSON summary on stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from load_test import new_sentence  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def cpu_ms(work, items) -> tuple[float, list]:
    """Mean CPU milliseconds of ``work(item)`` over ``items`` (after one call not counted), and the
    results."""
    work(items[0])
    start = time.thread_time()
    results = [work(item) for item in items]
    return (time.thread_time() - start) / len(items) * 1000, results


def decoder_step_bytes(model) -> int:
    """Bytes of the weights one decoder step multiplies by: every decoder layer's except
    cross-attention's W_K and W_V (applied once per sentence), and the output projection."""
    once = {id(p) for layer in model.decoder_layers for p in (*layer.cross_attn.w_k.parameters(),
                                                              *layer.cross_attn.w_v.parameters())}
    out = model.tgt_embed.weight if model.cfg.tie_embeddings else model.generator.weight
    weights = [p for p in model.decoder_layers.parameters() if id(p) not in once] + [out]
    return sum(p.numel() * p.element_size() for p in weights)


def measure(directory: Path, n: int, seed: int) -> dict:
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.engine import run_sentence, traced_forward

    ckpt = load_checkpoint(directory)
    lang = ckpt.metadata.get("src_lang") if ckpt.metadata.get("src_lang") in ("de", "en") else "de"
    rng = random.Random(seed)
    sentences = [new_sentence(rng, lang, f"{k}") for k in range(n)]
    greedy_ms, runs = cpu_ms(lambda s: run_sentence(ckpt, s, trace=False), sentences)
    traced_ms, _ = cpu_ms(lambda r: traced_forward(ckpt.model, r.src_ids, r.tgt_ids), runs)
    beams = ckpt.generation.num_beams
    beam_ms, beam_runs = cpu_ms(lambda s: run_sentence(ckpt, s, beam_size=beams, trace=False),
                                sentences)
    steps = sum(len(r.decoding.steps) for r in runs) / n
    return {"checkpoint": directory.name, "sentences": n,
            "source_tokens": sum(len(r.src_ids) for r in runs) / n,
            "greedy_steps": steps, "beam_steps": sum(len(r.decoding.steps) for r in beam_runs) / n,
            "greedy_ms": round(greedy_ms, 1), "traced_pass_ms": round(traced_ms, 1),
            f"beam{beams}_ms": round(beam_ms, 1), "greedy_ms_per_step": round(greedy_ms / steps, 2),
            "decoder_step_weight_mb": round(decoder_step_bytes(ckpt.model) / 2**20, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, nargs="+",
                        default=[ROOT / "checkpoints" / "de-en", ROOT / "checkpoints" / "en-de"])
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(json.dumps([measure(d, args.sentences, args.seed) for d in args.checkpoints], indent=2))


if __name__ == "__main__":
    main()
