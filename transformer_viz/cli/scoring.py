"""Command line: ``python -m transformer_viz {translate,trace,shapes,train,train-rnn,train-vit,vit-eval,train-detr,
detr-eval,evaluate,bleu-by-length,language-stats,export-hf,download-data}``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_CHECKPOINT = Path(__file__).resolve().parent.parent / "checkpoints" / "de-en"


def _load(path, dtype: str = "float32", device: str = "cpu"):
    """A translation model (a Transformer or a recurrent one); the image models are refused with a reason."""
    from transformer_viz.checkpoints.load import CheckpointError, checkpoint_arch, load_checkpoint

    if checkpoint_arch(path) == "vit":
        raise CheckpointError(f"{path} is the Vision Transformer (digits), not a translation model; "
                              f"see `python -m transformer_viz vit-eval`")
    if checkpoint_arch(path) == "detr":
        raise CheckpointError(f"{path} is the DETR (digits on canvases), not a translation model; "
                              f"see `python -m transformer_viz detr-eval`")

    if device == "auto":  # batch work (evaluation) runs on a GPU when there is one
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return load_checkpoint(path, dtype=dtype, device=device)


def _read_stdin() -> str:
    # Bytes that are not UTF-8 become U+FFFD (shown as <unk>) instead of stopping the whole run.
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer.read().decode("utf-8", errors="replace")
    return sys.stdin.read()


def _input_lines(text: str) -> list[str]:
    """Lines split at \\n only (str.splitlines would also split at form feed, U+2028, …, and so
    change the line count); a final newline does not start another line; \\r\\n counts as one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def cmd_translate(args) -> int:
    from transformer_viz.engine import run_sentence
    from transformer_viz.text.evaluation import translate_texts
    from transformer_viz.text.tokenizer import InputError, encode_source

    ckpt = _load(args.checkpoint, args.dtype)
    decoding = ckpt.generation.override(args.beam, args.alpha, args.max_loop_repeats)
    if args.sentence:
        try:
            run = run_sentence(ckpt, " ".join(args.sentence), beam_size=decoding.num_beams,
                               alpha=decoding.length_penalty, trace=False, max_loop_repeats=decoding.max_loop_repeats)
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for note in run.messages:
            print(f"note: {note}", file=sys.stderr)
        print(run.translation)
        return 0
    # Standard input: one output line per input line (an empty line stays empty), translated in batches.
    # Every line goes through the same input rules as a sentence on the command line or in the app.
    lines = _input_lines(_read_stdin())
    used: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            encoded = encode_source(ckpt.tokenizer, line, max_tokens=ckpt.config.max_len)
        except InputError as exc:
            print(f"note: line {number}: {exc}", file=sys.stderr)
            continue
        for note in encoded.messages():
            print(f"note: line {number}: {note}", file=sys.stderr)
        used[number - 1] = encoded.clean.text
    todo = sorted(used)
    outputs = translate_texts(ckpt.model, ckpt.tokenizer, [used[i] for i in todo], beam_size=decoding.num_beams,
                              alpha=decoding.length_penalty, progress=args.progress,
                              max_loop_repeats=decoding.max_loop_repeats, scoring=decoding.beam_scoring,
                              early_stopping=decoding.early_stopping, suppress=decoding.suppress_ids) if todo else []
    result = [""] * len(lines)
    for i, out in zip(todo, outputs):
        result[i] = out
    sys.stdout.write("".join(line + "\n" for line in result))
    return 0


def _trace_json(run, values: bool) -> dict:
    out = {
        "source": run.source_text,
        "source_tokens": run.src_tokens,
        "source_ids": run.src_ids,
        "translation": run.translation,
        "target_tokens": run.tgt_tokens,
        "target_ids": run.tgt_ids,
        "messages": run.messages,
        "shapes": {name: list(shape) for name, shape in run.trace.shapes().items()},
    }
    if values:
        out["values"] = {name: t.float().tolist() if t.is_floating_point() else t.tolist()
                         for name, t in run.trace.items()}
    return out


