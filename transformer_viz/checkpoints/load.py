"""Loading a checkpoint directory of any model family: the registry (models.registry) says what to
build from config.json, the weights are checked against it before they are read, and a model that
reads text gets its tokenizer and decoding defaults. A transformers Marian directory loads too
(checkpoints.marian).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.checkpoints.format import (CONFIG, DTYPES, TOKENIZER_DIR, WEIGHTS, Checkpoint,
                                                CheckpointError, config_from_dict, hf_model_type,
                                                is_marian_dir, read_generation_defaults,
                                                read_metadata, read_weights, refuse_pickles)
from transformer_viz.checkpoints.gpt2 import (gpt2_metadata, gpt2_model_config, is_gpt2_config,
                                              load_gpt2)
from transformer_viz.checkpoints.marian import load_marian, marian_metadata, marian_model_config
from transformer_viz.models.registry import ARCHITECTURES
from transformer_viz.models.transformer.config import ModelConfig

if TYPE_CHECKING:
    import torch


def load_checkpoint(directory: str | Path, device: str | torch.device = "cpu",
                    dtype: str = "float32") -> Checkpoint:
    """Rebuild the model from config.json, fill it from model.safetensors, load the tokenizer.

    ``dtype`` "bfloat16" keeps the weights (and so every product) in bfloat16: about a third faster
    on a CPU with bfloat16 units, logits within a few hundredths; traces are still recorded in
    float32. Only safetensors and JSON are read; any problem raises :class:`CheckpointError` with
    the reason.
    """
    import torch

    if dtype not in DTYPES:
        raise CheckpointError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    path = Path(directory)
    refuse_pickles(path)
    cfg = load_config(path)
    if isinstance(cfg, ModelConfig) and cfg.logits_bias and is_marian_dir(path):
        return load_marian(path, cfg, device, dtype)
    if hf_model_type(path) == "gpt2":
        return load_gpt2(path, cfg, device, dtype)
    family = ARCHITECTURES[getattr(cfg, "arch", "transformer")]
    try:
        model = family.model_type()(cfg)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{path / CONFIG} describes a model that cannot be built: "
                              f"{exc}") from exc
    tied = ({"tgt_embed.weight", "src_embed.weight"} if getattr(cfg, "tie_embeddings", False)
            else set())
    tensors = read_weights(path / WEIGHTS, model.state_dict(), tied)
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=not family.reads_text)
    model.to(device=device, dtype=getattr(torch, dtype)).eval()
    # the ViT and the DETR read pixels: no tokenizer, no decoding defaults
    if not family.reads_text:
        return Checkpoint(model, None, cfg, load_metadata(path), path)
    tokenizer = _load_tokenizer(path / TOKENIZER_DIR)
    if len(tokenizer) != cfg.vocab_size:
        raise CheckpointError(f"tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
                              f"is {cfg.vocab_size}")
    generation = read_generation_defaults(path, cfg.vocab_size)
    return Checkpoint(model, tokenizer, cfg, load_metadata(path), path, generation)


def _load_tokenizer(tok_dir: Path):
    from transformer_viz.text.tokenizer import load_tokenizer

    if not (tok_dir / "tokenizer.json").is_file():
        raise CheckpointError(f"{tok_dir} has no tokenizer.json")
    try:
        return load_tokenizer(tok_dir)
    except Exception as exc:  # the Rust parser raises plain Exception for malformed JSON
        raise CheckpointError(f"{tok_dir / 'tokenizer.json'} cannot be loaded: {exc}") from exc


def load_config(directory: str | Path):
    """The checkpoint's config: our model families through the registry (format.config_from_dict),
    or a transformers Marian config mapped onto ours. No torch for a Transformer's; any problem is a
    CheckpointError."""
    path = Path(directory) / CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        if data.get("model_type") == "marian":
            return marian_model_config(data, path.parent)
        if is_gpt2_config(data):
            return gpt2_model_config(data)
        return config_from_dict(data)
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent} has no {CONFIG}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError, ArithmeticError,
            CheckpointError, OSError) as exc:
        raise CheckpointError(f"{path} is not a valid model config: {exc}") from exc


def load_metadata(directory: str | Path) -> dict:
    """metadata.json as a dict ({} when there is none; for a Marian directory without one, its name
    and languages, see marian.marian_metadata). JSON only, no torch: cheap enough for a sidebar."""
    directory = Path(directory)
    if not (directory / "metadata.json").is_file() and is_marian_dir(directory):
        return marian_metadata(directory)
    if not (directory / "metadata.json").is_file() and hf_model_type(directory) == "gpt2":
        return gpt2_metadata(directory)
    return read_metadata(directory)
