"""``explain``: which source words one translation used and what each decoder layer already guessed,
per target token (the table of the page "What does a head do?", from the same library functions,
interpret/explain.py); and ``translate --heads-off``'s decoding with heads switched off
(cli/translation.py)."""

from __future__ import annotations

import json
import sys

import numpy as np

from transformer_viz.cli.common import fail, load_translation_model


def require_transformer(ckpt) -> None:
    from transformer_viz.checkpoints import CheckpointError
    from transformer_viz.models.transformer.model import Transformer

    if not isinstance(ckpt.model, Transformer):
        raise CheckpointError("heads, the logit lens and these attributions need an "
                              "encoder–decoder Transformer checkpoint, not a recurrent model")


def parse_heads_flag(ckpt, spec: str):
    """``--heads-off enc.L.H,dec.L.H,cross.L.H`` -> heads; InputError for one the model does not
    have."""
    from transformer_viz.interpret.ablation import parse_heads
    from transformer_viz.text.tokenizer import InputError

    try:
        return parse_heads(spec, ckpt.config)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def explain_json(ckpt, sentence: str, steps: int, contrast: str | None = None,
                 position: int | None = None) -> dict:
    """Everything ``explain`` prints, for one sentence: its tokens, the greedy translation,
    integrated gradients' step count and completeness gap, and the per-token rows
    (text.explain.explanation_rows); with ``contrast``, why the token written at one position and
    not that one (:func:`contrast_json`)."""
    from transformer_viz.engine import run_sentence
    from transformer_viz.interpret import explain as X

    if contrast is not None:
        token_id(ckpt, contrast)  # an unknown token fails before any work
    run = run_sentence(ckpt, sentence)
    model = ckpt.model
    ig, delta = X.integrated_gradients(model, run.src_ids, run.tgt_ids, steps)
    gxi = X.gradient_x_input(model, run.src_ids, run.tgt_ids)
    lens = X.heads_run(model, run.src_ids, run.tgt_ids).lens
    out = {"source": run.source_text, "source_tokens": run.src_tokens,
           "translation": run.translation, "layers": model.cfg.N, "ig_steps": steps,
           "ig_baseline": "zero source embeddings (positions kept)",
           "ig_completeness_gap": round(float(np.abs(ig.sum(-1) - delta).sum()
                                              / np.abs(delta).sum()), 6),
           "lens_final_layer_norm": bool(model.cfg.pre_ln), "messages": run.messages,
           "tokens": X.explanation_rows(run, lens, ig, gxi)}
    out.update(source_share_json(model, run, steps, out["tokens"]))
    if contrast is not None:
        out["contrastive"] = contrast_json(ckpt, run, contrast, position, steps)
    return out


def source_share_json(model, run, steps: int, rows: list[dict]) -> dict:
    """Each written token's source share and low-source flag, added to its row of ``rows``, and
    the source tokens no written token used (interpret/source_share.py)."""
    from transformer_viz.interpret.source_share import content_tokens, source_shares

    found = source_shares(model, run.src_ids, run.tgt_ids, steps)
    for row, share, low in zip(rows, found.source_share, found.low_source):
        row["source_share"], row["low_source"] = round(float(share), 4), bool(low)
    unused = found.unused_sources(content_tokens(run.src_tokens))
    return {"source_share_method": "integrated gradients of log p(token) over the source and the "
                                   "target prefix embeddings (Voita et al., 2021): source share = "
                                   "Σ|IG(source)| / (Σ|IG(source)| + Σ|IG(prefix)|)",
            "unused_source_tokens": [t for t, u in zip(run.src_tokens, unused) if u]}


def token_id(ckpt, token: str) -> int:
    """A vocabulary token as typed: itself ("▁sie", "</s>") or a word that starts one ("sie" ->
    "▁sie"); InputError for one the vocabulary lacks."""
    from transformer_viz.text.tokenizer import InputError

    vocab = ckpt.tokenizer.get_vocab()
    for candidate in (token, "▁" + token):
        if candidate in vocab:
            return vocab[candidate]
    raise InputError(f"{token!r} is not a token of this vocabulary (nor \"▁{token}\", the "
                     "word-start form): give one token, as `python -m transformer_viz trace` "
                     "shows them")