def cmd_trace(args) -> int:
    from transformer_viz.engine import run_sentence
    from transformer_viz.text.tokenizer import InputError

    ckpt = _load(args.checkpoint, args.dtype)
    decoding = ckpt.generation.override(args.beam, args.alpha, args.max_loop_repeats)
    try:
        run = run_sentence(ckpt, " ".join(args.sentence), beam_size=decoding.num_beams, alpha=decoding.length_penalty,
                           max_loop_repeats=decoding.max_loop_repeats)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(_trace_json(run, args.values), sys.stdout, ensure_ascii=False, indent=None if args.values else 1)
    print()
    return 0


def cmd_shapes(args) -> int:
    from transformer_viz.engine import random_model_run
    from transformer_viz.text.tokenizer import InputError, clean_text

    sentence = None
    if args.sentence:
        clean = clean_text(" ".join(args.sentence))
        if clean.empty:
            raise InputError("Please type a sentence (or none, for the example): the text is empty"
                             + (" after removing invisible characters." if clean.removed else "."))
        for note in clean.messages():
            print(f"note: {note}", file=sys.stderr)
        sentence = clean.text
    run = random_model_run(args.config, sentence)
    json.dump(_trace_json(run, False) | {"config": run.config.to_dict()}, sys.stdout, ensure_ascii=False, indent=1)
    print()
    return 0


def cmd_train(args) -> int:
    from transformer_viz.training.translation import TrainConfig, train

    tc = TrainConfig(**{name: getattr(args, name) for name in TrainConfig.__dataclass_fields__})
    train(tc, args.run_dir, data_dir=args.data_dir, tatoeba_dir=args.tatoeba_dir, out_dir=args.out,
          progress=not args.no_progress)
    return 0


def cmd_train_rnn(args) -> int:
    from transformer_viz.training.rnn import RNNTrainConfig, train_rnn

    tc = RNNTrainConfig(**{name: getattr(args, name) for name in RNNTrainConfig.__dataclass_fields__})
    train_rnn(tc, args.run_dir, data_dir=args.data_dir, tatoeba_dir=args.tatoeba_dir, out_dir=args.out,
              progress=not args.no_progress)
    return 0


def cmd_train_vit(args) -> int:
    from transformer_viz.vision.digits import ViTTrainConfig, train_vit

    tc = ViTTrainConfig(**{name: getattr(args, name) for name in ViTTrainConfig.__dataclass_fields__})
    metadata = train_vit(tc, args.out, log=(lambda _: None) if args.no_progress else print)
    print(json.dumps({"held_out_accuracy": metadata["held_out_accuracy"], "minutes": metadata["training"]["minutes"],
                      "epochs": metadata["training"]["epochs_run"], "out": args.out}))
    return 0


def cmd_vit_eval(args) -> int:
    from transformer_viz.checkpoints.load import CheckpointError, checkpoint_arch, load_checkpoint
    from transformer_viz.vision.digits import accuracy, load_split

    if checkpoint_arch(args.checkpoint) != "vit":
        raise CheckpointError(f"{args.checkpoint} is not a Vision Transformer checkpoint (config.json's \"arch\" "
                              f"is not \"vit\")")
    checkpoint, split = load_checkpoint(args.checkpoint), load_split()
    print(json.dumps({"checkpoint": str(args.checkpoint), "split": "held-out 20 %",
                      "images": int(len(split.test_labels)),
                      "held_out_accuracy": round(accuracy(checkpoint.model, split.test_images, split.test_labels), 4),
                      "model_card": checkpoint.metadata.get("held_out_accuracy")}))
    return 0


def cmd_train_detr(args) -> int:
    from transformer_viz.vision.canvases import DETRTrainConfig, train_detr

    tc = DETRTrainConfig(**{name: getattr(args, name) for name in DETRTrainConfig.__dataclass_fields__})
    metadata = train_detr(tc, args.run_dir, args.out, log=(lambda _: None) if args.no_progress else print)
    print(json.dumps({"validation": metadata["validation"], "minutes": metadata["training"]["minutes"],
                      "steps": metadata["training"]["steps_run"], "out": args.out}))
    return 0


