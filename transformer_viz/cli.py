"""Command line: ``python -m transformer_viz {translate,trace,shapes,train,evaluate,download-data}``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_CHECKPOINT = Path(__file__).resolve().parent.parent / "checkpoints" / "de-en"


def _load(path, dtype: str = "float32"):
    from .checkpoint import load_checkpoint

    return load_checkpoint(path, dtype=dtype)


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
    from .engine import run_sentence
    from .evaluate import translate_texts
    from .tokenizer import InputError, encode_source

    ckpt = _load(args.checkpoint, args.dtype)
    if args.sentence:
        try:
            run = run_sentence(ckpt, " ".join(args.sentence), beam_size=args.beam, trace=False)
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
    outputs = translate_texts(ckpt.model, ckpt.tokenizer, [used[i] for i in todo], beam_size=args.beam,
                              progress=args.progress) if todo else []
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
    from .engine import run_sentence
    from .tokenizer import InputError

    ckpt = _load(args.checkpoint, args.dtype)
    try:
        run = run_sentence(ckpt, " ".join(args.sentence), beam_size=args.beam)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(_trace_json(run, args.values), sys.stdout, ensure_ascii=False, indent=None if args.values else 1)
    print()
    return 0


def cmd_shapes(args) -> int:
    from .engine import random_model_run
    from .tokenizer import InputError, clean_text

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
    from .train import TrainConfig, train

    overrides = json.loads(args.model_overrides) if args.model_overrides else {}
    tc = TrainConfig(src_lang=args.src, tgt_lang=args.tgt, config=args.config, model_overrides=overrides,
                     vocab_size=args.vocab_size, batch_tokens=args.batch_tokens, epochs=args.epochs,
                     max_minutes=args.max_minutes, warmup=args.warmup, lr_factor=args.lr_factor,
                     label_smoothing=args.label_smoothing, patience=args.patience, seed=args.seed,
                     average_last=args.average_last, amp=args.amp, threads=args.threads,
                     train_limit=args.train_limit, val_bleu_limit=args.val_bleu_limit)
    train(tc, args.run_dir, data_dir=args.data_dir, out_dir=args.out, progress=not args.no_progress)
    return 0


def cmd_evaluate(args) -> int:
    from .data import read_split
    from .evaluate import score, translate_texts

    ckpt = _load(args.checkpoint)
    src_lang = args.src or ckpt.metadata.get("src_lang", "de")
    tgt_lang = args.tgt or ckpt.metadata.get("tgt_lang", "en")
    pairs = read_split(args.data_dir, args.split, src_lang, tgt_lang, limit=args.limit or None)
    hyps = translate_texts(ckpt.model, ckpt.tokenizer, [s for s, _ in pairs], beam_size=args.beam,
                           alpha=args.alpha, progress=not args.no_progress)
    result = score(hyps, [t for _, t in pairs])
    out = Path(args.output or f"hyps.{args.split}.{src_lang}-{tgt_lang}.beam{args.beam}.txt")
    out.write_text("".join(h + "\n" for h in hyps))
    report = {"split": args.split, "direction": f"{src_lang}-{tgt_lang}", "sentences": len(pairs),
              "decoding": "greedy" if args.beam <= 1 else f"beam {args.beam}"
              + ("" if args.alpha == 0.6 else f", alpha {args.alpha:g}"), **result.as_dict(),
              "hypotheses": str(out)}
    if args.record:
        if args.limit:
            print("error: --record needs the whole split (no --limit)", file=sys.stderr)
            return 2
        from .evaluate import record_scores

        record_scores(args.checkpoint, report)
    print(json.dumps(report, indent=1))
    return 0


def cmd_download(args) -> int:
    from .data import download

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


def build_parser() -> argparse.ArgumentParser:
    from .checkpoint import DTYPES
    from .config import PRESETS
    from .data import DATA_DIR_ENV, SPLITS

    parser = argparse.ArgumentParser(prog="python -m transformer_viz",
                                     description="Run, inspect and train an encoder–decoder Transformer.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("translate", help="translate a sentence, or standard input line by line")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    p.add_argument("--beam", type=_beam_width, default=1, help=f"beam width, 1 (greedy) to {MAX_BEAM}")
    p.add_argument("--progress", action="store_true", help="show a progress bar for standard input")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="weights and arithmetic: float32, or bfloat16 (faster on CPUs with bfloat16 units)")
    p.add_argument("sentence", nargs="*", help="the sentence; omit it to read standard input")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser("trace", help="JSON with tokens, IDs, translation and every traced tensor's shape")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--beam", type=_beam_width, default=1, help=f"beam width, 1 (greedy) to {MAX_BEAM}")
    p.add_argument("--values", action="store_true", help="include every tensor's numbers")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="weights and arithmetic: float32, or bfloat16 (faster on CPUs with bfloat16 units)")
    p.add_argument("sentence", nargs="+")
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("shapes", help="the trace JSON from a randomly initialised model of a preset config")
    p.add_argument("--config", default="base", choices=sorted(PRESETS), help="preset config")
    p.add_argument("sentence", nargs="*", help="optional sentence (default: an example)")
    p.set_defaults(func=cmd_shapes)

    p = sub.add_parser("train", help="train on Multi30k")
    p.add_argument("--data-dir", help=f"Multi30k directory (or set {DATA_DIR_ENV})")
    p.add_argument("--src", default="de")
    p.add_argument("--tgt", default="en")
    p.add_argument("--run-dir", required=True, help="working directory: tokenizer, resumable state, logs")
    p.add_argument("--out", help="write the selected model here as a checkpoint directory")
    p.add_argument("--config", default="small")
    p.add_argument("--model-overrides", help='JSON, e.g. \'{"dropout": 0.2}\'')
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--batch-tokens", type=int, default=4096)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--max-minutes", type=float, default=0.0)
    p.add_argument("--warmup", type=int, default=4000)
    p.add_argument("--lr-factor", type=float, default=1.0)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--patience", type=int, default=8)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--average-last", type=int, default=5)
    p.add_argument("--amp", default="auto", choices=["auto", "bf16", "off"])
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--val-bleu-limit", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="BLEU and chrF of a checkpoint on a Multi30k split")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--data-dir", help=f"Multi30k directory (or set {DATA_DIR_ENV})")
    p.add_argument("--split", default="test_2016_flickr", choices=SPLITS)
    p.add_argument("--src")
    p.add_argument("--tgt")
    p.add_argument("--beam", type=_beam_width, default=5)
    p.add_argument("--alpha", type=float, default=0.6, help="length penalty exponent")
    p.add_argument("--limit", type=int, default=0, help="only the first n sentences")
    p.add_argument("--output", help="where to write the hypotheses")
    p.add_argument("--record", action="store_true",
                   help="add the scores to the checkpoint's metadata.json and model card")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("download-data", help="fetch the Multi30k task 1 raw files (needs internet)")
    p.add_argument("directory")
    p.set_defaults(func=cmd_download)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; problems with the input, the checkpoint or the data give a one-line message on
    stderr and exit code 2 (as argparse does for bad arguments), never a traceback."""
    from .checkpoint import CheckpointError
    from .data import DataError
    from .tokenizer import InputError

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
