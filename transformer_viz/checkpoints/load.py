"""Checkpoint directories: safetensors weights, config JSON, tokenizer, metadata JSON. No pickle anywhere.

Layout::

    DIR/model.safetensors   weights (float16 or float32), read with safetensors: no code is executed
    DIR/config.json         ModelConfig, rebuilds the model (or RNNConfig, marked "arch": "rnn": a recurrent
                            encoder–decoder, see rnn.py; or ViTConfig, "arch": "vit": the Vision Transformer
                            of vit.py, whose directory has no tokenizer, see digits.py; or DETRConfig,
                            "arch": "detr": the toy Detection Transformer of detr.py, see canvases.py)
    DIR/tokenizer/          the tokenizer, saved with save_pretrained (tokenizer.json is plain JSON)
    DIR/generation_config.json  decoding defaults (beam width, length penalty), transformers' format
    DIR/metadata.json       training data, hyper-parameters, per-epoch history, scores (the model card data)
    DIR/README.md           the model card, human-readable, written from metadata.json
    DIR/language_stats.json token -> language and training source lengths, for the input warnings
                            (written by ``python -m transformer_viz language-stats``, see checks.py)

A transformers Marian directory (config.json with "model_type": "marian", model.safetensors, source.spm,
target.spm and vocab.json, as ``save_pretrained`` writes it) loads too: hf.py maps it onto our Transformer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.models.config import ModelConfig
from transformer_viz.text.decoding_defaults import (GenerationDefaults, load_generation_defaults, read_json_object, save_generation_defaults)
from transformer_viz.text.tokenizer import BOS, EOS, PAD, UNK

# torch (and the model built on it) is imported only by the functions that touch weights: reading a
# checkpoint's config and model card stays cheap, so the app can draw its first page while torch loads.
if TYPE_CHECKING:
    import torch

    from transformer_viz.models.transformer import Transformer
    from transformer_viz.models.rnn import RNNConfig, RNNSeq2Seq
    from transformer_viz.models.detr import DETR, DETRConfig
    from transformer_viz.models.vit import ViT, ViTConfig

WEIGHTS, CONFIG, METADATA, TOKENIZER_DIR, CARD = "model.safetensors", "config.json", "metadata.json", "tokenizer", "README.md"
DTYPES = ("float32", "bfloat16")  # what a loaded model may compute in
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle", ".ckpt")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be loaded; the message says why and what is expected."""


@dataclass
class Checkpoint:
    model: Transformer | RNNSeq2Seq | ViT | DETR  # the recurrent models (rnn.py) offer what the engine uses of a Transformer
    tokenizer: object  # None for the Vision Transformer and the DETR, which read pixels
    config: ModelConfig | RNNConfig | ViTConfig | DETRConfig
    metadata: dict = field(default_factory=dict)
    path: Path | None = None
    generation: GenerationDefaults = field(default_factory=GenerationDefaults)  # decoding defaults


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


def is_rnn_config(data: dict) -> bool:
    """A config.json's contents describe a recurrent model (rnn.py) rather than a Transformer."""
    return isinstance(data, dict) and data.get("arch", "transformer") == "rnn"


def is_vit_config(data: dict) -> bool:
    """A config.json's contents describe the Vision Transformer (vit.py)."""
    return isinstance(data, dict) and data.get("arch") == "vit"


def is_detr_config(data: dict) -> bool:
    """A config.json's contents describe the toy Detection Transformer (detr.py)."""
    return isinstance(data, dict) and data.get("arch") == "detr"


def checkpoint_arch(directory: str | Path) -> str:
    """"rnn", "vit", "detr" or "transformer", from config.json alone (no torch); "" when config.json cannot be read."""
    try:
        data = json.loads((Path(directory) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(data, dict):
        return ""
    if is_rnn_config(data):
        return "rnn"
    return data["arch"] if is_vit_config(data) or is_detr_config(data) else "transformer"


def save_checkpoint(directory: str | Path, model: Transformer, tokenizer, metadata: dict | None = None,
                    half: bool = False, generation: GenerationDefaults | None = None) -> Path:
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
    (directory / CARD).write_text(model_card(model.cfg, meta))
    return directory


def _refuse_pickles(path: Path) -> None:
    """Refuse anything but a directory with model.safetensors, looking at names only: a pickle is never opened."""
    if path.is_file():
        if path.suffix.lower() in PICKLE_SUFFIXES:
            raise CheckpointError(f"{path} is a pickle file. Pickle files are never loaded, because unpickling can "
                                  f"run arbitrary code; a checkpoint is a directory with {WEIGHTS} and {CONFIG}.")
        hint = f" (give its directory, {path.parent})" if path.name == WEIGHTS else ""
        raise CheckpointError(f"{path} is a file, not a checkpoint directory{hint}. A checkpoint is a directory "
                              f"with {WEIGHTS}, {CONFIG} and {TOKENIZER_DIR}/.")
    if not path.is_dir():
        raise CheckpointError(f"checkpoint directory {path} does not exist")
    if not (path / WEIGHTS).is_file():
        pickles = sorted(p.name for p in path.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES)
        if pickles:
            raise CheckpointError(f"{path} holds only pickle weights ({', '.join(pickles)}), which are never "
                                  f"opened because unpickling can run arbitrary code. Convert them to {WEIGHTS}.")
        raise CheckpointError(f"{path} has no {WEIGHTS}; a checkpoint directory needs {WEIGHTS} and {CONFIG}.")


# Bounds on what a config.json may ask for, so that a damaged or hostile file cannot make us allocate
# without limit (the paper's "big" model has d_model 1024, d_ff 4096, h 16, N 6).
_CONFIG_LIMITS = {"vocab_size": (5, 1_000_000), "d_model": (2, 8192), "d_ff": (1, 65536), "h": (1, 256),
                  "N": (1, 64), "max_len": (2, 65536), "pad_id": (PAD, PAD), "bos_id": (BOS, BOS),
                  "eos_id": (EOS, EOS), "unk_id": (UNK, UNK)}
_MAX_PARAMETERS = 2_000_000_000


def _field_problems(cfg, integers: dict[str, tuple[int, int]], rates: tuple[str, ...] = (),
                    positive: tuple[str, ...] = (), flags: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with a config's fields: integers in their [low, high], rates in [0, 1), positive
    numbers, true/false flags (a JSON true is no integer here, and 1 is no flag)."""
    problems = []
    for name, (low, high) in integers.items():
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{name} must be an integer, not {value!r}")
        elif not low <= value <= high:
            problems.append(f"{name} = {value} is outside [{low}, {high}]")
    for name in rates:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
            problems.append(f"{name} must be a number in [0, 1), not {value!r}")
    for name in positive:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < float("inf"):
            problems.append(f"{name} must be a positive number, not {value!r}")
    for name in flags:
        if not isinstance(getattr(cfg, name), bool):
            problems.append(f"{name} must be true or false, not {getattr(cfg, name)!r}")
    return problems


def validate_config(cfg: ModelConfig, fixed_ids: bool = True) -> None:
    """Types and ranges of every field, checked before anything is allocated. ``fixed_ids=False`` (an
    imported Marian model, hf.py): the special tokens may have any IDs in the vocabulary."""
    limits = dict(_CONFIG_LIMITS)
    if not fixed_ids:
        vocab = cfg.vocab_size if isinstance(cfg.vocab_size, int) else 0
        limits.update({name: (0, vocab - 1) for name in ("pad_id", "bos_id", "eos_id", "unk_id")})
    problems = _field_problems(cfg, limits, ("dropout", "attn_dropout"), ("pe_base", "layer_norm_eps"),
                               ("pre_ln", "tie_embeddings", "scale_embedding", "logits_bias"))
    if not problems:
        per_layer = 4 * cfg.d_model * cfg.d_model + 2 * cfg.d_model * cfg.d_ff
        estimate = 3 * cfg.N * per_layer + (1 if cfg.tie_embeddings else 3) * cfg.vocab_size * cfg.d_model
        if estimate > _MAX_PARAMETERS:
            problems.append(f"the model would have about {estimate:,} parameters, more than {_MAX_PARAMETERS:,}")
    if problems:
        raise CheckpointError("; ".join(problems))


_RNN_LIMITS = {"vocab_size": (5, 1_000_000), "d_emb": (1, 8192), "d_hidden": (1, 8192), "max_len": (2, 65536),
               "pad_id": (PAD, PAD), "bos_id": (BOS, BOS), "eos_id": (EOS, EOS), "unk_id": (UNK, UNK)}


def validate_rnn_config(cfg) -> None:
    """The recurrent model's fields, checked as :func:`validate_config` checks a Transformer's."""
    problems = _field_problems(cfg, _RNN_LIMITS, ("dropout",), flags=("attention",))
    if not problems:
        d_in, d_h = cfg.d_emb + cfg.d_hidden, cfg.d_hidden
        estimate = cfg.vocab_size * cfg.d_emb + 3 * (cfg.d_emb + d_h) * d_h + 3 * (d_in + d_h) * d_h + 3 * d_h * d_h
        if estimate > _MAX_PARAMETERS:
            problems.append(f"the model would have about {estimate:,} parameters, more than {_MAX_PARAMETERS:,}")
    if problems:
        raise CheckpointError("; ".join(problems))


_VIT_LIMITS = {"image_size": (1, 1024), "patch_size": (1, 1024), "n_classes": (1, 100_000), "d_model": (2, 8192),
               "d_ff": (1, 65536), "h": (1, 256), "N": (1, 64)}


def validate_vit_config(cfg) -> None:
    """The Vision Transformer's fields, checked as :func:`validate_config` checks a Transformer's."""
    problems = _field_problems(cfg, _VIT_LIMITS, ("dropout", "attn_dropout"), ("layer_norm_eps",), ("pre_ln",))
    if not problems and cfg.N * (4 * cfg.d_model ** 2 + 2 * cfg.d_model * cfg.d_ff) > _MAX_PARAMETERS:
        problems.append(f"the model would have more than {_MAX_PARAMETERS:,} parameters")
    if problems:
        raise CheckpointError("; ".join(problems))


_DETR_LIMITS = {"canvas_size": (4, 1024), "backbone_channels": (1, 1024), "n_queries": (1, 1024),
                "n_classes": (1, 100_000), "d_model": (2, 8192), "d_ff": (1, 65536), "h": (1, 256),
                "n_encoder_layers": (1, 64), "n_decoder_layers": (1, 64)}


def validate_detr_config(cfg) -> None:
    """The toy DETR's fields, checked as :func:`validate_config` checks a Transformer's."""
    problems = _field_problems(cfg, _DETR_LIMITS, ("dropout", "attn_dropout"), ("layer_norm_eps",), ("pre_ln",))
    layers = 0 if problems else cfg.n_encoder_layers + 2 * cfg.n_decoder_layers
    if layers * (4 * cfg.d_model ** 2 + 2 * cfg.d_model * cfg.d_ff) > _MAX_PARAMETERS:
        problems.append(f"the model would have more than {_MAX_PARAMETERS:,} parameters")
    if problems:
        raise CheckpointError("; ".join(problems))


def load_config(directory: str | Path):
    """The checkpoint's ModelConfig, its RNNConfig when config.json says "arch": "rnn", its ViTConfig for
    "arch": "vit", its DETRConfig for "arch": "detr"."""
    path = Path(directory) / CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        if data.get("model_type") == "marian":
            from transformer_viz.checkpoints.marian import marian_model_config

            cfg = marian_model_config(data, path.parent)
        elif is_rnn_config(data):
            from transformer_viz.models.rnn import RNNConfig

            cfg = RNNConfig.from_dict(data)
            validate_rnn_config(cfg)
        elif is_vit_config(data):
            from transformer_viz.models.vit import ViTConfig

            cfg = ViTConfig.from_dict(data)
            validate_vit_config(cfg)
        elif is_detr_config(data):
            from transformer_viz.models.detr import DETRConfig

            cfg = DETRConfig.from_dict(data)
            validate_detr_config(cfg)
        else:
            cfg = ModelConfig.from_dict(data)
            validate_config(cfg)
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent} has no {CONFIG}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError, ArithmeticError, CheckpointError,
            OSError) as exc:
        raise CheckpointError(f"{path} is not a valid model config: {exc}") from exc
    return cfg


def _read_weights(path: Path, expected: dict[str, torch.Tensor], tied: set[str],
                  optional: set[str] = frozenset()) -> dict[str, torch.Tensor]:
    """Check the safetensors header (names, shapes, dtypes) against the model, then read the tensors.
    A name in ``tied`` may be missing when another of them is stored; a name in ``optional`` may be missing."""
    from safetensors import SafetensorError, safe_open

    problems = []
    try:
        with safe_open(str(path), framework="pt") as f:
            names = list(f.keys())
            for name in names:
                tensor_slice = f.get_slice(name)
                shape, dtype = tuple(tensor_slice.get_shape()), tensor_slice.get_dtype()
                if name not in expected:
                    problems.append(f"unexpected tensor {name}")
                elif shape != tuple(expected[name].shape):
                    problems.append(f"{name} has shape {shape}, {CONFIG} needs {tuple(expected[name].shape)}")
                elif dtype not in ("F16", "BF16", "F32", "F64"):
                    problems.append(f"{name} has dtype {dtype}, expected floating point")
            stored = set(names)
            missing = [n for n in expected if n not in stored and n not in optional
                       and not (n in tied and tied & stored)]
            problems += [f"missing tensor {n}" for n in missing]
            if problems:
                raise CheckpointError(f"{path} does not match {CONFIG}: " + "; ".join(problems[:5])
                                      + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
            tensors = {name: f.get_tensor(name) for name in names}
    except CheckpointError:
        raise
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{path} is damaged or truncated and cannot be read ({exc}).") from exc
    import torch

    bad = [name for name, t in tensors.items() if not bool(torch.isfinite(t).all())]
    if bad:
        raise CheckpointError(f"{path} holds NaN or infinite values in {', '.join(bad[:5])}")
    return tensors


def load_checkpoint(directory: str | Path, device: str | torch.device = "cpu", dtype: str = "float32") -> Checkpoint:
    """Rebuild the model from config.json, fill it from model.safetensors, load the tokenizer.

    ``dtype`` "bfloat16" keeps the weights (and so every product) in bfloat16: about a third faster on a
    CPU with bfloat16 units, logits within a few hundredths; traces are still recorded in float32.
    Only safetensors and JSON are read; any problem raises :class:`CheckpointError` with the reason.
    """
    import torch

    from transformer_viz.models.transformer import Transformer

    if dtype not in DTYPES:
        raise CheckpointError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    from transformer_viz.text.tokenizer import load_tokenizer

    path = Path(directory)
    _refuse_pickles(path)
    cfg = load_config(path)
    if getattr(cfg, "arch", "") in ("vit", "detr"):
        return _load_image_model(path, cfg, device, dtype)
    if isinstance(cfg, ModelConfig) and cfg.logits_bias and _is_marian_dir(path):
        from transformer_viz.checkpoints.marian import load_marian

        return load_marian(path, cfg, device, dtype)
    try:
        if isinstance(cfg, ModelConfig):
            model = Transformer(cfg)
        else:
            from transformer_viz.models.rnn import RNNSeq2Seq

            model = RNNSeq2Seq(cfg)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{path / CONFIG} describes a model that cannot be built: {exc}") from exc
    tied = {"tgt_embed.weight", "src_embed.weight"} if getattr(cfg, "tie_embeddings", False) else set()
    tensors = _read_weights(path / WEIGHTS, model.state_dict(), tied)
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=False)
    model.to(device=device, dtype=getattr(torch, dtype)).eval()
    tok_dir = path / TOKENIZER_DIR
    if not (tok_dir / "tokenizer.json").is_file():
        raise CheckpointError(f"{tok_dir} has no tokenizer.json")
    try:
        tokenizer = load_tokenizer(tok_dir)
    except Exception as exc:  # the Rust parser raises plain Exception for malformed JSON
        raise CheckpointError(f"{tok_dir / 'tokenizer.json'} cannot be loaded: {exc}") from exc
    if len(tokenizer) != cfg.vocab_size:
        raise CheckpointError(f"tokenizer has {len(tokenizer)} tokens but the model's vocabulary is {cfg.vocab_size}")
    generation = read_generation_defaults(path, cfg.vocab_size)
    return Checkpoint(model, tokenizer, cfg, load_metadata(path), path, generation)


def read_generation_defaults(path: Path, vocab_size: int, beam_scoring: str = "gnmt") -> GenerationDefaults:
    """The checkpoint's decoding defaults, any problem as a CheckpointError."""
    try:
        generation = load_generation_defaults(path, beam_scoring)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc
    if any(i >= vocab_size for i in generation.suppress_ids):
        raise CheckpointError(f"{path}: bad_words_ids names a token outside the vocabulary of {vocab_size}")
    return generation


def _is_marian_dir(path: Path) -> bool:
    try:
        return json.loads((path / CONFIG).read_text(encoding="utf-8")).get("model_type") == "marian"
    except (OSError, ValueError, AttributeError):
        return False


def _load_image_model(path: Path, cfg, device, dtype: str) -> Checkpoint:
    """The Vision Transformer (vit.py) or the DETR (detr.py): weights and config, no tokenizer, no generation
    defaults."""
    import torch

    from transformer_viz.models.detr import DETR
    from transformer_viz.models.vit import ViT

    try:
        model = (ViT if cfg.arch == "vit" else DETR)(cfg)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{path / CONFIG} describes a model that cannot be built: {exc}") from exc
    tensors = _read_weights(path / WEIGHTS, model.state_dict(), set())
    model.load_state_dict({k: v.float() for k, v in tensors.items()})
    model.to(device=device, dtype=getattr(torch, dtype)).eval()
    return Checkpoint(model, None, cfg, load_metadata(path), path)


def save_image_model(directory: str | Path, model, metadata: dict, card) -> Path:
    """The ViT's or the DETR's directory: float32 weights, its config (whose ``arch`` says which), metadata.json
    (with the parameter count) and the model card that ``card(cfg, metadata)`` writes. No tokenizer."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(directory / WEIGHTS), metadata={"format": "pt"})
    model.cfg.save(directory / CONFIG)
    meta = {**metadata, "arch": model.cfg.arch, "parameters": model.num_parameters(), "weights_dtype": "float32"}
    (directory / METADATA).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    (directory / CARD).write_text(card(model.cfg, meta))
    return directory


def load_metadata(directory: str | Path) -> dict:
    """metadata.json as a dict ({} when there is none; for a Marian directory without one, its name and
    languages, see hf.marian_metadata). JSON only, no torch: cheap enough for a sidebar."""
    path = Path(directory) / METADATA
    if not path.is_file():
        if _is_marian_dir(Path(directory)):
            from transformer_viz.checkpoints.marian import marian_metadata

            return marian_metadata(Path(directory))
        return {}
    try:
        return read_json_object(path)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc


def _architecture_line(cfg) -> str:
    if isinstance(cfg, ModelConfig):
        return (f"- d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N}, vocabulary {cfg.vocab_size}, "
                f"dropout {cfg.dropout}, {'Pre' if cfg.pre_ln else 'Post'}-LN, tied embeddings: {cfg.tie_embeddings}")
    return (f"- {cfg.name}: one-layer unidirectional GRU encoder and GRU decoder, d_emb {cfg.d_emb}, "
            f"d_hidden {cfg.d_hidden}, vocabulary {cfg.vocab_size}, dropout {cfg.dropout}; "
            + ("additive attention (Bahdanau et al., 2015) over the encoder states" if cfg.attention else
               "no attention: the decoder sees the source only through the encoder's last state")
            + "; embeddings shared by source, target and output")


def _length_table(entry: dict | None) -> list[str]:
    """The model card's "BLEU by source length" section (metadata's ``bleu_by_length``)."""
    if not entry or not entry.get("buckets"):
        return []
    rows = entry["buckets"]
    lines = ["## BLEU by source length", "",
             f"{entry.get('split', '?')}, {entry.get('decoding', 'greedy')} decoding; sentences bucketed by their "
             f"number of source {entry.get('tokens', 'subword tokens')}; sacreBLEU within each bucket "
             f"(all sentences: {entry.get('bleu', float('nan')):.2f}). Written by "
             f"`python -m transformer_viz bleu-by-length`.", "",
             "| source tokens | " + " | ".join(str(r["bucket"]) for r in rows) + " |",
             "|---|" + "---|" * len(rows),
             "| sentences | " + " | ".join(str(r["sentences"]) for r in rows) + " |",
             "| sacreBLEU | " + " | ".join("–" if r["bleu"] is None else f"{r['bleu']:.2f}" for r in rows) + " |", ""]
    return lines


def model_card(cfg, meta: dict) -> str:
    """A readable summary of metadata.json."""
    lines = [f"# {meta.get('name', 'transformer-viz checkpoint')}", ""]
    if meta.get("description"):
        lines += [meta["description"], ""]
    lines += ["## Model", "", f"- Parameters: {meta.get('parameters', '?'):,}" if isinstance(meta.get('parameters'), int)
              else f"- Parameters: {meta.get('parameters', '?')}", _architecture_line(cfg),
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
        lines += ["## Scores", "", "| split | decoding | sentences | sacreBLEU | chrF | BLEU (lowercased, tokenized) "
                  "| outputs with a repetition |", "|---|---|---|---|---|---|---|"]
        for row in meta["scores"]:
            rep = row.get("repetition_rate")
            lines.append(f"| {row.get('split')} | {row.get('decoding')} | {row.get('sentences', '')} | "
                         f"{row.get('bleu', float('nan')):.2f} | {row.get('chrf', float('nan')):.2f} | "
                         f"{row.get('bleu_lower_tok', float('nan')):.2f} | "
                         f"{'' if rep is None else f'{100 * rep:.2f} %'} |")
        lines += ["", "sacreBLEU: cased, detokenized, 13a tokenization. A repetition is a token, or a loop of up "
                  "to three subwords, repeated four or more times in a row.", ""]
    lines += _length_table(meta.get("bleu_by_length"))
    if meta.get("history"):
        both = any("tatoeba_dev_bleu" in h for h in meta["history"])
        titles = ["Multi30k val BLEU", "Tatoeba dev BLEU"] if both else ["val BLEU"]
        keys = ["val_bleu", "tatoeba_dev_bleu"] if both else ["val_bleu"]
        lines += ["## Training history", "", "| epoch | step | train loss | val loss | " + " | ".join(titles)
                  + " | minutes |", "|---|---|---|---|" + "---|" * len(titles) + "---|"]
        for h in meta["history"]:
            lines.append(f"| {h.get('epoch')} | {h.get('step')} | {h.get('train_loss', float('nan')):.3f} | "
                         f"{h.get('val_loss', float('nan')):.3f} | "
                         + " | ".join(f"{h.get(k, float('nan')):.2f}" for k in keys)
                         + f" | {h.get('elapsed_s', 0) / 60:.1f} |")
        if both:
            lines.append("\nGreedy BLEU after each epoch; the selection score is their mean.")
        lines.append("")
    return "\n".join(lines)