def cmd_detr_eval(args) -> int:
    from transformer_viz.vision.canvases import TRAIN_SEED, evaluate, model_card
    from transformer_viz.checkpoints.load import CARD, METADATA, CheckpointError, checkpoint_arch, load_checkpoint

    if checkpoint_arch(args.checkpoint) != "detr":
        raise CheckpointError(f"{args.checkpoint} is not a DETR checkpoint (config.json's \"arch\" is not \"detr\")")
    if args.seed == TRAIN_SEED:
        raise SystemExit(f"error: seed {TRAIN_SEED} made the training canvases; evaluate on any other seed")
    if args.canvases < 1:
        raise SystemExit("error: --canvases must be at least 1")
    checkpoint = load_checkpoint(args.checkpoint)
    report = evaluate(checkpoint.model, args.seed, args.canvases, args.images)
    print(json.dumps({"checkpoint": str(args.checkpoint), "iou_threshold": 0.5, **report}))
    if args.record:
        meta = {**checkpoint.metadata, "test": report}
        path = Path(args.checkpoint)
        (path / METADATA).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        (path / CARD).write_text(model_card(checkpoint.config, meta))
    return 0


def cmd_evaluate(args) -> int:
    from transformer_viz.text.corpora import read_any_split
    from transformer_viz.text.evaluation import evaluate_split

    ckpt = _load(args.checkpoint, device=args.device)
    decoding = ckpt.generation.override(args.beam, args.alpha, args.max_loop_repeats)
    src_lang = args.src or ckpt.metadata.get("src_lang", "de")
    tgt_lang = args.tgt or ckpt.metadata.get("tgt_lang", "en")
    pairs = read_any_split(args.split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir, limit=args.limit or None)
    report, hyps = evaluate_split(ckpt, pairs, args.split, decoding.num_beams, decoding.length_penalty,
                                  progress=not args.no_progress, max_loop_repeats=decoding.max_loop_repeats)
    out = Path(args.output or f"hyps.{args.split}.{src_lang}-{tgt_lang}.beam{decoding.num_beams}.txt")
    out.write_text("".join(h + "\n" for h in hyps))
    report = {**report, "direction": f"{src_lang}-{tgt_lang}", "hypotheses": str(out)}
    if args.record:
        if args.limit:
            print("error: --record needs the whole split (no --limit)", file=sys.stderr)
            return 2
        from transformer_viz.text.evaluation import record_scores

        record_scores(args.checkpoint, report)
    print(json.dumps(report, indent=1))
    return 0


