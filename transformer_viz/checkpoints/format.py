"""Checkpoint directories: safetensors weights, config JSON, tokenizer, metadata JSON. No pickle
anywhere.

Layout::

    DIR/model.safetensors   weights (float16 or float32), read with safetensors: no code is executed
    DIR/config.json         ModelConfig, rebuilds the model (or RNNConfig, marked "arch": "rnn":
                            a recurrent encoder–decoder, see rnn.py; or ViTConfig, "arch": "vit":
                            the Vision Transformer of models/vit/, whose directory has no
                            tokenizer, see vision/digits.py; or DETRConfig, "arch": "detr": the toy
                            Detection Transformer of models/detr/, see vision/canvases.py)
    DIR/tokenizer/          the tokenizer, saved with save_pretrained (tokenizer.json is plain JSON)
    DIR/generation_config.json  decoding defaults (beam width, length penalty), transformers' format
    DIR/metadata.json       training data, hyper-parameters, per-epoch history, scores (the model
                            card data)
    DIR/README.md           the model card, human-readable, written from metadata.json
    DIR/language_stats.json token -> language and training source lengths, for the input warnings
                            (written by ``python -m transformer_viz language-stats``, see
                            text/language_stats.py)

A transformers Marian directory (config.json with "model_type": "marian", model.safetensors,
source.spm, target.spm and vocab.json, as ``save_pretrained`` writes it) loads too:
checkpoints/marian.py maps it onto our Transformer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.generation.decoding_defaults import (
    GenerationDefaults, load_generation_defaults, read_json_object)
from transformer_viz.models.registry import ARCHITECTURES, arch_name

# torch (and the models built on it) is imported only by the functions that touch weights: reading a
# checkpoint's config and model card stays cheap, so the app can draw its first page while torch
# loads.
if TYPE_CHECKING:
    import torch

    from transformer_viz.models.detr.config import DETRConfig
    from transformer_viz.models.detr.model import DETR
    from transformer_viz.models.rnn.config import RNNConfig
    from transformer_viz.models.rnn.model import RNNSeq2Seq
    from transformer_viz.models.transformer.config import ModelConfig
    from transformer_viz.models.transformer.model import Transformer
    from transformer_viz.models.vit.config import ViTConfig
    from transformer_viz.models.vit.model import ViT

WEIGHTS, CONFIG, METADATA = "model.safetensors", "config.json", "metadata.json"
TOKENIZER_DIR, CARD = "tokenizer", "README.md"
DTYPES = ("float32", "bfloat16")  # what a loaded model may compute in
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle", ".ckpt")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be loaded; the message says why and what is expected."""


@dataclass
class Checkpoint:
    # the recurrent models (rnn.py) offer what the engine uses of a Transformer
    model: Transformer | RNNSeq2Seq | ViT | DETR
    tokenizer: object  # None for the Vision Transformer and the DETR, which read pixels
    config: ModelConfig | RNNConfig | ViTConfig | DETRConfig
    metadata: dict = field(default_factory=dict)
    path: Path | None = None
    generation: GenerationDefaults = field(default_factory=GenerationDefaults)  # decoding defaults


