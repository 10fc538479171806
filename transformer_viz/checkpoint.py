"""Checkpoint directories: safetensors weights, config JSON, tokenizer, metadata JSON. No pickle anywhere.

Layout::

    DIR/model.safetensors   weights (float16 or float32), read with safetensors: no code is executed
    DIR/config.json         ModelConfig, rebuilds the model
    DIR/tokenizer/          the tokenizer, saved with save_pretrained (tokenizer.json is plain JSON)
    DIR/metadata.json       training data, hyper-parameters, per-epoch history, scores (the model card data)
    DIR/README.md           the model card, human-readable, written from metadata.json
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .config import ModelConfig
from .model import Transformer

WEIGHTS, CONFIG, METADATA, TOKENIZER_DIR, CARD = "model.safetensors", "config.json", "metadata.json", "tokenizer", "README.md"
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle", ".ckpt")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be loaded; the message says why and what is expected."""


@dataclass
class Checkpoint:
    model: Transformer
    tokenizer: object
    config: ModelConfig
    metadata: dict = field(default_factory=dict)
    path: Path | None = None


def state_dict_for_saving(model: Transformer) -> dict[str, torch.Tensor]:
    # Tied embeddings appear under several names; safetensors stores each tensor once.
    seen: dict[int, str] = {}
    out = {}
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen:
            continue
        seen[tensor.data_ptr()] = name
        out[name] = tensor.detach().cpu().contiguous()
    return out


def save_checkpoint(directory: str | Path, model: Transformer, tokenizer, metadata: dict | None = None,
                    half: bool = False) -> Path:
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
    (directory / CARD).write_text(model_card(model.cfg, meta))
    return directory


def _refuse_pickles(path: Path) -> None:
    if path.is_file():
        kind = "a pickle file" if path.suffix in PICKLE_SUFFIXES else "a file"
        raise CheckpointError(f"{path} is {kind}, not a checkpoint directory. Checkpoints are directories with "
                              f"{WEIGHTS} and {CONFIG}; pickle files are never loaded because unpickling can run code.")
    if not path.is_dir():
        raise CheckpointError(f"checkpoint directory {path} does not exist")
    if not (path / WEIGHTS).is_file():
        pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickles:
            raise CheckpointError(f"{path} holds only pickle weights ({', '.join(pickles)}), which are never "
                                  f"opened because unpickling can run code. Convert them to {WEIGHTS}.")
        raise CheckpointError(f"{path} has no {WEIGHTS}; a checkpoint directory needs {WEIGHTS} and {CONFIG}.")


def load_config(directory: str | Path) -> ModelConfig:
    path = Path(directory) / CONFIG
    try:
        return ModelConfig.load(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent} has no {CONFIG}") from None
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path} is not a valid model config: {exc}") from exc


def load_checkpoint(directory: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Rebuild the model from config.json, fill it from model.safetensors, load the tokenizer."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from .tokenizer import load_tokenizer

    path = Path(directory)
    _refuse_pickles(path)
    cfg = load_config(path)
    model = Transformer(cfg)
    try:
        tensors = load_file(str(path / WEIGHTS))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path / WEIGHTS} is damaged or truncated and cannot be read ({exc}).") from exc
    expected = model.state_dict()
    problems = []
    for name, tensor in tensors.items():
        if name not in expected:
            problems.append(f"unexpected tensor {name}")
        elif tuple(tensor.shape) != tuple(expected[name].shape):
            problems.append(f"{name} has shape {tuple(tensor.shape)}, config needs {tuple(expected[name].shape)}")
    stored = set(tensors)
    tied = {"tgt_embed.weight", "src_embed.weight"} if cfg.tie_embeddings else set()
    missing = [n for n in expected if n not in stored and not (n in tied and tied & stored)]
    problems += [f"missing tensor {n}" for n in missing]
    if problems:
        raise CheckpointError(f"{path / WEIGHTS} does not match {CONFIG}: " + "; ".join(problems[:5])
                              + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=False)
    model.to(device).eval()
    tok_dir = path / TOKENIZER_DIR
    if not (tok_dir / "tokenizer.json").is_file():
        raise CheckpointError(f"{tok_dir} has no tokenizer.json")
    tokenizer = load_tokenizer(tok_dir)
    if len(tokenizer) != cfg.vocab_size:
        raise CheckpointError(f"tokenizer has {len(tokenizer)} tokens but the model's vocabulary is {cfg.vocab_size}")
    metadata = {}
    if (path / METADATA).is_file():
        try:
            metadata = json.loads((path / METADATA).read_text())
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"{path / METADATA} is not valid JSON: {exc}") from exc
    return Checkpoint(model, tokenizer, cfg, metadata, path)


def model_card(cfg: ModelConfig, meta: dict) -> str:
    """A readable summary of metadata.json."""
    lines = [f"# {meta.get('name', 'transformer-viz checkpoint')}", ""]
    if meta.get("description"):
        lines += [meta["description"], ""]
    lines += ["## Model", "", f"- Parameters: {meta.get('parameters', '?'):,}" if isinstance(meta.get('parameters'), int)
              else f"- Parameters: {meta.get('parameters', '?')}",
              f"- d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N}, vocabulary {cfg.vocab_size}, "
              f"dropout {cfg.dropout}, {'Pre' if cfg.pre_ln else 'Post'}-LN, tied embeddings: {cfg.tie_embeddings}",
              f"- Weights stored as {meta.get('weights_dtype', 'float32')}", ""]
    for key, title in (("data", "Data"), ("training", "Training"), ("hardware", "Hardware")):
        if meta.get(key):
            lines += [f"## {title}", ""]
            value = meta[key]
            if isinstance(value, dict):
                lines += [f"- {k}: {v}" for k, v in value.items()]
            else:
                lines.append(str(value))
            lines.append("")
    if meta.get("scores"):
        lines += ["## Scores", "", "| split | decoding | sacreBLEU | chrF | BLEU (lowercased, tokenized) |",
                  "|---|---|---|---|---|"]
        for row in meta["scores"]:
            lines.append(f"| {row.get('split')} | {row.get('decoding')} | {row.get('bleu', float('nan')):.2f} | "
                         f"{row.get('chrf', float('nan')):.2f} | {row.get('bleu_lower_tok', float('nan')):.2f} |")
        lines.append("")
    if meta.get("history"):
        lines += ["## Training history", "", "| epoch | step | train loss | val loss | val BLEU | minutes |",
                  "|---|---|---|---|---|---|"]
        for h in meta["history"]:
            lines.append(f"| {h.get('epoch')} | {h.get('step')} | {h.get('train_loss', float('nan')):.3f} | "
                         f"{h.get('val_loss', float('nan')):.3f} | {h.get('val_bleu', float('nan')):.2f} | "
                         f"{h.get('elapsed_s', 0) / 60:.1f} |")
        lines.append("")
    return "\n".join(lines)
