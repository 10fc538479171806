"""Command line: ``transformer-viz`` (the installed command) or ``python -m transformer_viz``,
``{app,translate,trace,shapes,export-lecture,explain,patch,tuned-lens,complete,train,train-gpt,
train-rnn,train-vit,vit-eval,train-detr,detr-eval,bleu-by-length,
select-decoding,evaluate,language-stats,export-hf,download-data}``.

Each module here adds a group of commands (``add_commands``); a command parses its flags, calls the
library and prints. Problems with the input, the checkpoint or the data end in one line on stderr
and exit code 2. ``app`` starts the Streamlit app (cli/app.py).
"""

from __future__ import annotations

import argparse
import os
import sys

from transformer_viz.cli import (app, completion, data, explain, images, lecture, lens, patching,
                                 scoring, training, translation)

# In this order in --help.
COMMAND_GROUPS = (app, translation, lecture, explain, patching, lens, completion, training, images,
                  scoring, data)


def build_parser(prog: str = "python -m transformer_viz") -> argparse.ArgumentParser:
    # Raw help text keeps each command on one line of the top-level --help.
    parser = argparse.ArgumentParser(prog=prog, formatter_class=argparse.RawTextHelpFormatter,
                                     description="Run, inspect and train an encoder–decoder "
                                                 "Transformer.")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.add_commands(sub)
    return parser


def main(argv: list[str] | None = None, prog: str = "python -m transformer_viz") -> int:
    """Run a command; problems with the input, the checkpoint or the data give a one-line message on
    stderr and exit code 2 (as argparse does for bad arguments), never a traceback."""
    from transformer_viz.checkpoints import CheckpointError
    from transformer_viz.text.corpora import DataError
    from transformer_viz.text.tokenizer import InputError

    try:
        args = build_parser(prog).parse_args(argv)
    # argparse has printed its message; return its code so main() never exits
    except SystemExit as exc:
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


def console_main() -> int:
    """The installed ``transformer-viz`` command (pyproject.toml's [project.scripts])."""
    return main(prog="transformer-viz")