def cmd_bleu_by_length(args) -> int:
    """Greedy sacreBLEU by source-length bucket, for one or more checkpoints on the same split."""
    from transformer_viz.text.corpora import read_any_split
    from transformer_viz.text.evaluation import bleu_by_length, evaluate_split, record_bleu_by_length, record_scores

    if args.record and args.limit:
        print("error: --record needs the whole split (no --limit)", file=sys.stderr)
        return 2
    results = []
    for path in args.checkpoint:
        ckpt = _load(path, device=args.device)
        src_lang, tgt_lang = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
        pairs = read_any_split(args.split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir,
                               limit=args.limit or None)
        report, hyps = evaluate_split(ckpt, pairs, args.split, 1, 0.0, progress=not args.no_progress)
        entry = {"split": args.split, "decoding": "greedy", "tokens": "subword tokens (the model's tokenizer, "
                 "without </s>)", "sentences": len(pairs), "bleu": report["bleu"],
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
    """Choose the beam search's length penalty on validation data and write it to generation_config.json."""
    from dataclasses import replace

    from transformer_viz.text.corpora import read_any_split
    from transformer_viz.text.evaluation import record_scores, select_length_penalty
    from transformer_viz.text.decoding_defaults import save_generation_defaults

    tests = [split for split in args.splits if "test" in split]
    if tests:
        print(f"error: decoding is chosen on validation data, never on a test set ({', '.join(tests)})",
              file=sys.stderr)
        return 2
    ckpt = _load(args.checkpoint, device=args.device)
    src_lang = ckpt.metadata.get("src_lang", "de")
    tgt_lang = ckpt.metadata.get("tgt_lang", "en")
    sets = {split: read_any_split(split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir)
            for split in args.splits}
    guard = ckpt.generation.override(max_loop_repeats=args.max_loop_repeats).max_loop_repeats
    alpha, rows = select_length_penalty(ckpt, sets, args.beam, args.alphas, progress=not args.no_progress,
                                        log=lambda line: print(line, file=sys.stderr), max_loop_repeats=guard)
    chosen = replace(ckpt.generation, num_beams=args.beam, length_penalty=alpha, max_loop_repeats=guard)
    save_generation_defaults(args.checkpoint, chosen)
    for row in rows:
        if row["decoding"] == chosen.describe():
            record_scores(args.checkpoint, row)
    print(json.dumps({"chosen": chosen.to_json(), "measured": rows}, indent=1))
    return 0


def cmd_language_stats(args) -> int:
    """Write the checkpoint's language_stats.json from its training data, and optionally report how often
    the input warnings fire on held-out sentences of either language."""
    from transformer_viz.checkpoints.load import TOKENIZER_DIR, load_metadata
    from transformer_viz.text.language_stats import (LANGUAGE_STATS, build_language_stats, check_language, is_fragment, load_language_stats, save_language_stats)
    from transformer_viz.text.corpora import LANGUAGES, read_any_split, read_split, read_tatoeba
    from transformer_viz.text.tokenizer import encode_source, load_tokenizer

    directory = Path(args.checkpoint)
    tokenizer = load_tokenizer(directory / TOKENIZER_DIR)
    metadata = load_metadata(directory)
    src_lang, tgt_lang = metadata.get("src_lang", "de"), metadata.get("tgt_lang", "en")
    if not args.report_only:
        # The corpora the model was trained on, as its card names them (cards of Multi30k-only models
        # describe the corpus in a "corpus" entry instead of naming it as a key).
        corpora = args.corpora or (["multi30k", "tatoeba"] if "Tatoeba" in metadata.get("data", {}) else ["multi30k"])
        pairs = read_split(args.data_dir, "train", *LANGUAGES) if "multi30k" in corpora else []
        if "tatoeba" in corpora:  # the training part only: tatoeba_dev stays unseen, for the report
            pairs += read_tatoeba(args.tatoeba_dir, "tatoeba_train", *LANGUAGES, data_dir=args.data_dir)
        encoded = {lang: tokenizer([pair[i] for pair in pairs], add_special_tokens=False)["input_ids"]
                   for i, lang in enumerate(LANGUAGES)}
        path = save_language_stats(directory, build_language_stats(encoded, corpora))
        print(f"wrote {path} ({path.stat().st_size:,} bytes) from {len(pairs):,} sentence pairs ({', '.join(corpora)})")
    stats = load_language_stats(directory)
    if stats is None:
        print(f"error: {directory} has no {LANGUAGE_STATS}", file=sys.stderr)
        return 2
    for split in args.report:
        pairs = read_any_split(split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir)
        for side, lang in enumerate((src_lang, tgt_lang)):
            flagged = {"other language": 0, "too long": 0, "fragment": 0}
            for pair in pairs:
                encoded_source = encode_source(tokenizer, pair[side], max_tokens=10_000)
                flagged["other language"] += check_language(stats, encoded_source.ids, src_lang).looks_like is not None
                flagged["too long"] += len(encoded_source.ids) > (stats.length_threshold(src_lang) or 10_000)
                flagged["fragment"] += is_fragment(encoded_source.clean.text)
            print(json.dumps({"checkpoint": f"{src_lang}-{tgt_lang}", "split": split, "sentences_in": lang,
                              "n": len(pairs), **{k: round(v / len(pairs), 4) for k, v in flagged.items()}}))
    return 0


def cmd_export_hf(args) -> int:
    from transformer_viz.checkpoints.marian import export_hf

    ckpt = _load(args.checkpoint)
    out = export_hf(ckpt, args.out)
    print(f"wrote {out}: MarianMTModel.from_pretrained({str(out)!r}) and AutoTokenizer.from_pretrained(…) load it")
    return 0


def cmd_download(args) -> int:
    from transformer_viz.text.corpora import download

    for path in download(args.directory):
        print(path)
    return 0


MAX_BEAM = 32  # wider beams cost memory (beam × vocabulary per step) and rarely help


def _beam_width(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_BEAM:
        raise argparse.ArgumentTypeError(f"must be between 1 (greedy) and {MAX_BEAM}, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (off) or more, got {value}")
    return value


def _model_flags(p: argparse.ArgumentParser) -> None:
    """The checkpoint, its arithmetic and its decoding: the flags of every command that translates one sentence."""
    from transformer_viz.checkpoints.load import DTYPES

    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="weights and arithmetic: float32, or bfloat16 (faster on CPUs with bfloat16 units)")
    _decoding_flags(p)


def _decoding_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=_beam_width, default=None,
                   help=f"beam width, 1 (greedy) to {MAX_BEAM}; default: the checkpoint's generation_config.json")
    p.add_argument("--alpha", type=float, default=None,
                   help="length-penalty exponent α for beam search; default: the checkpoint's generation_config.json")
    p.add_argument("--max-loop-repeats", type=_non_negative, default=None, metavar="N",
                   help="repetition guard: a unit of up to three subwords may occur at most N times in a row "
                        "(0: off); default: the checkpoint's generation_config.json")


