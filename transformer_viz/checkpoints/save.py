"""Writing checkpoint directories: weights as safetensors, config, tokenizer, decoding defaults,
metadata and the model card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.checkpoints.cards import model_card
from transformer_viz.checkpoints.format import CARD, CONFIG, METADATA, TOKENIZER_DIR, WEIGHTS
from transformer_viz.generation.decoding_defaults import (GenerationDefaults,
                                                         save_generation_defaults)

if TYPE_CHECKING:
    import torch

    from transformer_viz.models.transformer.model import Transformer


def unique_state_dict(model: Transformer) -> dict[str, torch.Tensor]:
    """The model's state dict with each tensor under its first name only, where the model holds
    it (no copy): tied embeddings appear under several names, and safetensors stores each tensor
    once. Training keeps its copies of the weights on the training device from this."""
    seen: set[int] = set()
    out = {}
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen:
            continue
        seen.add(tensor.data_ptr())
        out[name] = tensor  # state_dict()'s tensors are already detached
    return out


def state_dict_for_saving(model: Transformer) -> dict[str, torch.Tensor]:
    """unique_state_dict on the CPU, contiguous, as safetensors writes it."""
    return {name: t.cpu().contiguous() for name, t in unique_state_dict(model).items()}


def save_checkpoint(directory: str | Path, model: Transformer, tokenizer,
                    metadata: dict | None = None, half: bool = False,
                    generation: GenerationDefaults | None = None, card=model_card) -> Path:
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = state_dict_for_saving(model)
    if half:
        tensors = {k: v.half() if v.is_floating_point() else v for k, v in tensors.items()}
    save_file(tensors, str(directory / WEIGHTS), metadata={"format": "pt"})
    model.cfg.save(directory / CONFIG)
    tokenizer.save_pretrained(str(directory / TOKENIZER_DIR))
    meta = dict(metadata or {})
    meta.setdefault("parameters", model.num_parameters())
    meta["weights_dtype"] = "float16" if half else "float32"
    (directory / METADATA).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    save_generation_defaults(directory, generation or GenerationDefaults())
    (directory / CARD).write_text(card(model.cfg, meta))
    return directory


def save_image_model(directory: str | Path, model, metadata: dict, card) -> Path:
    """The ViT's or the DETR's directory: float32 weights, its config (whose ``arch`` says which),
    metadata.json (with the parameter count) and the model card that ``card(cfg, metadata)`` writes.
    No tokenizer."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(directory / WEIGHTS), metadata={"format": "pt"})
    model.cfg.save(directory / CONFIG)
    meta = {**metadata, "arch": model.cfg.arch, "parameters": model.num_parameters(),
            "weights_dtype": "float32"}
    (directory / METADATA).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    (directory / CARD).write_text(card(model.cfg, meta))
    return directory
