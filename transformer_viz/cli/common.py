"""What the commands share: the default checkpoint, loading a translation model (checkpoints of the
image families are sent to their own commands, found through models.registry), standard input, the
one-line error, and the flags that several commands take."""

from __future__ import annotations

import argparse
import sys

from transformer_viz.core.paths import CHECKPOINTS_DIR

DEFAULT_CHECKPOINT = CHECKPOINTS_DIR / "de-en"
MAX_BEAM = 32  # wider beams cost memory (beam × vocabulary per step) and rarely help
# What each family that reads pixels is trained on, for the message that sends its checkpoint to
# `<family>-eval`.
IMAGE_DATA = {"vit": "digits", "detr": "digits on canvases"}


def fail(message: str) -> int:
    """A problem the user can fix: one line on stderr and exit code 2, as argparse does for bad
    arguments."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def load_translation_model(path, dtype: str = "float32", device: str = "cpu"):
    """A translation model (a Transformer or a recurrent one); the image models are refused with a
    reason."""
    from transformer_viz.checkpoints import CheckpointError, checkpoint_arch, load_checkpoint
    from transformer_viz.models.registry import ARCHITECTURES

    family = ARCHITECTURES.get(checkpoint_arch(path))
    if family is not None and not family.reads_text:
        raise CheckpointError(f"{path} is the {family.title} "
                              f"({IMAGE_DATA.get(family.name, 'images')}), not a translation "
                              f"model; see `python -m transformer_viz {family.name}-eval`")
    if family is not None and family.name == "gpt":
        raise CheckpointError(f"{path} is a decoder-only model, which completes text and does not "
                              f"translate; see `python -m transformer_viz complete`")
    if device == "auto":  # batch work (evaluation) runs on a GPU when there is one
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return load_checkpoint(path, dtype=dtype, device=device)


def refuse_too_long(tokenizer, text: str, max_tokens: int) -> None:
    """A sentence the model cannot read whole is an error on the command line (one line, exit code
    2), where the app cuts it and says so: a script must never take the translation of a part for
    that of the whole."""
    from transformer_viz.text.tokenizer import DEFAULT_MAX_CHARS, InputError, encode_source

    encoded = encode_source(tokenizer, text, max_tokens=max_tokens)
    if encoded.clean.truncated_chars:
        raise InputError(f"the sentence is too long: {len(text.strip()):,} characters, at most "
                         f"{DEFAULT_MAX_CHARS:,} are read; split it into shorter sentences")
    if encoded.truncated_tokens:
        raise InputError(f"the sentence is too long: {len(encoded.ids) + encoded.truncated_tokens} "
                         f"tokens with the closing one, the model reads at most {max_tokens}; "
                         "split it into shorter sentences")


def require_family(path, name: str) -> None:
    """Refuse a checkpoint of another model family than ``name`` (a key of
    models.registry.ARCHITECTURES)."""
    from transformer_viz.checkpoints import CheckpointError, checkpoint_arch
    from transformer_viz.models.registry import architecture

    if checkpoint_arch(path) != name:
        raise CheckpointError(f"{path} is not a {architecture(name).title} checkpoint "
                              f"(config.json's \"arch\" is not \"{name}\")")


def read_stdin() -> str:
    # Bytes that are not UTF-8 become U+FFFD (shown as <unk>) instead of stopping the whole run.
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer.read().decode("utf-8", errors="replace")
    return sys.stdin.read()


def input_lines(text: str) -> list[str]:
    """Lines split at \\n only (str.splitlines would also split at form feed, U+2028, …, and so
    change the line count); a final newline does not start another line; \\r\\n counts as one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# --- flags ----------------------------------------------------------------------------------------


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def beam_width(text: str) -> int:
    value = _whole_number(text)
    if not 1 <= value <= MAX_BEAM:
        raise argparse.ArgumentTypeError(f"must be between 1 (greedy) and {MAX_BEAM}, got {value}")
    return value


def non_negative(text: str) -> int:
    value = _whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (off) or more, got {value}")
    return value


def model_flags(p: argparse.ArgumentParser) -> None:
    """The checkpoint, its arithmetic and its decoding: the flags of every command that translates
    one sentence."""
    from transformer_viz.checkpoints import DTYPES

    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="weights and arithmetic: float32, or bfloat16 (faster on CPUs with "
                        "bfloat16 units)")
    decoding_flags(p)


def decoding_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=beam_width, default=None,
                   help=f"beam width, 1 (greedy) to {MAX_BEAM}; default: the checkpoint's "
                        "generation_config.json")
    p.add_argument("--alpha", type=float, default=None,
                   help="length-penalty exponent α for beam search; default: the checkpoint's "
                        "generation_config.json")
    p.add_argument("--max-loop-repeats", type=non_negative, default=None, metavar="N",
                   help="repetition guard: a unit of up to three subwords may occur at most N "
                        "times in a row (0: off); default: the checkpoint's generation_config.json")


def data_flags(p: argparse.ArgumentParser, tatoeba_help: str = "") -> None:
    from transformer_viz.text.corpora import DATA_DIR_ENV, TATOEBA_DIR_ENV

    p.add_argument("--data-dir", help=f"Multi30k directory (or set {DATA_DIR_ENV})")
    p.add_argument("--tatoeba-dir",
                   help=f"Tatoeba directory{tatoeba_help} (or set {TATOEBA_DIR_ENV})")
