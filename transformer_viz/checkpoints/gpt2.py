"""Reading a transformers GPT-2 directory (``GPT2LMHeadModel.save_pretrained``) as our decoder-only
model.

GPT-2 is the model of models/gpt/ at a larger size: learned positions, Pre-LN blocks, a final
LayerNorm, GELU (tanh approximation), the output projection tied to the token embeddings. Only the
layout differs: GPT-2 stores its linear maps as ``Conv1D`` (y = x W + b, W of shape (in, out): ours
transposed) and its Q, K and V projections as one matrix ``c_attn`` of shape (d_model, 3·d_model),
which is split here.

Nothing is downloaded: the directory must already hold config.json, model.safetensors and
tokenizer.json. :data:`HOW_TO_GET_GPT2` says how to write one on a machine with internet access.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.checkpoints.format import (WEIGHTS, Checkpoint, CheckpointError, read_metadata,
                                                read_weights)

if TYPE_CHECKING:
    import torch

    from transformer_viz.models.gpt.config import GPTConfig

HOW_TO_GET_GPT2 = (
    "GPT-2 is never downloaded while the app or a command runs. To use it, write it to a directory "
    "once, on a machine with internet access: python -c \"from transformers import "
    "GPT2LMHeadModel, AutoTokenizer; "
    "GPT2LMHeadModel.from_pretrained('gpt2').save_pretrained('gpt2'); "
    "AutoTokenizer.from_pretrained('gpt2').save_pretrained('gpt2')\" (about 550 MB), copy that "
    "directory here and pass it as --checkpoint gpt2 (or put it in checkpoints/gpt2 for the app)."
)
_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                "gelu": "gelu", "relu": "relu"}


def is_gpt2_config(data: dict) -> bool:
    return isinstance(data, dict) and data.get("model_type") == "gpt2"


def gpt2_model_config(data: dict) -> GPTConfig:
    """Our GPTConfig from a transformers GPT2Config's JSON (ValueError for a variant we do not
    implement)."""
    from transformer_viz.models.gpt.config import NO_PAD, GPTConfig

    activation = _ACTIVATIONS.get(data.get("activation_function", "gelu_new"))
    if activation is None:
        raise ValueError(f"activation_function {data.get('activation_function')!r} is not "
                         "implemented")
    for flag in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
                 "add_cross_attention"):
        if data.get(flag):
            raise ValueError(f"{flag} is set: this GPT-2 variant is not implemented")
    if data.get("scale_attn_weights", True) is False:
        raise ValueError("scale_attn_weights is false: attention without 1/√d_k is not implemented")
    d = data.get("n_embd", 768)
    vocab = data.get("vocab_size", 50257)
    eos = data.get("eos_token_id", vocab - 1)
    cfg = GPTConfig(vocab_size=vocab, d_model=d, d_ff=data.get("n_inner") or 4 * d,
                    h=data.get("n_head", 12), N=data.get("n_layer", 12),
                    max_len=data.get("n_positions", 1024), dropout=0.0,
                    layer_norm_eps=data.get("layer_norm_epsilon", 1e-5), activation=activation,
                    pad_id=NO_PAD, bos_id=data.get("bos_token_id", eos), eos_id=eos, unk_id=NO_PAD)
    cfg.validate()
    return cfg


def _expected(cfg: GPTConfig) -> dict[str, torch.Tensor]:
    import torch

    d, f = cfg.d_model, cfg.d_ff

    def t(*shape):
        return torch.empty(*shape, device="meta")

    out = {"transformer.wte.weight": t(cfg.vocab_size, d),
           "transformer.wpe.weight": t(cfg.max_len, d), "transformer.ln_f.weight": t(d),
           "transformer.ln_f.bias": t(d), "lm_head.weight": t(cfg.vocab_size, d)}
    for i in range(cfg.N):
        p = f"transformer.h.{i}"
        out.update({f"{p}.ln_1.weight": t(d), f"{p}.ln_1.bias": t(d), f"{p}.ln_2.weight": t(d),
                    f"{p}.ln_2.bias": t(d), f"{p}.attn.c_attn.weight": t(d, 3 * d),
                    f"{p}.attn.c_attn.bias": t(3 * d), f"{p}.attn.c_proj.weight": t(d, d),
                    f"{p}.attn.c_proj.bias": t(d), f"{p}.mlp.c_fc.weight": t(d, f),
                    f"{p}.mlp.c_fc.bias": t(f), f"{p}.mlp.c_proj.weight": t(f, d),
                    f"{p}.mlp.c_proj.bias": t(d)})
    return out


def _their_name(name: str) -> str:
    # The hub's files name tensors without the "transformer." prefix that save_pretrained writes
    # today.
    return name if name.startswith(("transformer.", "lm_head.")) else f"transformer.{name}"


def read_gpt2_weights(path: Path, cfg: GPTConfig) -> dict[str, torch.Tensor]:
    """The file's tensors under today's names, checked (names, shapes, finite values) against the
    config. The causal-mask buffers older files carry (attn.bias, attn.masked_bias) are skipped;
    lm_head.weight, tied to the token embeddings, is checked to equal them when present."""
    import torch

    tensors = read_weights(path, _expected(cfg), {"transformer.wte.weight", "lm_head.weight"},
                           optional={"lm_head.weight"}, rename=_their_name,
                           skip=lambda name: name.endswith((".attn.bias", ".attn.masked_bias")))
    tensors = {name: t.float() for name, t in tensors.items()}
    head = tensors.pop("lm_head.weight", None)
    if head is not None and not torch.equal(head, tensors["transformer.wte.weight"]):
        raise CheckpointError(f"{path}: lm_head.weight differs from the token embeddings, to which "
                              "GPT-2 ties it")
    return tensors


def gpt2_state_dict(tensors: dict[str, torch.Tensor], cfg: GPTConfig) -> dict[str, torch.Tensor]:
    """GPT-2's tensors (by name, with or without the ``transformer.`` prefix) as
    models.gpt.model.GPT's state dict."""
    tensors = {_their_name(k): v.float() for k, v in tensors.items()}
    d = cfg.d_model
    ours = {"tok_embed.weight": tensors["transformer.wte.weight"],
            "pos_embed.weight": tensors["transformer.wpe.weight"],
            "decoder_norm.weight": tensors["transformer.ln_f.weight"],
            "decoder_norm.bias": tensors["transformer.ln_f.bias"]}
    for i in range(cfg.N):
        theirs, mine = f"transformer.h.{i}", f"decoder_layers.{i}"
        qkv_w = tensors[f"{theirs}.attn.c_attn.weight"]  # (d, 3d)
        qkv_b = tensors[f"{theirs}.attn.c_attn.bias"]  # (3d,)
        for n, name in enumerate(("w_q", "w_k", "w_v")):
            # (d_out, d_in)
            ours[f"{mine}.self_attn.{name}.weight"] = qkv_w[:, n * d:(n + 1) * d].t().contiguous()
            ours[f"{mine}.self_attn.{name}.bias"] = qkv_b[n * d:(n + 1) * d].contiguous()
        for ours_name, their_name in (("self_attn.w_o", "attn.c_proj"), ("ffn.w_1", "mlp.c_fc"),
                                      ("ffn.w_2", "mlp.c_proj")):
            weight = tensors[f"{theirs}.{their_name}.weight"]
            ours[f"{mine}.{ours_name}.weight"] = weight.t().contiguous()
            ours[f"{mine}.{ours_name}.bias"] = tensors[f"{theirs}.{their_name}.bias"]
        for ours_name, their_name in (("norm1", "ln_1"), ("norm2", "ln_2")):
            ours[f"{mine}.{ours_name}.norm.weight"] = tensors[f"{theirs}.{their_name}.weight"]
            ours[f"{mine}.{ours_name}.norm.bias"] = tensors[f"{theirs}.{their_name}.bias"]
    return ours


