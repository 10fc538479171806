"""``complete``: a decoder-only model (ours, or GPT-2 from a transformers directory) continues a
prompt, greedily (``--temperature 0``) or by sampling with temperature, top-k and top-p and a
seed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from transformer_viz.cli.common import non_negative, refuse_too_long
from transformer_viz.core.paths import CHECKPOINTS_DIR

DEFAULT_GPT = CHECKPOINTS_DIR / "gpt-en"


def _temperature(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 (greedy) and 100, got {value}")
    return value


def _top_p(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1] (1: off), got {value}")
    return value


def load_gpt(path, dtype: str = "float32"):
    """A decoder-only checkpoint; anything else, or nothing there, is a CheckpointError that says
    what to do."""
    from transformer_viz.checkpoints import CheckpointError, checkpoint_arch, load_checkpoint
    from transformer_viz.checkpoints.gpt2 import HOW_TO_GET_GPT2

    path = Path(path)
    if not path.exists():
        hint = f" {HOW_TO_GET_GPT2}" if "gpt2" in path.name.lower() else ""
        raise CheckpointError(f"checkpoint directory {path} does not exist.{hint}")
    arch = checkpoint_arch(path)
    if arch and arch != "gpt":
        raise CheckpointError(f"{path} is not a decoder-only model (config.json's \"arch\" is "
                              f"\"{arch}\"); `complete` needs one such as checkpoints/gpt-en, "
                              "or GPT-2")
    return load_checkpoint(path, dtype=dtype)


def cmd_complete(args) -> int:
    from transformer_viz.engine import run_prompt
    from transformer_viz.generation.completion import SamplingSettings

    ckpt = load_gpt(args.checkpoint, args.dtype)
    # one position is left to write
    refuse_too_long(ckpt.tokenizer, " ".join(args.prompt), ckpt.config.max_len - 1)
    settings = SamplingSettings(args.temperature, args.top_k, args.top_p, args.seed,
                                args.max_new_tokens)
    run = run_prompt(ckpt, " ".join(args.prompt), settings, trace=False)
    for note in run.completion.messages:
        print(f"note: {note}", file=sys.stderr)
    if not args.json:
        print(run.text)
        return 0
    steps = []
    for i, token in enumerate(run.completion.new_ids):
        dist = run.completion.distribution(i)
        steps.append({"token": ckpt.tokenizer.convert_ids_to_tokens([token])[0], "id": token,
                      "p_model": float(dist.model[token]),
                      "p_sampled_from": float(dist.final[token]),
                      "kept_tokens": int(dist.kept.sum())})
    print(json.dumps({"prompt": run.prompt, "text": run.text, "settings": settings.describe(),
                      "stop_reason": run.completion.stop_reason, "steps": steps},
                     ensure_ascii=False, indent=1))
    return 0


def add_commands(sub) -> None:
    from transformer_viz.checkpoints import DTYPES

    p = sub.add_parser("complete",
                       help="continue a prompt with a decoder-only model (GPT), greedy or sampled")
    p.add_argument("prompt", nargs="+", help="the beginning of a sentence")
    p.add_argument("--checkpoint", default=str(DEFAULT_GPT),
                   help="a decoder-only checkpoint directory, or a transformers GPT-2 directory")
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--max-new-tokens", type=non_negative, default=20,
                   help="at most this many tokens (default 20)")
    p.add_argument("--temperature", type=_temperature, default=1.0,
                   help="divide the logits by T before the softmax; 0: greedy (default 1)")
    p.add_argument("--top-k", type=non_negative, default=0,
                   help="sample among the k most probable tokens (0: off)")
    p.add_argument("--top-p", type=_top_p, default=1.0,
                   help="sample among the smallest set of tokens whose probability reaches p "
                        "(1: off)")
    p.add_argument("--seed", type=int, default=0,
                   help="the sampler's seed: the same seed gives the same text")
    p.add_argument("--json", action="store_true",
                   help="every generated token with its probabilities, as JSON")
    p.set_defaults(func=cmd_complete)
