"""Decoding speed on the same weights: our engine against transformers' MarianMTModel.generate, and
CTranslate2.

    python bench/hf_speed.py --threads 2                  # all of test_2016_flickr, four cells
    python bench/hf_speed.py --threads 2 --limit 320 --json out.json
    python bench/hf_speed.py --threads 2 --profile        # also: where the time goes

The checkpoint is exported to a transformers directory (MarianMTModel) and, when ctranslate2 is
installed, converted to a CTranslate2 model (transformer_viz/interop/ctranslate2.py), loaded as
float32 and as int8. Every engine decodes the same source token IDs (our tokenizer, ending in </s>)
in the same batches: consecutive sentences of the split in file order, batch 1 and batch 32, greedy
and beam 5, each engine with its own beam search and the checkpoint's length penalty (the algorithms
differ, so beam outputs may too: the agreement is reported), no repetition guard, and the same
length limit (generation.decoding.max_output_length). The batches are cut into rounds; in every
round each engine decodes the same batches, the order of the engines rotating round by round, so
a noisy moment hits them all alike. Sentences per second = sentences / total time of an engine in
a cell. Timings use time.perf_counter; the first batch of each cell is decoded once by every
engine, untimed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.generation.decoding import beam_search, greedy_decode, max_output_length  # noqa: E402
from transformer_viz.text.corpora import encode_pairs, read_split  # noqa: E402
from transformer_viz.text.tokenizer import output_ids  # noqa: E402

CELLS = [("greedy", 1), ("greedy", 32), ("beam5", 1), ("beam5", 32)]


def padded(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, :len(r)] = torch.tensor(r)
    return out  # (B, S)


class Ours:
    name = "ours"

    def __init__(self, ckpt, alpha: float) -> None:
        self.model, self.cfg, self.alpha = ckpt.model.eval(), ckpt.config, alpha

    def translate(self, rows: list[list[int]], beam: int) -> list[list[int]]:
        src = padded(rows, self.cfg.pad_id)
        if beam == 1:
            return greedy_decode(self.model, src, record=False).tokens
        return beam_search(self.model, src, beam_size=beam, alpha=self.alpha, record=False).tokens


class Transformers:
    name = "transformers"

    def __init__(self, model, cfg, alpha: float) -> None:
        self.model, self.cfg, self.alpha = model.eval(), cfg, alpha

    @torch.no_grad()
    def translate(self, rows: list[list[int]], beam: int) -> list[list[int]]:
        src = padded(rows, self.cfg.pad_id)
        # greedy: transformers warns on it
        beam_options = {"length_penalty": self.alpha} if beam > 1 else {}
        out = self.model.generate(input_ids=src, attention_mask=src != self.cfg.pad_id,
                                  num_beams=beam, do_sample=False,
                                  max_new_tokens=max_output_length(self.cfg, src.size(1)),
                                  **beam_options)
        # r[0]: the start token
        return [output_ids(r[1:], self.cfg.eos_id, self.cfg.pad_id) for r in out.tolist()]


class CTranslate2:
    def __init__(self, ckpt, compute_type: str, threads: int, alpha: float) -> None:
        from transformer_viz.interop.ctranslate2 import CT2Translator

        self.name, self.alpha = f"ct2-{compute_type}", alpha
        # converted from the weights in memory
        self.translator = CT2Translator(ckpt, compute_type, threads)

    def translate(self, rows: list[list[int]], beam: int) -> list[list[int]]:
        return self.translator.translate_ids(rows, beam, self.alpha)


def load_transformers(ckpt, out: Path):
    """The checkpoint exported by the project's exporter to a transformers directory, loaded from
    there."""
    from transformers import MarianMTModel
    from transformers.utils import logging

    from transformer_viz.interop.marian_export import export_hf

    logging.set_verbosity_error()  # not its per-call notes on max_length beside max_new_tokens

    export_hf(ckpt, out)
    return MarianMTModel.from_pretrained(out)


def build_engines(ckpt, args, work: Path) -> list:
    """Ours, transformers on the exported directory, and CTranslate2 in each compute type when
    installed."""
    alpha = ckpt.generation.length_penalty
    engines = [Ours(ckpt, alpha),
               Transformers(load_transformers(ckpt, work / "hf"), ckpt.config, alpha)]
    if importlib.util.find_spec("ctranslate2") is None:
        print("ctranslate2 is not installed: its columns are left out "
              "(pip install -r bench/requirements.txt)")
        return engines
    for compute_type in args.ct2_types:
        engines.append(CTranslate2(ckpt, compute_type, args.threads, alpha))
    return engines


def time_cell(engines, batches, beam: int, rounds: int) -> tuple[dict, dict]:
    """Seconds per engine over all batches, and every engine's outputs in batch order."""
    for engine in engines:  # warm-up, untimed
        engine.translate(batches[0], beam)
    seconds = {e.name: 0.0 for e in engines}
    outputs = {e.name: [None] * len(batches) for e in engines}
    size = -(-len(batches) // rounds)
    for r in range(rounds):
        part = range(r * size, min(len(batches), (r + 1) * size))
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for engine in order:
            start = time.perf_counter()
            for i in part:
                outputs[engine.name][i] = engine.translate(batches[i], beam)
            seconds[engine.name] += time.perf_counter() - start
    return seconds, {name: [row for batch in out for row in batch] for name, out in outputs.items()}


def profile_ops(engine, batches, beam: int, top: int) -> tuple[float, list[tuple[str, float]]]:
    """Total CPU milliseconds of torch operators, and the operators taking the most (self time,
    share of the total) while decoding ``batches``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches:
            engine.translate(batch, beam)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1
    return total / 1000, [(e.key, e.self_cpu_time_total / total) for e in events[:top]]


def agreement(outputs: dict, reference: str = "ours") -> dict:
    """Share of sentences whose output IDs are identical to ``reference``'s, per other engine."""
    ref = outputs[reference]
    return {name: sum(a == b for a, b in zip(out, ref)) / len(ref)
            for name, out in outputs.items() if name != reference}


def run_cells(engines, sources: list[list[int]], args) -> list[dict]:
    rows = []
    for method, batch in CELLS:
        if args.cells and f"{method}@{batch}" not in args.cells:
            continue
        beam = 5 if method == "beam5" else 1
        batches = [sources[i:i + batch] for i in range(0, len(sources), batch)]
        seconds, outputs = time_cell(engines, batches, beam, args.rounds)
        rate = {name: len(sources) / s for name, s in seconds.items()}
        row = {"decoding": method, "batch": batch, "sentences": len(sources), "seconds": seconds,
               "sentences_per_second": rate,
               "ours_over_transformers": rate["ours"] / rate["transformers"],
               "over_ours": {n: r / rate["ours"] for n, r in rate.items() if n != "ours"},
               "identical_to_ours": agreement(outputs)}
        rows.append(row)
        print_row(row)
    return rows


def print_row(row: dict) -> None:
    rates = "  ".join(f"{n} {r:7.1f}" for n, r in row["sentences_per_second"].items())
    same = "  ".join(f"{n} {a:6.1%}" for n, a in row["identical_to_ours"].items())
    print(f"{row['decoding']:6s} batch {row['batch']:2d}: sentences/s  {rates}\n"
          f"{'':16s}ours ÷ transformers {row['ours_over_transformers']:.2f}×   "
          + "  ".join(f"{n} ÷ ours {v:.2f}×" for n, v in row["over_ours"].items()
                      if n != "transformers")
          + f"\n{'':16s}identical to ours: {same}", flush=True)


def print_table(rows: list[dict]) -> None:
    names = list(rows[0]["sentences_per_second"])
    print("\n| decoding | batch | " + " | ".join(f"{n} sent/s" for n in names)
          + " | ours ÷ transformers | " + " | ".join(f"{n} ÷ ours" for n in names[2:])
          + " | identical to ours (" + ", ".join(names[1:]) + ") |")
    print("|---|---:|" + "---:|" * (len(names) + 1 + len(names[2:])) + "---|")
    for r in rows:
        rates = " | ".join(f"{r['sentences_per_second'][n]:.1f}" for n in names)
        over = " | ".join(f"{r['over_ours'][n]:.2f}×" for n in names[2:])
        same = ", ".join(f"{r['identical_to_ours'][n]:.1%}" for n in names[1:])
        print(f"| {r['decoding']} | {r['batch']} | {rates} | {r['ours_over_transformers']:.2f}× | "
              + (f"{over} | " if over else "") + f"{same} |")


def run_profiles(engines, sources: list[list[int]], args) -> dict:
    """Where the time goes: the top operators of each engine that runs on torch, batch 32, greedy
    and beam 5."""
    result = {}
    batches = [sources[i:i + 32] for i in range(0, min(len(sources), args.profile_sentences), 32)]
    for engine in engines[:2]:
        for method, beam in (("greedy", 1), ("beam5", 5)):
            total_ms, ops = profile_ops(engine, batches, beam, args.profile_top)
            result[f"{engine.name} {method}"] = {"total_ms": total_ms, "top": ops}
            print(f"\n{engine.name}, {method}, batch 32, {sum(map(len, batches))} sentences: "
                  f"{total_ms:.0f} ms of CPU time in torch operators; by operator (self time):")
            for key, share in ops:
                print(f"  {share:6.1%}  {key}")
    return result


def ms_per_token(engines, sources: list[list[int]], beam: int, rounds: int = 2) -> dict:
    """Milliseconds per output token (+ 1 for </s>) at batch 1, engines alternating round by
    round."""
    seconds, tokens = {e.name: 0.0 for e in engines}, {e.name: 0 for e in engines}
    for r in range(rounds):
        for engine in engines if r % 2 == 0 else engines[::-1]:
            start = time.perf_counter()
            outputs = [engine.translate([row], beam)[0] for row in sources]
            seconds[engine.name] += time.perf_counter() - start
            tokens[engine.name] += sum(len(out) + 1 for out in outputs)
    return {name: 1000 * seconds[name] / tokens[name] for name in seconds}


def narrow_checkpoint(ckpt):
    """The checkpoint's shape with d_model 32, d_ff 64, 4 heads and random weights: its arithmetic
    costs next to nothing, so decoding it measures an engine's fixed cost per step (Python,
    dispatch, bookkeeping)."""
    import dataclasses

    from transformer_viz.models.transformer.model import Transformer

    torch.manual_seed(0)
    cfg = dataclasses.replace(ckpt.config, d_model=32, d_ff=64, h=4, dropout=0.0)
    return dataclasses.replace(ckpt, model=Transformer(cfg).eval(), config=cfg)


def run_overhead(ckpt, engines, sources: list[list[int]], args, work: Path) -> dict:
    """Where the time goes at batch 1: milliseconds per output token for the real model and for the
    narrow one (:func:`narrow_checkpoint`), ours and transformers."""
    alpha = ckpt.generation.length_penalty
    narrow = narrow_checkpoint(ckpt)
    narrow_engines = [Ours(narrow, alpha),
                      Transformers(load_transformers(narrow, work / "hf-narrow"), narrow.config,
                                   alpha)]
    result, part = {}, sources[:args.profile_sentences // 4]
    for method, beam in (("greedy", 1), ("beam5", 5)):
        real = ms_per_token(engines[:2], part, beam)
        fixed = ms_per_token(narrow_engines, part, beam)
        result[method] = {"model": real, "narrow_model": fixed}
        print(f"\nbatch 1, {method}, {len(part)} sentences, ms per output token: this model "
              + ", ".join(f"{n} {v:.2f}" for n, v in real.items())
              + "; d_model 32 (fixed cost per step) "
              + ", ".join(f"{n} {v:.2f}" for n, v in fixed.items()))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="checkpoints/de-en")
    parser.add_argument("--data-dir", help="Multi30k directory (or set TRANSFORMER_VIZ_DATA)")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--limit", type=int, default=0, help="only the first n sentences")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5, help="alternation rounds per cell")
    parser.add_argument("--cells", nargs="*", help="e.g. greedy@32 beam5@1 (default: all four)")
    parser.add_argument("--ct2-types", nargs="*", default=["float32", "int8"],
                        help="CTranslate2 compute types")
    parser.add_argument("--profile", action="store_true",
                        help="also: ours and transformers by torch operator (batch 32), and ms "
                             "per output token at batch 1 for this model and for a d_model-32 one "
                             "(the fixed cost per step)")
    parser.add_argument("--profile-sentences", type=int, default=320)
    parser.add_argument("--profile-top", type=int, default=10)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ckpt = load_checkpoint(args.checkpoint)
    src_lang, tgt_lang = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
    pairs = read_split(args.data_dir, args.split, src_lang, tgt_lang, limit=args.limit or None)
    sources = [s for s, _ in encode_pairs(ckpt.tokenizer, pairs, ckpt.config.max_len)]
    with tempfile.TemporaryDirectory() as tmp:
        engines = build_engines(ckpt, args, Path(tmp))
        load = os.getloadavg()
        print(f"{args.checkpoint}, {args.split}: {len(sources)} sentences, "
              f"{torch.get_num_threads()} threads, "
              f"length penalty {ckpt.generation.length_penalty}, "
              f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
              f"engines: {', '.join(e.name for e in engines)}", flush=True)
        rows = run_cells(engines, sources, args)
        print_table(rows)
        profiles = run_profiles(engines, sources, args) if args.profile else {}
        if args.profile:
            profiles["batch 1 ms per output token"] = run_overhead(ckpt, engines, sources, args,
                                                                   Path(tmp))
    report = {"checkpoint": args.checkpoint, "split": args.split, "sentences": len(sources),
              "threads": args.threads, "rounds": args.rounds, "load_average_before": load,
              "load_average_after": os.getloadavg(), "torch": torch.__version__, "cells": rows,
              "profiles": profiles}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
