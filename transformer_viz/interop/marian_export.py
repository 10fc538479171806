"""Export to transformers: our Transformer checkpoint as a MarianMTModel directory that transformers
loads with ``from_pretrained`` (weights, config, decoding defaults, tokenizer). The conversion is
exact: a fixed permutation of the residual-stream coordinates (Marian's positional table puts all
sines before all cosines) applied to every weight that reads or writes the stream;
checkpoints.marian does the reverse.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_viz.checkpoints.format import METADATA, Checkpoint, CheckpointError
from transformer_viz.checkpoints.marian import (MARIAN_LAYER_NORM_EPS, MARIAN_PE_BASE,
                                                MARIAN_TOKENIZER_FILES,
                                                MarianSentencePieceTokenizer, module_pairs,
                                                permuted, residual_permutation)
from transformer_viz.generation.decoding_defaults import read_json_object
from transformer_viz.models.transformer.config import ModelConfig

if TYPE_CHECKING:
    import torch

    from transformer_viz.models.transformer.model import Transformer


def _check_exportable(cfg) -> None:
    if not isinstance(cfg, ModelConfig):
        raise CheckpointError("only Transformer checkpoints can be exported to a Marian model, not "
                              f"{type(cfg).__name__}")
    problems = []
    if cfg.pre_ln:
        problems.append("pre_ln = true: Marian models are Post-LN (transformers' Marian code has "
                        "no Pre-LN)")
    if not cfg.tie_embeddings:
        problems.append("tie_embeddings = false: the export writes one shared embedding matrix")
    if cfg.pe_base != MARIAN_PE_BASE:
        problems.append(f"pe_base = {cfg.pe_base:g}: Marian's sinusoidal table uses 10000")
    if cfg.layer_norm_eps != MARIAN_LAYER_NORM_EPS:
        problems.append(f"layer_norm_eps = {cfg.layer_norm_eps:g}: Marian's LayerNorm uses 1e-5")
    if problems:
        raise CheckpointError("cannot export to a Marian model: " + "; ".join(problems))


def marian_config_kwargs(cfg: ModelConfig) -> dict:
    """Our config as MarianConfig's arguments; the decoder starts with our <s>, never a forced
    </s>."""
    return dict(vocab_size=cfg.vocab_size, decoder_vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                encoder_layers=cfg.N, decoder_layers=cfg.N, encoder_attention_heads=cfg.h,
                decoder_attention_heads=cfg.h, encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff,
                max_position_embeddings=cfg.max_len, activation_function=cfg.activation,
                dropout=cfg.dropout, attention_dropout=cfg.attn_dropout, activation_dropout=0.0,
                scale_embedding=cfg.scale_embedding, pad_token_id=cfg.pad_id,
                eos_token_id=cfg.eos_id, bos_token_id=cfg.bos_id, decoder_start_token_id=cfg.bos_id,
                forced_eos_token_id=None, share_encoder_decoder_embeddings=True,
                tie_word_embeddings=True)


def marian_state_dict(model: Transformer) -> dict[str, torch.Tensor]:
    """Our weights under MarianMTModel's names, the residual stream in Marian's order."""
    import torch

    cfg = model.cfg
    ours = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    perm = residual_permutation(cfg.d_model)
    shared = ours["src_embed.weight"][:, perm]  # (V, d_model)
    out = {"model.shared.weight": shared, "model.encoder.embed_tokens.weight": shared,
           "model.decoder.embed_tokens.weight": shared, "lm_head.weight": shared,
           "final_logits_bias": (ours["logits_bias"] if cfg.logits_bias
                                 else torch.zeros(cfg.vocab_size))[None]}
    for mine, theirs, role in module_pairs(cfg.N):
        weight, bias = permuted(role, ours[f"{mine}.weight"], ours[f"{mine}.bias"], perm)
        out[f"{theirs}.weight"], out[f"{theirs}.bias"] = weight.contiguous(), bias.contiguous()
    return out


def exported_tokenizer(tokenizer):
    """Our tokenizer for transformers' users: the same BPE, whose ``tokenizer(text)`` ends the IDs
    with </s> as our encoder input does (a post-processor; our engine encodes without special
    tokens)."""
    from tokenizers import Tokenizer, processors

    from transformer_viz.text.tokenizer import EOS, SPECIAL_TOKENS, hf_tokenizer

    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    eos = SPECIAL_TOKENS["eos_token"]
    backend.post_processor = processors.TemplateProcessing(single=f"$A {eos}",
                                                           special_tokens=[(eos, EOS)])
    return hf_tokenizer(backend)


def export_hf(ckpt: Checkpoint, out: str | Path) -> Path:
    """Write ``out`` as a transformers Marian directory: config.json (MarianConfig),
    model.safetensors, generation_config.json (our decoding defaults; the beam is transformers' own,
    see decoding.beam_search_hf), the tokenizer (tokenizer.json with tokenizer_config.json, for
    AutoTokenizer), and our metadata.json and language_stats.json when the checkpoint has them."""
    _check_exportable(ckpt.config)
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    cfg, out = ckpt.config, Path(out)
    marian = MarianMTModel(MarianConfig(**marian_config_kwargs(cfg))).eval()
    missing, unexpected = marian.load_state_dict(marian_state_dict(ckpt.model), strict=False)
    # Marian builds its own sinusoidal tables (sines first), which is why the stream is permuted.
    left = [k for k in missing if not k.endswith("embed_positions.weight")]
    if left or unexpected:
        raise CheckpointError(f"the Marian model does not match: missing {left}, unexpected "
                              f"{unexpected}")
    out.mkdir(parents=True, exist_ok=True)
    marian.save_pretrained(str(out))
    gen = ckpt.generation
    settings = dict(num_beams=gen.num_beams, length_penalty=gen.length_penalty,
                    early_stopping=gen.early_stopping) if gen.num_beams > 1 else {}
    if gen.suppress_ids:
        settings["bad_words_ids"] = [[i] for i in gen.suppress_ids]
    GenerationConfig(decoder_start_token_id=cfg.bos_id, bos_token_id=cfg.bos_id,
                     eos_token_id=cfg.eos_id, pad_token_id=cfg.pad_id,
                     max_length=cfg.max_len, **settings).save_pretrained(str(out))
    # an imported Marian model: its own files
    if isinstance(ckpt.tokenizer, MarianSentencePieceTokenizer):
        for name in MARIAN_TOKENIZER_FILES:
            if (Path(ckpt.path) / name).is_file():
                shutil.copyfile(Path(ckpt.path) / name, out / name)
    else:
        exported_tokenizer(ckpt.tokenizer).save_pretrained(str(out))
        # Typed "<pad>" or "</s>" stays text for transformers' users too, as in our engine
        # (text/tokenizer.py).
        config = read_json_object(out / "tokenizer_config.json")
        config["split_special_tokens"] = True
        (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False)
                                                   + "\n")
    for name in (METADATA, "language_stats.json"):
        if ckpt.path is not None and (Path(ckpt.path) / name).is_file():
            shutil.copyfile(Path(ckpt.path) / name, out / name)
    return out
