"""The commands that train a translation model, ``train`` (the Transformer) and ``train-rnn`` (a GRU
encoder-decoder, with or without attention), and the flags made from a training configuration's
fields, which the image models' training commands use too."""

from __future__ import annotations

import argparse
import dataclasses
import json

from transformer_viz.cli.common import data_flags, fail

# TrainConfig fields as flags (--src-lang is --src, --config takes a preset name); defaults live in
# the dataclass.
TRAIN_FLAG_NAMES = {"src_lang": "--src", "tgt_lang": "--tgt"}
TRAIN_FLAG_HELP = {
    "config": "model preset (base, small, tiny; for train-rnn: rnn, rnn-attn, tiny)",
    "lr": "Adam's learning rate (train-rnn)",
    "lr_decay": "factor applied to the learning rate after an epoch without a better validation "
                "BLEU",
    "clip": "gradient-norm clipping",
    "tokenizer": "tokenizer directory (the shipped de-en Transformer's, so the models share one "
                 "vocabulary)",
    "model_overrides": 'JSON changes to the preset, e.g. \'{"dropout": 0.2}\'',
    "max_minutes": "stop after the epoch that would pass this wall-clock budget (0: no limit)",
    "multi30k_copies": "times Multi30k's training pairs appear in one epoch",
    "tatoeba_copies": "times Tatoeba's training pairs appear in one epoch (0: Multi30k only)",
    "init_from": "warm start from this checkpoint directory (its vocabulary may differ)",
    "continue_from": "go on training this checkpoint (its tokenizer, weights, step and history; "
                     "Adam restarts)",
    "rewarmup": "after --continue-from, steps over which the learning rate ramps up again from 0",
    "cooldown_start": "the step after which the learning rate falls linearly to zero (0: no "
                      "cool-down)",
    "cooldown_steps": "steps over which the cool-down brings the learning rate to zero",
    "num_beams": "decoding default written to the checkpoint's generation_config.json",
    "length_penalty": "length-penalty exponent α written to generation_config.json",
    "lang": "train-gpt: the language whose sentences it learns to complete (en or de)",
    "model": 'train-gpt: the model\'s sizes as JSON, e.g. \'{"d_model": 256, "N": 4}\'',
    "min_lr_fraction": "train-gpt: where the cosine decay ends, as a fraction of --lr",
    "weight_decay": "train-gpt: AdamW's weight decay on matrices",
    "amp": "auto (fp16 on CUDA), bf16, or off",
    "warmup_epochs": "train-vit: epochs of linear learning-rate warm-up before the cosine decay",
    "shift": "train-vit: each training image moved by up to this many pixels (0: no augmentation)",
    "steps": "train-detr: optimizer steps (batches of fresh canvases)",
    "warmup_steps": "train-detr: steps of linear learning-rate warm-up before the cosine decay",
    "eval_every": "train-detr: steps between checks on 200 canvases of the validation seed",
    "val_seed": "train-detr: the seed of the canvases watched during training",
}


def dataclass_flags(p: argparse.ArgumentParser, cls, names: dict[str, str]) -> None:
    """One flag per dataclass field, with the field's default and type."""
    for f in dataclasses.fields(cls):
        flag = names.get(f.name, "--" + f.name.replace("_", "-"))
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        kind = json.loads if isinstance(default, dict) else type(default)
        p.add_argument(flag, dest=f.name, type=kind, default=default,
                       help=f"{TRAIN_FLAG_HELP.get(f.name, f.name.replace('_', ' '))} (default: "
                            f"{default!r})")


def config_from(args, cls):
    """The training configuration ``cls`` (a dataclass) from the flags dataclass_flags made of its
    fields."""
    return cls(**{name: getattr(args, name) for name in cls.__dataclass_fields__})


def cmd_train(args) -> int:
    from transformer_viz.training.translation import TrainConfig, train

    if (args.cooldown_start > 0) != (args.cooldown_steps > 0):
        return fail("--cooldown-start and --cooldown-steps go together: the step after which the "
                    "learning rate falls, and over how many steps it reaches zero")
    train(config_from(args, TrainConfig), args.run_dir, data_dir=args.data_dir,
          tatoeba_dir=args.tatoeba_dir, out_dir=args.out, progress=not args.no_progress)
    return 0


def cmd_train_rnn(args) -> int:
    from transformer_viz.training.rnn import RNNTrainConfig, train_rnn

    train_rnn(config_from(args, RNNTrainConfig), args.run_dir, data_dir=args.data_dir,
              tatoeba_dir=args.tatoeba_dir, out_dir=args.out, progress=not args.no_progress)
    return 0


def cmd_train_gpt(args) -> int:
    from transformer_viz.training.gpt import GPTTrainConfig, train_gpt

    # --no-progress keeps the per-epoch rows and drops the running batch lines
    def log(message: str) -> None:
        if not (args.no_progress and message.startswith("epoch ")):
            print(message, flush=True)

    train_gpt(config_from(args, GPTTrainConfig), args.run_dir, data_dir=args.data_dir,
              tatoeba_dir=args.tatoeba_dir, out_dir=args.out, log=log)
    return 0


def _run_flags(p: argparse.ArgumentParser, out_help: str) -> None:
    """What both training commands take besides their configuration's fields."""
    data_flags(p)
    p.add_argument("--run-dir", required=True,
                   help="working directory: tokenizer, resumable state, logs")
    p.add_argument("--out", help=out_help)
    p.add_argument("--no-progress", action="store_true")


def add_commands(sub) -> None:
    from transformer_viz.training.rnn import RNNTrainConfig
    from transformer_viz.training.translation import TrainConfig

    p = sub.add_parser("train", help="train on Multi30k (and Tatoeba, with --tatoeba-copies)")
    _run_flags(p, "write the selected model here as a checkpoint directory")
    dataclass_flags(p, TrainConfig, TRAIN_FLAG_NAMES)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("train-rnn", help="train a GRU encoder-decoder (--config rnn) or the same "
                                         "with attention (--config rnn-attn) with the de-en "
                                         "tokenizer")
    _run_flags(p, "export the best epoch here as a checkpoint directory (after every better epoch)")
    dataclass_flags(p, RNNTrainConfig, TRAIN_FLAG_NAMES)
    p.set_defaults(func=cmd_train_rnn)

    from transformer_viz.training.gpt import GPTTrainConfig

    p = sub.add_parser("train-gpt",
                       help="train a decoder-only model (GPT) on one language's side of Multi30k "
                            "and Tatoeba")
    _run_flags(p, "export the best epoch here as a checkpoint directory (after every better epoch)")
    dataclass_flags(p, GPTTrainConfig, {})
    p.set_defaults(func=cmd_train_gpt)