# TrainConfig fields as flags (--src-lang is --src, --config takes a preset name); defaults live in the dataclass.
TRAIN_FLAG_NAMES = {"src_lang": "--src", "tgt_lang": "--tgt"}
TRAIN_FLAG_HELP = {
    "config": "model preset (base, small, tiny; for train-rnn: rnn, rnn-attn, tiny)",
    "lr": "Adam's learning rate (train-rnn)",
    "lr_decay": "factor applied to the learning rate after an epoch without a better validation BLEU",
    "clip": "gradient-norm clipping",
    "tokenizer": "tokenizer directory (the shipped de-en Transformer's, so the models share one vocabulary)",
    "model_overrides": 'JSON changes to the preset, e.g. \'{"dropout": 0.2}\'',
    "max_minutes": "stop after the epoch that would pass this wall-clock budget (0: no limit)",
    "multi30k_copies": "times Multi30k's training pairs appear in one epoch",
    "tatoeba_copies": "times Tatoeba's training pairs appear in one epoch (0: Multi30k only)",
    "init_from": "warm start from this checkpoint directory (its vocabulary may differ)",
    "continue_from": "go on training this checkpoint (its tokenizer, weights, step and history; Adam restarts)",
    "rewarmup": "after --continue-from, steps over which the learning rate ramps up again from 0",
    "num_beams": "decoding default written to the checkpoint's generation_config.json",
    "length_penalty": "length-penalty exponent α written to generation_config.json",
    "amp": "auto (fp16 on CUDA), bf16, or off",
    "warmup_epochs": "train-vit: epochs of linear learning-rate warm-up before the cosine decay",
    "shift": "train-vit: each training image moved by up to this many pixels (0: no augmentation)",
    "steps": "train-detr: optimizer steps (batches of fresh canvases)",
    "warmup_steps": "train-detr: steps of linear learning-rate warm-up before the cosine decay",
    "eval_every": "train-detr: steps between checks on 200 canvases of the validation seed",
    "val_seed": "train-detr: the seed of the canvases watched during training",
}


def _dataclass_flags(p: argparse.ArgumentParser, cls, names: dict[str, str]) -> None:
    """One flag per dataclass field, with the field's default and type."""
    import dataclasses

    for f in dataclasses.fields(cls):
        flag = names.get(f.name, "--" + f.name.replace("_", "-"))
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        kind = json.loads if isinstance(default, dict) else type(default)
        p.add_argument(flag, dest=f.name, type=kind, default=default,
                       help=f"{TRAIN_FLAG_HELP.get(f.name, f.name.replace('_', ' '))} (default: {default!r})")


def _data_flags(p: argparse.ArgumentParser, tatoeba_help: str = "") -> None:
    from transformer_viz.text.corpora import DATA_DIR_ENV, TATOEBA_DIR_ENV

    p.add_argument("--data-dir", help=f"Multi30k directory (or set {DATA_DIR_ENV})")
    p.add_argument("--tatoeba-dir", help=f"Tatoeba directory{tatoeba_help} (or set {TATOEBA_DIR_ENV})")