def load_gpt2_tokenizer(directory: Path, cfg: GPTConfig):
    """The directory's tokenizer.json (GPT-2's byte-level BPE), read by the Rust tokenizers library
    only."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    path = directory / "tokenizer.json"
    if not path.is_file():
        raise CheckpointError(f"{directory} has no tokenizer.json (save the tokenizer with "
                              "AutoTokenizer.from_pretrained('gpt2')"
                              f".save_pretrained('{directory}'))")
    try:
        backend = Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust parser raises plain Exception for malformed JSON
        raise CheckpointError(f"{path} cannot be loaded: {exc}") from exc
    special = backend.id_to_token(cfg.eos_id) or "<|endoftext|>"
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=special, eos_token=special,
                                   unk_token=special)


def load_gpt2(path: Path, cfg: GPTConfig, device, dtype: str) -> Checkpoint:
    """A transformers GPT-2 directory as our Checkpoint (load_checkpoint calls this for model_type
    gpt2)."""
    import torch

    from transformer_viz.models.gpt.model import GPT

    tensors = read_gpt2_weights(path / WEIGHTS, cfg)
    model = GPT(cfg)
    model.load_state_dict(gpt2_state_dict(tensors, cfg), strict=True)
    model.to(device=device, dtype=getattr(torch, dtype)).eval()
    tokenizer = load_gpt2_tokenizer(path, cfg)
    if len(tokenizer) != cfg.vocab_size:
        raise CheckpointError(f"tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
                              f"is {cfg.vocab_size}")
    return Checkpoint(model, tokenizer, cfg, read_metadata(path) or gpt2_metadata(path), path)


def gpt2_metadata(path: Path) -> dict:
    """A model card's fields for a GPT-2 directory without metadata.json."""
    return {"name": f"GPT-2 ({path.name})", "arch": "gpt", "lang": "en",
            "description": f"OpenAI's GPT-2 (Radford et al., 2019), read from {path}."}
