"""Our Transformer's weights as a CTranslate2 model, for bench/hf_speed.py (pip install -r
bench/requirements.txt).

CTranslate2 is a C++ inference engine for Transformers. Measured on our checkpoints it was not fast
enough to be offered as a second engine for batch translation (see bench/README.md): it stays in the
benchmark.

CTranslate2's ready-made Marian converter assumes Marian's conventions (<pad> as the last vocabulary
entry, the decoder starting from a zero embedding), which our checkpoints do not follow, so the spec
is filled from our weights directly: post-LN layers, the config's activation and embedding scale,
our own (interleaved) sinusoidal table given as the position encodings, the output projection, and
the decoder starting from <s>.

Two traps, both seen: the converter keeps references to the arrays it is handed, and its int8
quantisation rewrites them in place, so every array is a copy; and loading a model changes torch's
thread count, so callers set it again afterwards.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

# float32: our numbers; int8: quantised weights, faster, outputs differ
COMPUTE_TYPES = ("float32", "int8")


def _array(tensor) -> np.ndarray:
    # a copy: CTranslate2 may quantise it in place
    return tensor.detach().float().cpu().numpy().copy()


def _linear(spec, linears) -> None:
    """One CTranslate2 linear from one or more of ours, stacked on the output axis (fused Q/K/V)."""
    spec.weight = np.concatenate([_array(m.weight) for m in linears], axis=0)
    spec.bias = np.concatenate([_array(m.bias) for m in linears], axis=0)


def _norm(spec, norm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _attention(spec, attn, norm, self_attention: bool) -> None:
    if self_attention:
        _linear(spec.linear[0], [attn.w_q, attn.w_k, attn.w_v])
    else:
        _linear(spec.linear[0], [attn.w_q])
        _linear(spec.linear[1], [attn.w_k, attn.w_v])
    _linear(spec.linear[-1], [attn.w_o])
    _norm(spec.layer_norm, norm.norm)  # post-LN: CTranslate2 applies it after the residual sum


def _ffn(spec, ffn, norm) -> None:
    _linear(spec.linear_0, [ffn.w_1])
    _linear(spec.linear_1, [ffn.w_2])
    _norm(spec.layer_norm, norm.norm)


def token_names(vocab_size: int) -> list[str]:
    """CTranslate2 speaks in token strings; ours are named by their IDs ("0", "1", …), so that any
    tokenizer (ours, or an imported Marian model's) maps one to one, and IDs go in and come out
    unchanged."""
    return [str(i) for i in range(vocab_size)]


def build_spec(model):
    """A ctranslate2.specs.TransformerSpec holding a copy of ``model``'s weights: post-LN, the
    config's activation and embedding scale, tied or separate output projection, an imported model's
    logits bias."""
    from ctranslate2.specs import common_spec, transformer_spec

    cfg = model.cfg
    if cfg.pre_ln:
        raise ValueError("only post-LN models are converted here (config pre_ln is true)")
    activation = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU,
                  "swish": common_spec.Activation.SWISH}[cfg.activation]
    spec = transformer_spec.TransformerSpec.from_config((cfg.N, cfg.N), cfg.h, pre_norm=False,
                                                        activation=activation)
    pe = _array(model.pe)  # (max_len, d_model), our interleaved sin/cos layout
    for side, embeddings, embed in ((spec.encoder, spec.encoder.embeddings[0], model.src_embed),
                                    (spec.decoder, spec.decoder.embeddings, model.tgt_embed)):
        embeddings.weight = _array(embed.weight)
        side.scale_embeddings = cfg.scale_embedding  # ×√d_model
        side.position_encodings.encodings = pe.copy()
    projection = model.tgt_embed if cfg.tie_embeddings else model.generator
    spec.decoder.projection.weight = _array(projection.weight)
    if cfg.logits_bias:
        spec.decoder.projection.bias = _array(model.logits_bias)
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder_layers):
        _attention(layer_spec.self_attention, layer.self_attn, layer.norm1, True)
        _ffn(layer_spec.ffn, layer.ffn, layer.norm2)
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder_layers):
        _attention(layer_spec.self_attention, layer.self_attn, layer.norm1, True)
        _attention(layer_spec.attention, layer.cross_attn, layer.norm2, False)
        _ffn(layer_spec.ffn, layer.ffn, layer.norm3)
    tokens = token_names(cfg.vocab_size)
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    spec.config.unk_token, spec.config.bos_token = tokens[cfg.unk_id], tokens[cfg.bos_id]
    spec.config.eos_token = tokens[cfg.eos_id]
    spec.config.decoder_start_token = tokens[cfg.bos_id]  # our start
    spec.config.layer_norm_epsilon = cfg.layer_norm_eps
    return spec


def convert(model, out_dir: str | Path) -> Path:
    """Write the CTranslate2 model directory (float32; quantise at load time with compute_type)."""
    from ctranslate2.converters import Converter

    class _FromModel(Converter):
        def _load(self):
            return build_spec(model)

    return Path(_FromModel().convert(str(out_dir), force=True))


class CT2Translator:
    """A checkpoint converted to CTranslate2 and loaded; translates lists of source token IDs."""

    def __init__(self, ckpt, compute_type: str = "float32", threads: int = 0) -> None:
        import ctranslate2
        import torch

        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute type must be one of {', '.join(COMPUTE_TYPES)}, not "
                             f"{compute_type!r}")
        torch_threads = torch.get_num_threads()
        self.cfg = ckpt.config
        # read once: the loaded model no longer needs the files
        with tempfile.TemporaryDirectory() as tmp:
            directory = convert(ckpt.model, Path(tmp) / "ct2")
            self.translator = ctranslate2.Translator(str(directory), device="cpu",
                                                     compute_type=compute_type,
                                                     intra_threads=threads or torch_threads,
                                                     inter_threads=1)
        # loading a CTranslate2 model changes torch's thread count
        torch.set_num_threads(torch_threads)
        self.tokens = token_names(self.cfg.vocab_size)

    def translate_ids(self, rows: list[list[int]], beam_size: int = 1, alpha: float = 1.0,
                      suppress: tuple[int, ...] = ()) -> list[list[int]]:
        """Source IDs (each ending in </s>) -> output IDs without </s>. ``alpha`` is CTranslate2's
        own length penalty (log-probability / length^α), not our engine's GNMT one; greedy ignores
        it. ``suppress``: IDs never written (an imported Marian model's <pad>)."""
        from transformer_viz.generation.decoding import max_output_length

        # the same cap as our engine's
        limit = max_output_length(self.cfg, max(len(r) for r in rows))
        sources = [[self.tokens[i] for i in r] for r in rows]
        suppressed = [[self.tokens[i]] for i in suppress] or None
        # min_decoding_length 0: like ours, </s> may come first
        results = self.translator.translate_batch(sources, beam_size=beam_size,
                                                  length_penalty=alpha, max_decoding_length=limit,
                                                  min_decoding_length=0,
                                                  suppress_sequences=suppressed)
        return [[int(t) for t in r.hypotheses[0]] for r in results]