def _run_flags(p: argparse.ArgumentParser, out_help: str) -> None:
    """What both training commands take besides their configuration's fields."""
    _data_flags(p)
    p.add_argument("--run-dir", required=True, help="working directory: tokenizer, resumable state, logs")
    p.add_argument("--out", help=out_help)
    p.add_argument("--no-progress", action="store_true")


def _training_commands(sub) -> None:
    from transformer_viz.training.translation import TrainConfig
    from transformer_viz.vision.canvases import DETRTrainConfig
    from transformer_viz.vision.digits import ViTTrainConfig
    from transformer_viz.training.rnn import RNNTrainConfig

    p = sub.add_parser("train", help="train on Multi30k (and Tatoeba, with --tatoeba-copies)")
    _run_flags(p, "write the selected model here as a checkpoint directory")
    _dataclass_flags(p, TrainConfig, TRAIN_FLAG_NAMES)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("train-rnn", help="train a GRU encoder-decoder (--config rnn) or the same with "
                                         "attention (--config rnn-attn) with the de-en tokenizer")
    _run_flags(p, "export the best epoch here as a checkpoint directory (after every better epoch)")
    _dataclass_flags(p, RNNTrainConfig, TRAIN_FLAG_NAMES)
    p.set_defaults(func=cmd_train_rnn)

    p = sub.add_parser("train-vit", help="train the Vision Transformer on scikit-learn's 8x8 digits "
                                         "(80 %% of them; the held-out 20 %% is scored once at the end)")
    p.add_argument("--out", required=True, help="write the checkpoint directory here")
    p.add_argument("--no-progress", action="store_true")
    _dataclass_flags(p, ViTTrainConfig, {})
    p.set_defaults(func=cmd_train_vit)

    p = sub.add_parser("vit-eval", help="JSON with a Vision Transformer's accuracy on the held-out 20 %% of the digits")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT.parent / "vit-digits"))
    p.set_defaults(func=cmd_vit_eval)

    p = sub.add_parser("train-detr", help="train the toy DETR on fresh canvases of the training digits "
                                          "(resumes from --run-dir)")
    p.add_argument("--run-dir", required=True, help="working directory: resumable state and history")
    p.add_argument("--out", required=True, help="write the checkpoint directory here")
    p.add_argument("--no-progress", action="store_true")
    _dataclass_flags(p, DETRTrainConfig, {})
    p.set_defaults(func=cmd_train_detr)

    p = sub.add_parser("detr-eval", help="JSON with a DETR's precision and recall (IoU >= 0.5, right class) on "
                                         "new canvases")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT.parent / "detr-digits"))
    p.add_argument("--canvases", type=int, default=1000, help="how many canvases (default: 1000)")
    p.add_argument("--seed", type=int, required=True, help="canvas seed; never the training seed (0)")
    p.add_argument("--images", default="held-out", choices=("held-out", "train"),
                   help="which digit images fill the canvases (default: held-out, never trained on)")
    p.add_argument("--record", action="store_true", help="store the result as the test score in the model card")
    p.set_defaults(func=cmd_detr_eval)


