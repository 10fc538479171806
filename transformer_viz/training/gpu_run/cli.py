"""``python -m transformer_viz.training.gpu_run prepare|train|join``: one command per stage;
``losses`` measures returned or shipped checkpoints on the prepared splits."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from transformer_viz.training.gpu_run.data import DIRECTIONS, prepare
from transformer_viz.training.gpu_run.resume import InitRefused
from transformer_viz.training.gpu_run.returned import BLEU_TOLERANCE, join
from transformer_viz.training.gpu_run.train import GpuRunConfig, train_direction

PROG = "python -m transformer_viz.training.gpu_run"


def _config_flags(p: argparse.ArgumentParser) -> None:
    for f in GpuRunConfig.__dataclass_fields__.values():
        default = f.default_factory() if callable(f.default_factory) else f.default
        flag, help_text = "--" + f.name.replace("_", "-"), f"(default: {default!r})"
        if isinstance(default, bool):  # --compile / --no-compile
            p.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction,
                           default=default, help=help_text)
            continue
        kind = json.loads if isinstance(default, dict) else type(default)
        p.add_argument(flag, dest=f.name, type=kind, default=default, help=help_text)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=PROG,
                                  description="prepare, train (on a GPU) and join the base model")
    sub = top.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("prepare", help="encode the corpora with the joint BPE into a folder")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--tatoeba-dir", required=True)
    p.add_argument("--tokenizer", default="checkpoints/de-en/tokenizer",
                   help="reuse this tokenizer directory ('' learns a joint BPE of --vocab-size)")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--out", default="gpu-data")
    p.add_argument("--compress", action="store_true",
                   help="store the IDs xz-compressed (a third of the size)")
    p = sub.add_parser("train",
                       help="train one direction for a wall-clock budget; write its shards")
    p.add_argument("--data", default="gpu-data")
    p.add_argument("--out", default="gpu-out")
    _config_flags(p)
    p = sub.add_parser("join", help="check the returned shards, score them here, write checkpoints")
    p.add_argument("--returned", required=True,
                   help="the folder holding the files the GPU sent back")
    p.add_argument("--data", default="gpu-data")
    p.add_argument("--out", default="checkpoints")
    p.add_argument("--prefix", default="base-",
                   help="checkpoint directory name: PREFIX + direction")
    p.add_argument("--tolerance", type=float, default=BLEU_TOLERANCE)
    p.add_argument("--command", action="append", default=[],
                   help="a command to record in the model card")
    p = sub.add_parser("losses", help="label-smoothed loss of checkpoints on each training split "
                       "and dev set (--limit pairs of each, evenly spaced)")
    p.add_argument("checkpoints", nargs="+", help="checkpoint directories of one direction")
    p.add_argument("--data", default="gpu-data")
    p.add_argument("--limit", type=int, default=1000)
    return top


def _losses(directories: list[str], data: str, limit: int) -> int:
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.checkpoints.load import load_metadata
    from transformer_viz.training.gpu_run.data import Prepared, split_losses

    prepared = Prepared.load(data)
    for directory in directories:
        meta = load_metadata(directory)
        direction = f"{meta.get('src_lang')}-{meta.get('tgt_lang')}"
        if direction not in DIRECTIONS:
            print(f"gpu_run losses: {directory} translates {direction}, not de-en or en-de",
                  file=sys.stderr)
            return 2
        model = load_checkpoint(directory).model
        losses = split_losses(model, prepared, *DIRECTIONS[direction], limit)
        print(f"{directory} ({direction}, {limit} pairs each): "
              + ", ".join(f"{split} {loss:.3f}" for split, loss in losses.items()), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def log(message: str) -> None:
        print(message, flush=True)

    if args.stage == "prepare":
        prepare(args.out, args.data_dir, args.tatoeba_dir, args.tokenizer or None, args.vocab_size,
                log=log, compress=args.compress)
    elif args.stage == "train":
        fields = GpuRunConfig.__dataclass_fields__
        try:
            rc = GpuRunConfig(**{name: getattr(args, name) for name in fields})
        except ValueError as exc:
            print(f"gpu_run train: {exc}", file=sys.stderr)
            return 2
        for name in ("average_from", "cooldown_from", "late_dropout_from"):  # of the budget
            if not 0 <= getattr(rc, name) < 1:
                print(f"gpu_run train: --{name.replace('_', '-')} is a fraction of the budget, "
                      f"at least 0 and below 1, not {getattr(rc, name)}", file=sys.stderr)
                return 2
        command = " ".join([PROG] + [shlex.quote(a)
                                     for a in (sys.argv[1:] if argv is None else argv)])
        try:
            train_direction(rc, args.data, args.out, log=log, command=command)
        except InitRefused as exc:
            print(f"gpu_run train: {exc}", file=sys.stderr)
            return 2
    elif args.stage == "losses":
        return _losses(args.checkpoints, args.data, args.limit)
    else:
        reports = join(args.returned, args.data, args.out, args.command, args.tolerance,
                       args.prefix, log=log)
        print(json.dumps(reports, indent=1))
        if not any(r["written"] for r in reports.values()):
            return 1
    return 0
