"""``patch``: which activations decide a word: activation patching between a clean and a corrupted
sentence of the same token length (interpret/patching.py), as one JSON object or a short report."""

from __future__ import annotations

import json
import sys

from transformer_viz.cli.common import load_translation_model
from transformer_viz.cli.explain import require_transformer


def _rounded(values) -> list:
    return [round(float(v), 6) + 0.0 for v in values]  # + 0.0: no "-0.0" for a share of exactly 0


def patch_json(p) -> dict:
    """Everything ``patch`` prints, for one interpret.patching.Patching."""
    from transformer_viz.interpret.patching import head_shares, summary_text

    g = p.grids
    heads = {name: round(share, 6) + 0.0 for name, share in head_shares(g).items()}
    return {"clean_token": p.clean_token, "corrupted_token": p.corrupted_token,
            "position": p.position, "teacher_forcing": "both runs read <s> + the clean translation",
            "source_tokens": p.src_tokens, "corrupted_source_tokens": p.corrupted_tokens,
            "changed_positions": p.changed, "target_tokens": p.tgt_tokens,
            "translation": p.translation, "corrupted_translation": p.corrupted_translation,
            "logit_difference": {"clean": round(g.ld_clean, 6),
                                 "corrupted": round(g.ld_corrupted, 6)},
            "encoder": [_rounded(row) for row in g.encoder],
            "encoder_all_positions": _rounded(g.encoder_all),
            "decoder": [_rounded(row) for row in g.decoder], "heads": heads,
            "summary": summary_text(p)}


def cmd_patch(args) -> int:
    from transformer_viz.interpret.patching import patch_sentences

    ckpt = load_translation_model(args.checkpoint, args.dtype)
    require_transformer(ckpt)
    out = patch_json(patch_sentences(ckpt, args.clean, args.corrupted, args.position))
    if args.json:
        json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
        print()
        return 0
    print(f"clean:     {out['translation']}\ncorrupted: {out['corrupted_translation']}")
    print(out["summary"])
    return 0


def add_commands(sub) -> None:
    from transformer_viz.checkpoints import DTYPES
    from transformer_viz.cli.common import DEFAULT_CHECKPOINT

    p = sub.add_parser("patch", help="activation patching: which layers, positions and heads "
                                     "decide a word (clean vs corrupted sentence)")
    p.add_argument("clean", help="the clean sentence")
    p.add_argument("corrupted", help="the same sentence with one word changed (same token length)")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="weights and arithmetic")
    p.add_argument("--position", type=int, default=None, metavar="N",
                   help="target position (default: where the two greedy translations first differ)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_patch)