def checkpoint_arch(directory: str | Path) -> str:
    """The model family config.json names (a key of models.registry.ARCHITECTURES: "transformer",
    "rnn", "vit", "detr", "gpt"), from config.json alone (no torch); "" when config.json cannot be
    read. A transformers Marian directory is a "transformer", a GPT-2 directory a "gpt"."""
    try:
        data = json.loads((Path(directory) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if isinstance(data, dict) and data.get("model_type") in ("marian", "gpt2"):
        return {"marian": "transformer", "gpt2": "gpt"}[data["model_type"]]
    return arch_name(data)


def refuse_pickles(path: Path) -> None:
    """Refuse anything but a directory with model.safetensors, looking at names only: a pickle is
    never opened."""
    if path.is_file():
        if path.suffix.lower() in PICKLE_SUFFIXES:
            raise CheckpointError(f"{path} is a pickle file. Pickle files are never loaded, "
                                  "because unpickling can run arbitrary code; a checkpoint is a "
                                  f"directory with {WEIGHTS} and {CONFIG}.")
        hint = f" (give its directory, {path.parent})" if path.name == WEIGHTS else ""
        raise CheckpointError(f"{path} is a file, not a checkpoint directory{hint}. A checkpoint "
                              f"is a directory with {WEIGHTS}, {CONFIG} and {TOKENIZER_DIR}/.")
    if not path.is_dir():
        raise CheckpointError(f"checkpoint directory {path} does not exist")
    if not (path / WEIGHTS).is_file():
        pickles = sorted(p.name for p in path.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES)
        if pickles:
            raise CheckpointError(f"{path} holds only pickle weights ({', '.join(pickles)}), which "
                                  "are never opened because unpickling can run arbitrary code. "
                                  f"Convert them to {WEIGHTS}.")
        raise CheckpointError(f"{path} has no {WEIGHTS}; a checkpoint directory needs {WEIGHTS} "
                              f"and {CONFIG}.")


def config_from_dict(data: dict):
    """The config of whichever of our model families ``data`` (config.json's contents) names
    ("arch"; the Transformer's ModelConfig when absent; see models.registry), checked field by field
    before anything is built. ValueError or TypeError when it is not one."""
    name = arch_name(data)
    if not name:
        raise ValueError(f"unknown model family {data.get('arch')!r}; known: "
                         f"{', '.join(ARCHITECTURES)}")
    cfg = ARCHITECTURES[name].config_type().from_dict(data)
    cfg.validate()
    return cfg


def read_weights(path: Path, expected: dict[str, torch.Tensor], tied: set[str],
                 optional: set[str] = frozenset(), rename=None,
                 skip=None) -> dict[str, torch.Tensor]:
    """Check the safetensors header (names, shapes, dtypes) against the model, then read the
    tensors. A name in ``tied`` may be missing when another of them is stored; a name in
    ``optional`` may be missing. ``rename`` maps a stored name to the one ``expected`` uses (an
    older file's naming); a stored name for which ``skip`` is true is not read (a buffer the model
    rebuilds)."""
    from safetensors import SafetensorError, safe_open

    problems = []
    try:
        with safe_open(str(path), framework="pt") as f:
            stored_as = {(rename or str)(n): n for n in f.keys() if not (skip and skip(n))}
            names = list(stored_as)
            for name in names:
                tensor_slice = f.get_slice(stored_as[name])
                shape, dtype = tuple(tensor_slice.get_shape()), tensor_slice.get_dtype()
                if name not in expected:
                    problems.append(f"unexpected tensor {name}")
                elif shape != tuple(expected[name].shape):
                    problems.append(f"{name} has shape {shape}, {CONFIG} needs "
                                    f"{tuple(expected[name].shape)}")
                elif dtype not in ("F16", "BF16", "F32", "F64"):
                    problems.append(f"{name} has dtype {dtype}, expected floating point")
            stored = set(names)
            missing = [n for n in expected if n not in stored and n not in optional
                       and not (n in tied and tied & stored)]
            problems += [f"missing tensor {n}" for n in missing]
            if problems:
                more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
                raise CheckpointError(f"{path} does not match {CONFIG}: " + "; ".join(problems[:5])
                                      + more)
            tensors = {name: f.get_tensor(stored_as[name]) for name in names}
    except CheckpointError:
        raise
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{path} is damaged or truncated and cannot be read "
                              f"({exc}).") from exc
    import torch

    bad = [name for name, t in tensors.items() if not bool(torch.isfinite(t).all())]
    if bad:
        raise CheckpointError(f"{path} holds NaN or infinite values in {', '.join(bad[:5])}")
    return tensors


def read_generation_defaults(path: Path, vocab_size: int,
                             beam_scoring: str = "gnmt") -> GenerationDefaults:
    """The checkpoint's decoding defaults, any problem as a CheckpointError."""
    try:
        generation = load_generation_defaults(path, beam_scoring)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc
    if any(i >= vocab_size for i in generation.suppress_ids):
        raise CheckpointError(f"{path}: bad_words_ids names a token outside the vocabulary of "
                              f"{vocab_size}")
    return generation


def hf_model_type(path: Path) -> str:
    """config.json's transformers ``model_type`` ("marian", "gpt2"); "" for our own checkpoints or
    no config."""
    try:
        model_type = json.loads((path / CONFIG).read_text(encoding="utf-8")).get("model_type", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return model_type if isinstance(model_type, str) else ""


def is_marian_dir(path: Path) -> bool:
    return hf_model_type(path) == "marian"


def read_metadata(directory: str | Path) -> dict:
    """metadata.json as a dict ({} when there is none). JSON only, no torch: cheap enough for a
    sidebar."""
    path = Path(directory) / METADATA
    if not path.is_file():
        return {}
    try:
        return read_json_object(path)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc



