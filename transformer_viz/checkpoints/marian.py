"""Hugging Face transformers' Marian models (``MarianMTModel``) as checkpoints: a Marian directory
loads onto our Transformer (the export, the reverse mapping, is interop.marian_export).

A Marian model is the same Post-LN encoder–decoder as ours, so the weights map one to one, with five
differences that are handled exactly (equivalence-tested in tests/unit/test_hf.py, logits within
1e-4):

- **The sinusoidal table.** Marian puts all sines before all cosines (column i < d/2: sin(pos /
  10000^(2i/d)), column d/2 + i: the matching cosine); ours interleaves them (column 2i: sin, 2i +
  1: cos). Reordering the coordinates of the residual stream by one fixed permutation
  (:func:`residual_permutation`) turns one table into the other, and keeps the whole function
  identical when it is applied to every weight that reads or writes the stream: the embedding rows,
  the columns of every Linear that reads it (W_Q, W_K, W_V, W_1), the rows and biases of every
  Linear that writes it (W_O, W_2), and LayerNorm's γ and β (LayerNorm's mean and variance do not
  depend on the order of the coordinates). The attention heads and the feed-forward's hidden units
  are not on the stream and keep their order.
- **The decoder's start token.** Marian starts decoding with <pad>; ours with <s>. The export writes
  our <s> as ``decoder_start_token_id``; the import makes <pad> our start token
  (``ModelConfig.bos_id``), and masks.target_mask never hides the first position.
- **final_logits_bias**, added to Marian's logits: zeros on export, ``ModelConfig.logits_bias`` on
  import.
- **Tied embeddings and the embedding scale**: Marian's ``model.shared`` is our tied embedding
  matrix and output projection; ``scale_embedding`` is our ×√d_model
  (``ModelConfig.scale_embedding``).
- **The activation** of the feed-forward network: relu for ours; gelu or swish in Marian configs
  (``ModelConfig.activation``).

What does not map is refused with the option's name (Pre-LN, untied or separate vocabularies,
unequal encoder and decoder sizes, another activation, …). Only safetensors and JSON are read (and
SentencePiece models, which are protobuf data): a directory with only pytorch_model.bin is refused
as every pickle is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.checkpoints.format import (METADATA, WEIGHTS, Checkpoint, CheckpointError,
                                                read_generation_defaults, read_metadata,
                                                read_weights)
from transformer_viz.generation.decoding_defaults import read_json_object
from transformer_viz.models.transformer.config import ModelConfig

if TYPE_CHECKING:
    import torch


MARIAN_TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json")
# Marian's -> ours
ACTIVATION_NAMES = {"relu": "relu", "gelu": "gelu", "swish": "swish", "silu": "swish"}
MARIAN_LAYER_NORM_EPS = 1e-5  # Marian's nn.LayerNorm is built with PyTorch's default
MARIAN_PE_BASE = 10000.0  # fixed in MarianSinusoidalPositionalEmbedding


def is_marian_config(data: dict) -> bool:
    """A config.json's contents describe a transformers Marian model."""
    return isinstance(data, dict) and data.get("model_type") == "marian"


def residual_permutation(d_model: int) -> torch.Tensor:
    """perm (d_model,): Marian's coordinate k of the residual stream is our coordinate perm[k], i.e.
    x_marian = x_ours[perm]: our even columns (the sines) first, then our odd ones (the cosines)."""
    import torch

    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def module_pairs(N: int) -> list[tuple[str, str, str]]:
    """(our module, Marian's module, how it touches the residual stream: "reads", "writes" or
    "norm")."""
    pairs = []
    for side, marian_side in (("encoder_layers", "model.encoder.layers"),
                              ("decoder_layers", "model.decoder.layers")):
        decoder = side == "decoder_layers"
        attentions = ([("self_attn", "self_attn")]
                      + ([("cross_attn", "encoder_attn")] if decoder else []))
        norms = (["self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"] if decoder
                 else ["self_attn_layer_norm", "final_layer_norm"])
        for i in range(N):
            ours, theirs = f"{side}.{i}", f"{marian_side}.{i}"
            for a, b in attentions:
                pairs += [(f"{ours}.{a}.w_{x}", f"{theirs}.{b}.{x}_proj", "reads") for x in "qkv"]
                pairs.append((f"{ours}.{a}.w_o", f"{theirs}.{b}.out_proj", "writes"))
            pairs += [(f"{ours}.ffn.w_1", f"{theirs}.fc1", "reads"),
                      (f"{ours}.ffn.w_2", f"{theirs}.fc2", "writes")]
            pairs += [(f"{ours}.norm{n + 1}.norm", f"{theirs}.{name}", "norm")
                      for n, name in enumerate(norms)]
    return pairs


def permuted(role: str, weight: torch.Tensor, bias: torch.Tensor, order: torch.Tensor) -> tuple:
    """Reorder the residual-stream coordinates of one module's weight (out, in) and bias (out,)."""
    if role == "reads":  # the stream is the input: reorder the columns
        return weight[:, order], bias
    # the stream is the output (or LayerNorm's γ, β): reorder the rows
    return weight[order], bias[order]


# --- import: the config (no torch) ----------------------------------------------------------------

# Options of older or other Marian/BART configs that our model cannot follow, with the value it
# needs.
_REQUIRED_OPTIONS = {"normalize_before": False, "normalize_embedding": False,
                     "add_final_layer_norm": False, "add_bias_logits": False,
                     "static_position_embeddings": True, "is_encoder_decoder": True,
                     "share_encoder_decoder_embeddings": True, "scale_embedding": (True, False),
                     "tie_word_embeddings": (True, False)}
_EQUAL_SIDES = (("encoder_layers", "decoder_layers"), ("encoder_ffn_dim", "decoder_ffn_dim"),
                ("encoder_attention_heads", "decoder_attention_heads"))


def _marian_problems(data: dict) -> list[str]:
    """What in a Marian config.json our model does not implement, each naming the option."""
    problems = []
    for key, allowed in _REQUIRED_OPTIONS.items():
        allowed = allowed if isinstance(allowed, tuple) else (allowed,)
        if key in data and not any(data[key] is a for a in allowed):
            problems.append(f"{key} = {json.dumps(data[key])} is not supported (needs "
                            f"{json.dumps(allowed[0])})")
    activation = data.get("activation_function", "gelu")
    if activation not in ACTIVATION_NAMES:
        problems.append(f"activation_function = {json.dumps(activation)} is not implemented "
                        f"(supported: {', '.join(ACTIVATION_NAMES)})")
    for a, b in _EQUAL_SIDES:
        if data.get(a) != data.get(b):
            problems.append(f"{a} = {data.get(a)} and {b} = {data.get(b)} differ (our model has "
                            "one value for both)")
    if data.get("decoder_vocab_size") not in (None, data.get("vocab_size")):
        problems.append(f"decoder_vocab_size = {data.get('decoder_vocab_size')} differs from "
                        "vocab_size")
    architectures = data.get("architectures") or ["MarianMTModel"]
    if "MarianMTModel" not in architectures:
        problems.append(f"architectures = {json.dumps(architectures)}: only MarianMTModel is "
                        "supported")
    return problems


def _tokenizer_special_ids(directory: Path) -> dict[str, int]:
    """unk / eos / pad IDs from the directory's vocab.json (or, for our own export,
    tokenizer.json)."""
    from transformer_viz.text.tokenizer import BOS, EOS, PAD, UNK

    if not (directory / "vocab.json").is_file() and (directory / "tokenizer.json").is_file():
        return {"unk": UNK, "eos": EOS, "pad": PAD, "bos": BOS}  # our BPE, exported by export_hf
    vocab, tokens = _read_vocab(directory), _special_tokens(directory)
    missing = [t for t in tokens.values() if t not in vocab]
    if missing:
        raise ValueError(f"vocab.json lacks the special token(s) {', '.join(missing)}")
    return {kind: vocab[token] for kind, token in tokens.items()}


def marian_model_config(data: dict, directory: str | Path) -> ModelConfig:
    """A Marian config.json as our ModelConfig; ValueError naming every option that does not map."""
    problems = _marian_problems(data)
    if problems:
        raise ValueError("this Marian model cannot be imported: " + "; ".join(problems))
    ids = _tokenizer_special_ids(Path(directory))
    for key, kind in (("pad_token_id", "pad"), ("eos_token_id", "eos")):
        if data.get(key) != ids[kind]:
            raise ValueError(f"{key} = {data.get(key)} but the vocabulary has its token at "
                             f"{ids[kind]}")
    start = data.get("decoder_start_token_id", data.get("pad_token_id"))
    cfg = ModelConfig(vocab_size=data.get("vocab_size"), d_model=data.get("d_model"),
                      d_ff=data.get("encoder_ffn_dim"), h=data.get("encoder_attention_heads"),
                      N=data.get("encoder_layers"), max_len=data.get("max_position_embeddings"),
                      dropout=data.get("dropout", 0.1),
                      attn_dropout=data.get("attention_dropout", 0.0), pe_base=MARIAN_PE_BASE,
                      pre_ln=False, tie_embeddings=data.get("tie_word_embeddings", True),
                      layer_norm_eps=MARIAN_LAYER_NORM_EPS,
                      activation=ACTIVATION_NAMES[data.get("activation_function", "gelu")],
                      scale_embedding=data.get("scale_embedding", False), logits_bias=True,
                      pad_id=data.get("pad_token_id"), bos_id=start,
                      eos_id=data.get("eos_token_id"), unk_id=ids["unk"])
    cfg.validate(fixed_ids=False)
    return cfg


# --- import: the tokenizer ------------------------------------------------------------------------

def _read_vocab(directory: Path) -> dict[str, int]:
    vocab = read_json_object(directory / "vocab.json")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in vocab.values()):
        raise ValueError(f"{directory / 'vocab.json'} must map pieces to non-negative integer IDs")
    if len(set(vocab.values())) != len(vocab):
        raise ValueError(f"{directory / 'vocab.json'} gives two pieces the same ID")
    return vocab


def _special_tokens(directory: Path) -> dict[str, str]:
    """The special tokens MarianTokenizer would use: tokenizer_config.json's, or its defaults."""
    path = directory / "tokenizer_config.json"
    config = read_json_object(path) if path.is_file() else {}
    if config.get("separate_vocabs"):
        raise ValueError("tokenizer_config.json: separate_vocabs = true is not supported "
                         "(our model has one vocabulary)")

    def token(key: str, default: str) -> str:
        value = config.get(key, default)
        # an AddedToken as JSON
        value = value.get("content", default) if isinstance(value, dict) else value
        return value if isinstance(value, str) else default

    return {"unk": token("unk_token", "<unk>"), "eos": token("eos_token", "</s>"),
            "pad": token("pad_token", "<pad>")}


class MarianSentencePieceTokenizer:
    """A Marian model's tokenizer (source.spm, target.spm, vocab.json) behind the interface the
    engine uses of ours: ``tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)``,
    ``convert_ids_to_tokens``, ``decode``, ``len`` and the special IDs (there is no <s>:
    ``bos_token_id`` is None). It encodes as transformers' MarianTokenizer does (SentencePiece
    pieces of the source model, each looked up in vocab.json, <unk> when absent; a leading ">>xx<<"
    language code is one token), without the optional Moses punctuation normaliser (sacremoses), and
    typed "</s>" or "<pad>" stays text."""

    def __init__(self, directory: str | Path) -> None:
        import sentencepiece

        directory = Path(directory)
        self.vocab = _read_vocab(directory)
        self.pieces = {i: piece for piece, i in self.vocab.items()}
        tokens = _special_tokens(directory)
        self.unk_token, self.eos_token, self.pad_token = tokens["unk"], tokens["eos"], tokens["pad"]
        for kind, name in tokens.items():
            if name not in self.vocab:
                raise ValueError(f"vocab.json lacks the special token {name}")
        self.unk_token_id = self.vocab[self.unk_token]
        self.eos_token_id = self.vocab[self.eos_token]
        self.pad_token_id, self.bos_token_id = self.vocab[self.pad_token], None
        self.all_special_ids = [self.eos_token_id, self.unk_token_id, self.pad_token_id]
        processor = sentencepiece.SentencePieceProcessor
        self.spm_source = processor(model_file=str(directory / "source.spm"))
        self.spm_target = processor(model_file=str(directory / "target.spm"))

    def __len__(self) -> int:
        return len(self.vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def _encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        ids, offsets, start = [], [], 0
        # a target-language code, as Marian reads it
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            ids.append(self.vocab.get(text[: end + 2], self.unk_token_id))
            offsets.append((0, end + 2))
            start = end + 2
        # The pieces MarianTokenizer gets from encode(text, out_type=str), with their character
        # spans.
        encoded = self.spm_source.encode(text[start:], out_type="offset_mapping")
        for piece, (a, b) in zip(encoded["pieces"], encoded["offsets"]):
            ids.append(self.vocab.get(piece, self.unk_token_id))
            offsets.append((start + a, start + b))
        return ids, offsets

    def __call__(self, text, add_special_tokens: bool = False,
                 return_offsets_mapping: bool = False) -> dict:
        texts = [text] if isinstance(text, str) else list(text)
        encoded = [self._encode(t) for t in texts]
        ids = [i + ([self.eos_token_id] if add_special_tokens else []) for i, _ in encoded]
        out = {"input_ids": ids[0] if isinstance(text, str) else ids}
        if return_offsets_mapping:
            offsets = [o + ([(0, 0)] if add_special_tokens else []) for _, o in encoded]
            out["offset_mapping"] = offsets[0] if isinstance(text, str) else offsets
        return out

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self.pieces.get(ids, self.unk_token)
        return [self.pieces.get(int(i), self.unk_token) for i in ids]

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self.vocab.get(tokens, self.unk_token_id)
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """As MarianTokenizer.decode: special tokens written as they are, the rest through
        SentencePiece."""
        special = {self.unk_token, self.eos_token, self.pad_token}
        out, run = "", []
        for token in self.convert_ids_to_tokens([int(i) for i in ids]):
            if token in special:
                if not skip_special_tokens:
                    out += self.spm_source.decode_pieces(run) + token + " "
                    run = []
                continue
            run.append(token)
        out += self.spm_source.decode_pieces(run)
        return out.replace("\u2581", " ").strip()


def load_hf_tokenizer(directory: str | Path):
    """A Marian directory's tokenizer: its SentencePiece files, or (a directory written by
    :func:`~transformer_viz.interop.marian_export.export_hf`) our BPE's tokenizer.json."""
    from transformer_viz.text.tokenizer import load_tokenizer

    directory = Path(directory)
    if (directory / "source.spm").is_file():
        for name in ("target.spm", "vocab.json"):
            if not (directory / name).is_file():
                raise CheckpointError(f"{directory} has source.spm but no {name}")
        try:
            return MarianSentencePieceTokenizer(directory)
        except ImportError as exc:
            raise CheckpointError(f"{directory} has a SentencePiece tokenizer, which needs the "
                                  f"sentencepiece package (requirements.txt)") from exc
        # sentencepiece raises RuntimeError/OSError on bad files
        except (OSError, RuntimeError, ValueError) as exc:
            raise CheckpointError(f"the tokenizer in {directory} cannot be loaded: {exc}") from exc
    if (directory / "tokenizer.json").is_file():
        try:
            return load_tokenizer(directory)
        except Exception as exc:  # the Rust parser raises plain Exception for malformed JSON
            raise CheckpointError(f"{directory / 'tokenizer.json'} cannot be loaded: "
                                  f"{exc}") from exc
    raise CheckpointError(f"{directory} has no tokenizer: a Marian directory needs source.spm, "
                          f"target.spm and vocab.json (or a tokenizer.json written by export-hf)")


# --- import: the weights --------------------------------------------------------------------------

def marian_positions(length: int, d_model: int) -> torch.Tensor:
    """Marian's sinusoidal table (sines first, then cosines): ours with the columns in Marian's
    order."""
    from transformer_viz.models.transformer.model import sinusoidal_positional_encoding

    table = sinusoidal_positional_encoding(length, d_model, MARIAN_PE_BASE)
    return table[:, residual_permutation(d_model)]


def _expected_marian_tensors(cfg: ModelConfig) -> tuple[dict, set, set]:
    """Marian's tensor names with their shapes (meta tensors), the tied embedding names, the
    optional ones."""
    import torch

    d, V = cfg.d_model, cfg.vocab_size
    expected = {"model.shared.weight": torch.empty(V, d, device="meta"),
                "final_logits_bias": torch.empty(1, V, device="meta")}
    for name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
                 "lm_head.weight"):
        expected[name] = torch.empty(V, d, device="meta")
    for side in ("encoder", "decoder"):
        expected[f"model.{side}.embed_positions.weight"] = torch.empty(cfg.max_len, d,
                                                                       device="meta")
    for _, theirs, role in module_pairs(cfg.N):
        out_dim, in_dim = ((cfg.d_ff, d) if theirs.endswith("fc1")
                           else (d, cfg.d_ff) if theirs.endswith("fc2") else (d, d))
        if role == "norm":
            gamma_beta = torch.empty(d, device="meta")
            expected[f"{theirs}.weight"] = expected[f"{theirs}.bias"] = gamma_beta
        else:
            expected[f"{theirs}.weight"] = torch.empty(out_dim, in_dim, device="meta")
            expected[f"{theirs}.bias"] = torch.empty(out_dim, device="meta")
    embeddings = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                  "model.decoder.embed_tokens.weight"}
    optional = {"final_logits_bias", "model.encoder.embed_positions.weight",
                "model.decoder.embed_positions.weight"}
    if cfg.tie_embeddings:
        embeddings.add("lm_head.weight")
    return expected, embeddings, optional


def _check_marian_extras(tensors: dict, cfg: ModelConfig, path: Path) -> None:
    """Copies of the shared matrix must equal it, and a stored sinusoidal table must be Marian's
    formula."""
    import torch

    shared = _shared(tensors)
    copies = list(_EMBEDDING_NAMES) + (["lm_head.weight"] if cfg.tie_embeddings else [])
    for name in copies:
        if name in tensors and not torch.equal(tensors[name].float(), shared):
            raise CheckpointError(f"{path}: {name} differs from the shared embedding matrix, which "
                                  "it is tied to")
    if not cfg.tie_embeddings and "lm_head.weight" not in tensors:
        raise CheckpointError(f"{path}: tie_word_embeddings is false but lm_head.weight is missing")
    table = marian_positions(cfg.max_len, cfg.d_model)
    for side in ("encoder", "decoder"):
        stored = tensors.get(f"model.{side}.embed_positions.weight")
        if stored is not None and not torch.allclose(stored.float(), table, atol=1e-5):
            raise CheckpointError(f"{path}: model.{side}.embed_positions.weight is not the "
                                  "sinusoidal table")


_EMBEDDING_NAMES = ("model.shared.weight", "model.encoder.embed_tokens.weight",
                    "model.decoder.embed_tokens.weight")


def _shared(tensors: dict[str, torch.Tensor]) -> torch.Tensor:
    """The shared embedding matrix, under whichever of its tied names the file stores."""
    return next(tensors[name] for name in _EMBEDDING_NAMES if name in tensors).float()


def our_state_dict(tensors: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Marian's tensors (by name) as our Transformer's state dict: the residual stream back in our
    order."""
    import torch

    inverse = torch.argsort(residual_permutation(cfg.d_model))  # x_ours = x_marian[inverse]
    shared = _shared(tensors)
    ours = {"src_embed.weight": shared[:, inverse], "tgt_embed.weight": shared[:, inverse]}
    if not cfg.tie_embeddings:
        ours["generator.weight"] = tensors["lm_head.weight"].float()[:, inverse]
    bias = tensors.get("final_logits_bias")
    ours["logits_bias"] = bias.float()[0] if bias is not None else torch.zeros(cfg.vocab_size)
    for mine, theirs, role in module_pairs(cfg.N):
        weight, b = permuted(role, tensors[f"{theirs}.weight"].float(),
                             tensors[f"{theirs}.bias"].float(), inverse)
        ours[f"{mine}.weight"], ours[f"{mine}.bias"] = weight.contiguous(), b.contiguous()
    return ours


def load_marian(path: Path, cfg: ModelConfig, device, dtype: str) -> Checkpoint:
    """A transformers Marian directory as our Checkpoint (load_checkpoint calls this for model_type
    marian)."""
    import torch

    from transformer_viz.models.transformer.model import Transformer

    expected, embeddings, optional = _expected_marian_tensors(cfg)
    tensors = read_weights(path / WEIGHTS, expected, embeddings, optional)
    _check_marian_extras(tensors, cfg, path / WEIGHTS)
    model = Transformer(cfg)
    model.load_state_dict(our_state_dict(tensors, cfg), strict=True)
    model.to(device=device, dtype=getattr(torch, dtype)).eval()
    tokenizer = load_hf_tokenizer(path)
    if len(tokenizer) != cfg.vocab_size:
        raise CheckpointError(f"tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
                              f"is {cfg.vocab_size}")
    # transformers' settings: its beam
    generation = read_generation_defaults(path, cfg.vocab_size, beam_scoring="hf")
    metadata = read_metadata(path) if (path / METADATA).is_file() else marian_metadata(path)
    return Checkpoint(model, tokenizer, cfg, metadata, path, generation)


def marian_metadata(path: Path) -> dict:
    """A model card's fields for a Marian directory without metadata.json: what
    tokenizer_config.json says."""
    config_path = path / "tokenizer_config.json"
    try:
        config = read_json_object(config_path) if config_path.is_file() else {}
    except ValueError:
        config = {}
    metadata = {"name": path.name, "description": "A transformers Marian model (MarianMTModel), "
                                                  f"imported from {path}."}
    for key, ours in (("source_lang", "src_lang"), ("target_lang", "tgt_lang")):
        if isinstance(config.get(key), str):
            metadata[ours] = config[key]
    return metadata

