"""Encoding and the decoder's step during generation, written for speed: the arithmetic of the model's
``start_state`` and ``decode_step`` (models/transformer.py, which stay the readable reference; tests hold the two to the
same logits and outputs), with four differences in how it is done, none in what:

- Products with few rows read their weight transposed, (d_in, d_out) in memory. A step of greedy
  decoding at batch 1 multiplies one row by every weight matrix, and its time goes into fetching the
  weights from memory: row-major (d_out, d_in), as ``nn.Linear`` keeps them, the product of one row with
  the 8000 × 256 output projection took 1.1 ms from a cold cache, on the transposed copy 0.38 ms
  (bench/layout_speed.py, 2-core AMD EPYC, MKL). With 32 rows the two layouts are alike.
- Self-attention's W_Q, W_K and W_V are one (d_model, 3·d_model) product instead of three, and
  cross-attention's W_K and W_V one.
- The encoder's position-wise products (everything but the attention itself) run on the real tokens
  only, not on the padding of a batch.
- Plain functions instead of module calls past the embedding (`model.embed`, shared with the model):
  no dropout (decoding is in eval mode), no hooks.

The weights in these layouts are built once per model and rebuilt when a weight changes (training
updates them in place, which bumps the tensor's version counter); nothing is stored on the model, which
a web app shares between sessions.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from functools import partial
from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F

from transformer_viz.models.transformer import _ACTIVATION_FUNCTIONS, DecoderState, Transformer

# Up to this many rows, a product reads the transposed copy of its weight (bench/layout_speed.py, shipped
# model's shapes: one row 1.2–2.9× faster, 5–16 rows up to 1.4×, 32 rows 0.97–1.06×). Beam search with 5
# beams of one sentence has 5 rows.
FEW_ROWS = 8


@dataclass(frozen=True)
class Linear:
    """One weight matrix, in both layouts where products with few rows may meet it, and its bias."""

    weight: torch.Tensor  # (d_out, d_in), as nn.Linear keeps it (not a copy unless concatenated)
    weight_t: torch.Tensor | None  # (d_in, d_out), contiguous; None where it would not help (see `of`)
    bias: torch.Tensor | None  # (d_out,)

    @classmethod
    def of(cls, weight: torch.Tensor, bias: torch.Tensor | None, transposed: bool = True) -> "Linear":
        """``transposed``: keep a transposed copy for few rows, where it helps: for weights at least as tall
        as wide. The feed-forward's W_2, (d_model, d_ff), ran slower transposed (bench/layout_speed.py:
        one row 153 against 91 µs), the others faster (the output projection 378 against 1107 µs)."""
        keep_t = transposed and weight.size(0) >= weight.size(1)
        return cls(weight, weight.t().contiguous() if keep_t else None, bias)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x (N, d_in) -> (N, d_out)."""
        if self.weight_t is None or x.size(0) > FEW_ROWS:
            return F.linear(x, self.weight, self.bias)
        if self.bias is None:
            return x @ self.weight_t
        return torch.addmm(self.bias, x, self.weight_t)


@dataclass(frozen=True)
class EncoderLayerWeights:
    qkv: Linear  # self-attention's W_Q | W_K | W_V, (d_model, 3·d_model)
    self_out: Linear  # W_O
    ffn_1: Linear
    ffn_2: Linear
    norms: tuple  # the two LayerNorms' (weight, bias)


@dataclass(frozen=True)
class DecoderLayerWeights:
    qkv: Linear  # self-attention's W_Q | W_K | W_V, (d_model, 3·d_model)
    self_out: Linear  # W_O
    cross_q: Linear
    cross_kv: Linear  # cross-attention's W_K | W_V, applied once per sentence to the encoder output
    cross_out: Linear
    ffn_1: Linear
    ffn_2: Linear
    norms: tuple  # the three LayerNorms' (weight, bias)


@dataclass(frozen=True)
class FastWeights:
    encoder: tuple  # EncoderLayerWeights per encoder layer
    decoder: tuple  # DecoderLayerWeights per decoder layer
    output: Linear  # the output projection, (d_model, V); its bias is the logits bias if the model has one
    final_norms: tuple | None  # Pre-LN's final LayerNorms (weight, bias), encoder's then decoder's


def _linear(*modules: torch.nn.Linear, transposed: bool = True) -> Linear:
    """One Linear computing the given ones side by side: their outputs concatenated."""
    if len(modules) == 1:
        return Linear.of(modules[0].weight, modules[0].bias, transposed)
    return Linear.of(torch.cat([m.weight for m in modules]), torch.cat([m.bias for m in modules]), transposed)


