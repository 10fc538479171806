"""The commands that run a translation model on one's own text: ``translate`` (a sentence, or
standard input line by line), ``trace`` (the same as JSON with every traced tensor's shape,
optionally its numbers) and ``shapes`` (the trace of a randomly initialised model of a preset
config, no checkpoint needed)."""

from __future__ import annotations

import json
import sys

from transformer_viz.cli.common import (fail, input_lines, load_translation_model, model_flags,
                                        read_stdin, refuse_too_long)


def cmd_translate(args) -> int:
    from transformer_viz.engine import run_sentence
    from transformer_viz.text.tokenizer import InputError

    ckpt = load_translation_model(args.checkpoint, args.dtype)
    # greedy, with those heads' outputs zeroed before W_O (cli/explain.py)
    if args.heads_off is not None:
        from transformer_viz.cli.explain import translate_heads_off

        if not args.sentence:
            return fail("--heads-off translates one sentence given on the command line")
        print(translate_heads_off(ckpt, " ".join(args.sentence), args.heads_off))
        return 0
    decoding = ckpt.generation.override(args.beam, args.alpha, args.max_loop_repeats)
    if not args.sentence:
        lines = _translate_lines(ckpt, decoding, args.progress)
        sys.stdout.write("".join(line + "\n" for line in lines))
        return 0
    refuse_too_long(ckpt.tokenizer, " ".join(args.sentence), ckpt.config.max_len)
    try:
        run = run_sentence(ckpt, " ".join(args.sentence), beam_size=decoding.num_beams,
                           alpha=decoding.length_penalty, trace=False,
                           max_loop_repeats=decoding.max_loop_repeats)
    except InputError as exc:
        return fail(str(exc))
    for note in run.messages:
        print(f"note: {note}", file=sys.stderr)
    print(run.translation)
    return 0


def _translate_lines(ckpt, decoding, progress: bool) -> list[str]:
    """Standard input: one output line per input line (an empty line stays empty), translated in
    batches. Every line goes through the same input rules as a sentence on the command line or in
    the app; a line that breaks them is named on stderr and stays empty."""
    from transformer_viz.generation.evaluation import translate_texts
    from transformer_viz.text.tokenizer import InputError, encode_source

    lines = input_lines(read_stdin())
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
    texts = [used[i] for i in todo]
    outputs = translate_texts(ckpt.model, ckpt.tokenizer, texts, decoding,
                              progress=progress) if todo else []
    result = [""] * len(lines)
    for i, out in zip(todo, outputs):
        result[i] = out
    return result


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

    ckpt = load_translation_model(args.checkpoint, args.dtype)
    decoding = ckpt.generation.override(args.beam, args.alpha, args.max_loop_repeats)
    refuse_too_long(ckpt.tokenizer, " ".join(args.sentence), ckpt.config.max_len)
    try:
        run = run_sentence(ckpt, " ".join(args.sentence), beam_size=decoding.num_beams,
                           alpha=decoding.length_penalty,
                           max_loop_repeats=decoding.max_loop_repeats)
    except InputError as exc:
        return fail(str(exc))
    json.dump(_trace_json(run, args.values), sys.stdout, ensure_ascii=False,
              indent=None if args.values else 1)
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
    json.dump(_trace_json(run, False) | {"config": run.config.to_dict()}, sys.stdout,
              ensure_ascii=False, indent=1)
    print()
    return 0


def add_commands(sub) -> None:
    from transformer_viz.models.transformer.config import PRESETS

    p = sub.add_parser("translate", help="translate a sentence, or standard input line by line")
    model_flags(p)
    p.add_argument("--progress", action="store_true", help="show a progress bar for standard input")
    p.add_argument("--heads-off", metavar="HEADS", default=None,
                   help="switch attention heads off, e.g. enc.0.3,dec.1.0,cross.2.5 "
                        "(KIND.LAYER.HEAD; greedy decoding)")
    p.add_argument("sentence", nargs="*", help="the sentence; omit it to read standard input")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser("trace",
                       help="JSON with tokens, IDs, translation and every traced tensor's shape")
    model_flags(p)
    p.add_argument("--values", action="store_true", help="include every tensor's numbers")
    p.add_argument("sentence", nargs="+")
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("shapes",
                       help="the trace JSON from a randomly initialised model of a preset config")
    p.add_argument("--config", default="base", choices=sorted(PRESETS), help="preset config")
    p.add_argument("sentence", nargs="*", help="optional sentence (default: an example)")
    p.set_defaults(func=cmd_shapes)