def contrast_json(ckpt, run, token: str, position: int | None, steps: int) -> dict:
    """``--contrast TOKEN``: integrated gradients of log p(written) − log p(TOKEN) at one position
    (default: where TOKEN is likeliest without being the token written) over the source and the
    target prefix (interpret/contrast.py)."""
    import numpy as np

    from transformer_viz.interpret.contrast import contrastive_ig
    from transformer_viz.text.tokenizer import InputError

    y_id = token_id(ckpt, token)
    written = run.predicted_ids
    if position is None:
        p = run.trace["probs"][0, :, y_id].numpy().copy()  # (T,): p(TOKEN) at every position
        p[np.asarray(written) == y_id] = -1.0
        position = int(p.argmax())
    if not 0 <= position < len(written):
        raise InputError(f"--position {position} is outside the translation: 0 to "
                         f"{len(written) - 1}")
    if written[position] == y_id:
        raise InputError(f"position {position} writes {token!r} itself: contrast it with "
                         "another token")
    c = contrastive_ig(ckpt.model, run.src_ids, run.tgt_ids, position, written[position], y_id,
                       steps)
    names = ckpt.tokenizer.convert_ids_to_tokens
    return {"position": position, "written": names(written[position]), "contrast": names(y_id),
            "quantity": "log p(written) − log p(contrast)", "value": round(c.g_input, 6),
            "baseline_value": round(c.g_baseline, 6), "completeness_gap": round(c.gap, 6),
            "source": [[t, round(float(v), 6)] for t, v in zip(run.src_tokens, c.source)],
            "target_prefix": [[t, round(float(v), 6)]
                              for t, v in zip(run.tgt_tokens[:position + 1], c.target)]}


def cmd_explain(args) -> int:
    from transformer_viz.text.tokenizer import InputError

    ckpt = load_translation_model(args.checkpoint, args.dtype)
    require_transformer(ckpt)
    if args.ig_steps < 1:
        return fail("--ig-steps must be at least 1")
    try:
        out = explain_json(ckpt, " ".join(args.sentence), args.ig_steps, args.contrast,
                           args.position)
    except InputError as exc:
        return fail(str(exc))
    if args.json:
        json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
        print()
        return 0
    print(f"{out['translation']}\n(integrated gradients: {args.ig_steps} steps, completeness gap "
          f"{out['ig_completeness_gap']:.1%})")
    print(f"{'token':<14} {'p':>6}  {'most attended per layer':<36} {'IG':<12} {'grad×input':<12} "
          "lens rank per layer")
    for row in out["tokens"]:
        print(f"{row['token']:<14} {row['p']:>6.3f}  {' '.join(row['most_attended']):<36} "
              f"{row['most_attributed_ig']:<12} {row['most_attributed_gxi']:<12} "
              f"{row['lens_rank']}")
    if "contrastive" in out:
        c = out["contrastive"]
        top = sorted(c["source"] + c["target_prefix"], key=lambda tv: -abs(tv[1]))[:3]
        print(f"why {c['written']!r}, not {c['contrast']!r}, at position {c['position']}: "
              f"{c['quantity']} = {c['value']:.3f}; most attributed "
              + ", ".join(f"{t} {v:+.3f}" for t, v in top))
    return 0


def translate_heads_off(ckpt, sentence: str, spec: str) -> str:
    """The greedy translation with the heads of ``spec`` switched off (what ``translate
    --heads-off`` prints)."""
    from transformer_viz.interpret.explain import translation_with_heads_off
    from transformer_viz.text.tokenizer import encode_source

    require_transformer(ckpt)
    heads = parse_heads_flag(ckpt, spec)
    encoded = encode_source(ckpt.tokenizer, sentence, max_tokens=ckpt.config.max_len)
    for note in encoded.messages():
        print(f"note: {note}", file=sys.stderr)
    return translation_with_heads_off(ckpt, encoded.ids, heads)[1]


def add_commands(sub) -> None:
    from transformer_viz.checkpoints import DTYPES
    from transformer_viz.cli.common import DEFAULT_CHECKPOINT
    from transformer_viz.interpret.explain import IG_STEPS

    p = sub.add_parser("explain",
                       help="per target token: attention, attribution (IG, grad×input), logit lens")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="weights and arithmetic")
    p.add_argument("--ig-steps", type=int, default=IG_STEPS,
                   help=f"integrated gradients' steps (default {IG_STEPS})")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--contrast", metavar="TOKEN", default=None,
                   help="why the written token and not TOKEN: integrated gradients of the "
                        "difference of their log-probabilities over the source and the "
                        "target prefix")
    p.add_argument("--position", type=int, default=None, metavar="N",
                   help="--contrast's target position (default: where TOKEN is likeliest "
                        "unwritten)")
    p.add_argument("sentence", nargs="+")
    p.set_defaults(func=cmd_explain)