def _norms(*add_norms) -> tuple:
    return tuple((a.norm.weight, a.norm.bias) for a in add_norms)


def _build(model: Transformer) -> FastWeights:
    cfg = model.cfg
    # The encoder's products have a row per source token of the batch: many, so no transposed copies.
    encoder = tuple(EncoderLayerWeights(_linear(l.self_attn.w_q, l.self_attn.w_k, l.self_attn.w_v, transposed=False),
                                        _linear(l.self_attn.w_o, transposed=False),
                                        _linear(l.ffn.w_1, transposed=False), _linear(l.ffn.w_2, transposed=False),
                                        _norms(l.norm1, l.norm2)) for l in model.encoder_layers)
    decoder = tuple(DecoderLayerWeights(_linear(l.self_attn.w_q, l.self_attn.w_k, l.self_attn.w_v),
                                        _linear(l.self_attn.w_o), _linear(l.cross_attn.w_q),
                                        _linear(l.cross_attn.w_k, l.cross_attn.w_v, transposed=False),
                                        _linear(l.cross_attn.w_o),
                                        _linear(l.ffn.w_1), _linear(l.ffn.w_2), _norms(l.norm1, l.norm2, l.norm3))
                    for l in model.decoder_layers)
    output_weight = model.tgt_embed.weight if cfg.tie_embeddings else model.generator.weight  # (V, d_model)
    final = None
    if cfg.pre_ln:
        final = tuple((n.weight, n.bias) for n in (model.encoder_norm, model.decoder_norm))
    output = Linear.of(output_weight, model.logits_bias if cfg.logits_bias else None)
    return FastWeights(encoder, decoder, output, final)


_built: "weakref.WeakKeyDictionary[Transformer, tuple]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _fingerprint(model: Transformer) -> tuple:
    """Changes when any weight is replaced or updated in place (or moves to another device or dtype)."""
    return tuple((p.data_ptr(), p._version, p.dtype) for p in model.parameters()) + tuple(
        (b.data_ptr(), b._version) for b in model.buffers())


def fast_weights(model: Transformer) -> FastWeights:
    """The model's weights laid out for :func:`start_state` and :func:`decode_step`, built on first use,
    kept while the model and its weights are unchanged."""
    key = _fingerprint(model)
    with _lock:
        entry = _built.get(model)
    if entry is not None and entry[0] == key:
        return entry[1]
    with torch.no_grad():
        weights = _build(model)
    with _lock:
        _built[model] = (key, weights)
    return weights


def usable(model) -> bool:
    """Whether this module computes the model's steps: a Transformer in eval mode (training mode has
    dropout, which only the modules apply)."""
    return isinstance(model, Transformer) and not model.training


def _add_norm(cfg, x: torch.Tensor, sublayer, norm: tuple) -> torch.Tensor:
    """AddNorm.forward (models/transformer.py) without dropout: Post-LN LayerNorm(x + Sublayer(x)), or Pre-LN."""
    if cfg.pre_ln:
        return x + sublayer(F.layer_norm(x, (cfg.d_model,), *norm, cfg.layer_norm_eps))
    return F.layer_norm(x + sublayer(x), (cfg.d_model,), *norm, cfg.layer_norm_eps)


def _heads(x: torch.Tensor, B: int, L: int, parts: int, h: int) -> tuple:
    """(B·L, parts·d_model) -> ``parts`` tensors of shape (B, h, L, d_k)."""
    return x.view(B, L, parts, h, -1).permute(2, 0, 3, 1, 4).unbind(0)  # each (B, h, L, d_k)


# --- the encoder, once per batch: position-wise work on real tokens only ---------------------------

