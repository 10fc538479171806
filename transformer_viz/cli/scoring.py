"""The commands that score translation models on a corpus split: ``evaluate`` (sacreBLEU, chrF and
the repetition rate), ``bleu-by-length`` (greedy sacreBLEU by source-length bucket) and
``select-decoding`` (the beam's length penalty, chosen on validation data). With ``--record``
(always, for select-decoding) the scores go into the checkpoint's metadata.json and model card."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from transformer_viz.cli.common import (DEFAULT_CHECKPOINT, beam_width, data_flags, decoding_flags,
                                        fail, load_translation_model, non_negative)

WHOLE_SPLIT = "--record needs the whole split (no --limit)"


def cmd_evaluate(args) -> int:
    from transformer_viz.checkpoints.records import record_scores
    from transformer_viz.generation.evaluation import evaluate_split
    from transformer_viz.text.corpora import read_any_split

    ckpt = load_translation_model(args.checkpoint, device=args.device)
    decoding = ckpt.generation.override(args.beam, args.alpha, args.max_loop_repeats)
    src_lang = args.src or ckpt.metadata.get("src_lang", "de")
    tgt_lang = args.tgt or ckpt.metadata.get("tgt_lang", "en")
    pairs = read_any_split(args.split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir,
                           limit=args.limit or None)
    report, hyps = evaluate_split(ckpt, pairs, args.split, decoding.num_beams,
                                  decoding.length_penalty, progress=not args.no_progress,
                                  max_loop_repeats=decoding.max_loop_repeats)
    out = Path(args.output
               or f"hyps.{args.split}.{src_lang}-{tgt_lang}.beam{decoding.num_beams}.txt")
    out.write_text("".join(h + "\n" for h in hyps))
    report = {**report, "direction": f"{src_lang}-{tgt_lang}", "hypotheses": str(out)}
    if args.record:
        if args.limit:
            return fail(WHOLE_SPLIT)
        record_scores(args.checkpoint, report)
    print(json.dumps(report, indent=1))
    return 0


def cmd_bleu_by_length(args) -> int:
    """Greedy sacreBLEU by source-length bucket, for one or more checkpoints on the same split."""
    from transformer_viz.checkpoints.records import record_bleu_by_length, record_scores
    from transformer_viz.generation.evaluation import bleu_by_length, evaluate_split
    from transformer_viz.text.corpora import read_any_split

    if args.record and args.limit:
        return fail(WHOLE_SPLIT)
    results = []
    for path in args.checkpoint:
        ckpt = load_translation_model(path, device=args.device)
        src_lang = ckpt.metadata.get("src_lang", "de")
        tgt_lang = ckpt.metadata.get("tgt_lang", "en")
        pairs = read_any_split(args.split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir,
                               limit=args.limit or None)
        report, hyps = evaluate_split(ckpt, pairs, args.split, 1, 0.0,
                                      progress=not args.no_progress)
        entry = {"split": args.split, "decoding": "greedy",
                 "tokens": "subword tokens (the model's tokenizer, without </s>)",
                 "sentences": len(pairs), "bleu": report["bleu"],
                 "buckets": bleu_by_length(ckpt.tokenizer, pairs, hyps)}
        if args.record:
            record_bleu_by_length(path, entry)
            record_scores(path, report)
        results.append({"checkpoint": str(path), "model": ckpt.metadata.get("name", ""), **entry})
        print(json.dumps(results[-1]), file=sys.stderr)
    text = json.dumps(results, indent=1, ensure_ascii=False)
    if args.output:
        Path(args.output).write_text(text + "\n")
    print(text)
    return 0


def cmd_select_decoding(args) -> int:
    """Choose the beam search's length penalty on validation data and write it to
    generation_config.json."""
    from dataclasses import replace

    from transformer_viz.checkpoints.records import record_scores
    from transformer_viz.generation.decoding_defaults import save_generation_defaults
    from transformer_viz.generation.evaluation import select_length_penalty
    from transformer_viz.text.corpora import read_any_split

    tests = [split for split in args.splits if "test" in split]
    if tests:
        return fail("decoding is chosen on validation data, never on a test set "
                    f"({', '.join(tests)})")
    ckpt = load_translation_model(args.checkpoint, device=args.device)
    src_lang = ckpt.metadata.get("src_lang", "de")
    tgt_lang = ckpt.metadata.get("tgt_lang", "en")
    sets = {split: read_any_split(split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir)
            for split in args.splits}
    guard = ckpt.generation.override(max_loop_repeats=args.max_loop_repeats).max_loop_repeats
    alpha, rows = select_length_penalty(ckpt, sets, args.beam, args.alphas,
                                        progress=not args.no_progress,
                                        log=lambda line: print(line, file=sys.stderr),
                                        max_loop_repeats=guard)
    chosen = replace(ckpt.generation, num_beams=args.beam, length_penalty=alpha,
                     max_loop_repeats=guard)
    save_generation_defaults(args.checkpoint, chosen)
    for row in rows:
        if row["decoding"] == chosen.describe():
            record_scores(args.checkpoint, row)
    print(json.dumps({"chosen": chosen.to_json(), "measured": rows}, indent=1))
    return 0


def _batch_flags(p) -> None:
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--no-progress", action="store_true")


def add_commands(sub) -> None:
    from transformer_viz.text.corpora import SPLITS, TATOEBA_SPLITS

    p = sub.add_parser("bleu-by-length",
                       help="greedy sacreBLEU by source-length bucket (<= 10, 11-15, 16-20, "
                            "21-25, > 25 subword tokens) for one or more checkpoints")
    p.add_argument("--checkpoint", action="append", required=True,
                   help="checkpoint directory (repeat for more)")
    p.add_argument("--split", default="test_2016_flickr", choices=SPLITS + TATOEBA_SPLITS)
    data_flags(p)
    p.add_argument("--limit", type=int, default=0, help="only the first n sentences (quick checks)")
    p.add_argument("--output", help="also write the JSON here")
    p.add_argument("--record", action="store_true",
                   help="store the result in each checkpoint's metadata.json and model card")
    _batch_flags(p)
    p.set_defaults(func=cmd_bleu_by_length)

    p = sub.add_parser("select-decoding",
                       help="choose the beam's length penalty α on validation data; "
                            "writes generation_config.json and records the scores")
    p.add_argument("--checkpoint", required=True)
    data_flags(p)
    p.add_argument("--splits", nargs="+", default=["val", "tatoeba_dev"],
                   choices=SPLITS + TATOEBA_SPLITS, help="validation sets; never a test set")
    p.add_argument("--beam", type=beam_width, default=5)
    p.add_argument("--alphas", type=float, nargs="+", default=[0.6, 1.0, 1.4])
    p.add_argument("--max-loop-repeats", type=non_negative, default=None, metavar="N",
                   help="the repetition guard to decode with and to write (0: off); default: as "
                        "the checkpoint has it")
    _batch_flags(p)
    p.set_defaults(func=cmd_select_decoding)

    p = sub.add_parser("evaluate",
                       help="BLEU, chrF and the repetition rate of a checkpoint on a split")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    data_flags(p, ", for the tatoeba_* splits")
    p.add_argument("--split", default="test_2016_flickr", choices=SPLITS + TATOEBA_SPLITS)
    p.add_argument("--src")
    p.add_argument("--tgt")
    decoding_flags(p)
    p.add_argument("--limit", type=int, default=0, help="only the first n sentences")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--output", help="where to write the hypotheses")
    p.add_argument("--record", action="store_true",
                   help="add the scores to the checkpoint's metadata.json and model card")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_evaluate)