def _scoring_commands(sub) -> None:
    from transformer_viz.text.corpora import SPLITS, TATOEBA_SPLITS

    p = sub.add_parser("bleu-by-length", help="greedy sacreBLEU by source-length bucket (<= 10, 11-15, 16-20, "
                                              "21-25, > 25 subword tokens) for one or more checkpoints")
    p.add_argument("--checkpoint", action="append", required=True, help="checkpoint directory (repeat for more)")
    p.add_argument("--split", default="test_2016_flickr", choices=SPLITS + TATOEBA_SPLITS)
    _data_flags(p)
    p.add_argument("--limit", type=int, default=0, help="only the first n sentences (quick checks)")
    p.add_argument("--output", help="also write the JSON here")
    p.add_argument("--record", action="store_true",
                   help="store the result in each checkpoint's metadata.json and model card")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_bleu_by_length)

    p = sub.add_parser("select-decoding", help="choose the beam's length penalty α on validation data; "
                                               "writes generation_config.json and records the scores")
    p.add_argument("--checkpoint", required=True)
    _data_flags(p)
    p.add_argument("--splits", nargs="+", default=["val", "tatoeba_dev"], choices=SPLITS + TATOEBA_SPLITS,
                   help="validation sets; never a test set")
    p.add_argument("--beam", type=_beam_width, default=5)
    p.add_argument("--alphas", type=float, nargs="+", default=[0.6, 1.0, 1.4])
    p.add_argument("--max-loop-repeats", type=_non_negative, default=None, metavar="N",
                   help="the repetition guard to decode with and to write (0: off); default: as the checkpoint has it")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_select_decoding)

    p = sub.add_parser("evaluate", help="BLEU, chrF and the repetition rate of a checkpoint on a split")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    _data_flags(p, ", for the tatoeba_* splits")
    p.add_argument("--split", default="test_2016_flickr", choices=SPLITS + TATOEBA_SPLITS)
    p.add_argument("--src")
    p.add_argument("--tgt")
    _decoding_flags(p)
    p.add_argument("--limit", type=int, default=0, help="only the first n sentences")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--output", help="where to write the hypotheses")
    p.add_argument("--record", action="store_true",
                   help="add the scores to the checkpoint's metadata.json and model card")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_evaluate)


def build_parser() -> argparse.ArgumentParser:
    from transformer_viz.models.config import PRESETS

    parser = argparse.ArgumentParser(prog="python -m transformer_viz",
                                     description="Run, inspect and train an encoder–decoder Transformer.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("translate", help="translate a sentence, or standard input line by line")
    _model_flags(p)
    p.add_argument("--progress", action="store_true", help="show a progress bar for standard input")
    p.add_argument("sentence", nargs="*", help="the sentence; omit it to read standard input")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser("trace", help="JSON with tokens, IDs, translation and every traced tensor's shape")
    _model_flags(p)
    p.add_argument("--values", action="store_true", help="include every tensor's numbers")
    p.add_argument("sentence", nargs="+")
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("shapes", help="the trace JSON from a randomly initialised model of a preset config")
    p.add_argument("--config", default="base", choices=sorted(PRESETS), help="preset config")
    p.add_argument("sentence", nargs="*", help="optional sentence (default: an example)")
    p.set_defaults(func=cmd_shapes)

    _training_commands(sub)
    _scoring_commands(sub)

    from transformer_viz.text.corpora import SPLITS, TATOEBA_SPLITS

    p = sub.add_parser("language-stats", help="write a checkpoint's language_stats.json (token → language, "
                                              "source lengths) from its training data, for the input warnings")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory")
    p.add_argument("--data-dir", help="Multi30k directory (or set TRANSFORMER_VIZ_DATA)")
    p.add_argument("--tatoeba-dir", help="Tatoeba directory (default: 'tatoeba' beside the Multi30k directory)")
    p.add_argument("--corpora", nargs="+", choices=["multi30k", "tatoeba"],
                   help="training corpora to count (default: those the model card names)")
    p.add_argument("--report", nargs="*", default=[], choices=SPLITS + TATOEBA_SPLITS,
                   help="held-out splits on which to print how often each warning fires, in either language")
    p.add_argument("--report-only", action="store_true", help="keep the stored statistics, only report")
    p.set_defaults(func=cmd_language_stats)

    p = sub.add_parser("export-hf", help="write a Transformer checkpoint as a transformers Marian model directory "
                                         "(MarianMTModel, safetensors, generation_config.json, tokenizer)")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--out", required=True, help="the directory to write")
    p.set_defaults(func=cmd_export_hf)

    p = sub.add_parser("download-data", help="fetch the Multi30k task 1 raw files (needs internet)")
    p.add_argument("directory")
    p.set_defaults(func=cmd_download)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; problems with the input, the checkpoint or the data give a one-line message on
    stderr and exit code 2 (as argparse does for bad arguments), never a traceback."""
    from transformer_viz.checkpoints.load import CheckpointError
    from transformer_viz.text.corpora import DataError
    from transformer_viz.text.tokenizer import InputError

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed its message; return its code so main() never exits
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.func(args)
    except (CheckpointError, DataError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `... | head`: the reader has gone, nothing left to report
        try:  # point stdout at /dev/null, so that the interpreter's final flush does not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