def start_state(model: Transformer, w: FastWeights, src: torch.Tensor) -> DecoderState:
    """``model.start_state(src)`` computed faster: a padded position's query, feed-forward and keys/values
    of cross-attention are never used, so the position-wise products (all but the attention itself) run
    on the real tokens only (about half the positions of a batch of 32 Multi30k sentences). Its memory and
    keys/values at padded positions are zeros instead of values nothing reads."""
    cfg = model.cfg
    keep = src != cfg.pad_id  # (B, S)
    if bool(keep.all()):  # nothing to skip
        return model.start_state(src)
    B, S, d, h = src.size(0), src.size(1), cfg.d_model, cfg.h
    where = keep.view(-1).nonzero()[:, 0]  # (n,) flat positions of the real tokens
    mask = keep[:, None, None, :]  # (B, 1, 1, S)

    def unpack(x: torch.Tensor) -> torch.Tensor:  # (n, width) -> (B·S, width), zeros at padded positions
        return x.new_zeros(B * S, x.size(1)).index_copy_(0, where, x)

    x = model.embed(src, "src", None).view(B * S, d).index_select(0, where)  # (n, d_model)
    for lw in w.encoder:
        def self_attention(x, lw=lw):
            q, k, v = _heads(unpack(lw.qkv(x)), B, S, 3, h)  # each (B, h, S, d_k)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, S, d_k)
            return lw.self_out(heads.transpose(1, 2).reshape(B * S, d).index_select(0, where))  # (n, d_model)

        x = _add_norm(cfg, x, self_attention, lw.norms[0])
        x = _add_norm(cfg, x, lambda x, lw=lw: lw.ffn_2(_ACTIVATION_FUNCTIONS[cfg.activation](lw.ffn_1(x))),
                      lw.norms[1])
    if w.final_norms is not None:
        x = F.layer_norm(x, (d,), *w.final_norms[0], cfg.layer_norm_eps)
    caches = []
    for lw in w.decoder:
        k, v = _heads(unpack(lw.cross_kv(x)), B, S, 2, h)  # each (B, h, S, d_k)
        caches.append({"self": {}, "cross": {"k": k, "v": v}})
    return DecoderState(unpack(x).view(B, S, d), mask, caches)


# --- the decoder, once per generated position ------------------------------------------------------

def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """One query position per row: q (N, h, 1, d_k), k and v (N, h, L, d_k) -> (N, h·d_k)."""
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (N, h, 1, d_k)
    return heads.flatten(1)  # (N, h·d_k): the heads side by side, as Concat(head_1, …, head_h)


def decode_step(model: Transformer, w: FastWeights, last_tokens: torch.Tensor, state: DecoderState) -> torch.Tensor:
    """last_tokens (N,) at position state.length -> logits (N, V): ``model.decode_step`` computed faster
    (see the module's docstring). Same state, updated the same way."""
    cfg = model.cfg
    N, h, d_k = last_tokens.size(0), cfg.h, cfg.d_k
    y = model.embed(last_tokens[:, None], "tgt", None, offset=state.length)[:, 0]  # (N, d_model)
    activation = _ACTIVATION_FUNCTIONS[cfg.activation]
    for lw, cache in zip(w.decoder, state.caches):
        past, cross = cache["self"], cache["cross"]

        def self_attention(x, lw=lw, past=past):
            q, k, v = lw.qkv(x).view(N, 3, h, 1, d_k).unbind(1)  # each (N, h, 1, d_k)
            if "k" in past:
                k, v = torch.cat([past["k"], k], dim=2), torch.cat([past["v"], v], dim=2)  # (N, h, t+1, d_k)
            past["k"], past["v"] = k, v
            return lw.self_out(_attend(q, k, v, None))  # the new position sees every cached one: no mask

        def cross_attention(x, lw=lw, cross=cross):
            q = lw.cross_q(x).view(N, h, 1, d_k)  # (N, h, 1, d_k)
            return lw.cross_out(_attend(q, cross["k"], cross["v"], state.src_mask))

        y = _add_norm(cfg, y, self_attention, lw.norms[0])
        y = _add_norm(cfg, y, cross_attention, lw.norms[1])
        y = _add_norm(cfg, y, lambda x, lw=lw: lw.ffn_2(activation(lw.ffn_1(x))), lw.norms[2])
    if w.final_norms is not None:
        y = F.layer_norm(y, (cfg.d_model,), *w.final_norms[1], cfg.layer_norm_eps)
    state.length += 1
    return w.output(y)  # (N, V)


class Decoder(NamedTuple):
    """How a decoding loop encodes its source and computes each next position's logits."""

    start: Callable  # src (B, S) -> state
    step: Callable  # (last_tokens (N,), state) -> logits (N, V); updates the state


def decoder_for(model) -> Decoder:
    """This module's :func:`start_state` and :func:`decode_step` on the model's :func:`fast_weights` where
    :func:`usable` (looked up once per call: the lookup checks every weight's version), else the model's own
    ``start_state`` and ``decode_step`` (an RNN model, or a model in training mode)."""
    if not usable(model):
        return Decoder(model.start_state, model.decode_step)
    w = fast_weights(model)
    return Decoder(partial(start_state, model, w), partial(decode_step, model, w))
