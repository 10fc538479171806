"""The Transformer's forward pass with attention heads switched off, keeping the decoder's residual stream
after every layer: what "what does a head do?" (text/explain.py) is computed from.

A head is switched off by zeroing its output head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i), the head's d_k
columns of Concat(head_1, …, head_h), before the product with W_O: MultiHeadAttention takes the kept heads
as a per-call ``head_mask`` argument (models/transformer.py), never as something stored on the module, since
the app shares one model between sessions. W_O's bias b_O still flows: it belongs to no head.

The loops below are the model's own ``encode`` and ``decode`` with that argument passed to every attention
(tests/unit/test_explain.py holds them to the model's logits, bit for bit, with no head switched off), and
with the source's token embeddings replaceable, which integrated gradients needs (it runs the model on
scaled embeddings that belong to no token).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from transformer_viz.core.masks import padding_mask, target_mask
from transformer_viz.models.transformer import Transformer

# Where a head sits: encoder self-attention, decoder (masked) self-attention, or cross-attention.
KINDS = ("enc", "dec", "cross")
KIND_NAMES = {"enc": "encoder self-attention", "dec": "decoder self-attention", "cross": "cross-attention"}


@dataclass(frozen=True, order=True)
class Head:
    """One attention head: ``kind`` (one of KINDS), decoder or encoder ``layer`` and ``head``, from 0."""

    kind: str
    layer: int
    head: int

    def __str__(self) -> str:  # the command line's and the URL's spelling: "cross.2.5"
        return f"{self.kind}.{self.layer}.{self.head}"

    @property
    def label(self) -> str:
        return f"{KIND_NAMES[self.kind]}, layer {self.layer}, head {self.head}"


def all_heads(cfg) -> list[Head]:
    """Every head of the model, in KINDS order, then layer, then head: 3 · N · h of them."""
    return [Head(kind, i, j) for kind in KINDS for i in range(cfg.N) for j in range(cfg.h)]


def parse_heads(spec: str | Iterable[str], cfg) -> list[Head]:
    """"enc.0.3,cross.2.5" (or a list of such names) -> sorted, distinct heads; ValueError naming a head
    that is malformed or outside the model (N layers, h heads)."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    heads = set()
    for name in (n.strip() for n in names):
        if not name:
            continue
        parts = name.split(".")
        if len(parts) != 3 or parts[0] not in KINDS or not all(p.isdigit() for p in parts[1:]):
            raise ValueError(f"{name!r} is not a head: write KIND.LAYER.HEAD with KIND one of {', '.join(KINDS)}, "
                             f"e.g. cross.0.3")
        head = Head(parts[0], int(parts[1]), int(parts[2]))
        if head.layer >= cfg.N or head.head >= cfg.h:
            raise ValueError(f"{name!r} is outside the model: layers 0–{cfg.N - 1}, heads 0–{cfg.h - 1}")
        heads.add(head)
    return sorted(heads)


def keep_mask(cfg, rows: list[Iterable[Head]], device=None, dtype=torch.float32) -> dict[str, torch.Tensor]:
    """The kept heads of each batch row (``rows``: the heads switched off in that row): per kind a tensor
    (B, N, h) of ones with 0 where a head is off. One row serves a whole batch by broadcasting."""
    keep = {kind: torch.ones(len(rows), cfg.N, cfg.h, device=device, dtype=dtype) for kind in KINDS}  # (B, N, h)
    for b, off in enumerate(rows):
        for head in off:
            keep[head.kind][b, head.layer, head.head] = 0.0
    return keep


def _layer_keep(keep: dict | None, kind: str, i: int) -> torch.Tensor | None:
    """Layer i's factor for MultiHeadAttention's head_mask: (B, N, h) -> (B, h, 1, 1), broadcast over (L, d_k)."""
    return None if keep is None else keep[kind][:, i, :, None, None]


def encode(model: Transformer, src: torch.Tensor, keep: dict | None = None,
           src_embedding: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.encode(src)`` with heads off (``keep``, from :func:`keep_mask`). ``src_embedding`` (B, S, d_model)
    replaces the token embeddings E[src]·√d_model (the positional encoding is still added).
    -> memory (B, S, d_model), source padding mask (B, 1, 1, S)."""
    src_mask = padding_mask(src, model.cfg.pad_id)  # (B, 1, 1, S)
    layer_mask = src_mask if not bool(src_mask.all()) else None  # as model.encode: no mask where nothing is padded
    if src_embedding is None:
        x = model.embed(src, "src", None)  # (B, S, d_model)
    else:
        x = model.embed_dropout(src_embedding + model.pe[:src.size(1)])
    for i, layer in enumerate(model.encoder_layers):
        m = _layer_keep(keep, "enc", i)
        x = layer.norm1(x, lambda y, layer=layer, m=m: layer.self_attn(y, y, layer_mask, head_mask=m))
        x = layer.norm2(x, layer.ffn)
    return model.encoder_norm(x), src_mask


def decode_layers(model: Transformer, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
                  keep: dict | None = None, start: int = 0, y: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The decoder's residual stream after each of its N layers, each (B, T, d_model), heads off as ``keep``
    says. The last one, through ``model.decoder_norm``, is ``model.decode``'s output.

    ``start`` > 0: begin at layer ``start`` from ``y`` (B, T, d_model), the stream after layer start − 1 (a run
    whose heads are all on below ``start`` shares those layers); the streams returned are those from ``start``."""
    tgt_mask = target_mask(tgt, model.cfg.pad_id)  # (B, 1, T, T)
    y = model.embed(tgt, "tgt", None) if y is None else y  # (B, T, d_model)
    streams = []
    for i, layer in enumerate(model.decoder_layers):
        if i < start:
            continue
        m_self, m_cross = _layer_keep(keep, "dec", i), _layer_keep(keep, "cross", i)
        y = layer.norm1(y, lambda z, layer=layer, m=m_self: layer.self_attn(z, z, tgt_mask, head_mask=m))
        # Queries from the decoder, keys and values from the encoder output, as in DecoderLayer.
        y = layer.norm2(y, lambda z, layer=layer, m=m_cross: layer.cross_attn(z, memory, src_mask, head_mask=m))
        y = layer.norm3(y, layer.ffn)
        streams.append(y)
    return streams


def lens_logits(model: Transformer, stream: torch.Tensor) -> torch.Tensor:
    """The model's own last steps applied to a residual stream (B, T, d_model) -> logits (B, T, V): the final
    LayerNorm where the model has one (Pre-LN), then the (tied) output projection. A Post-LN model has no
    final LayerNorm (its decoder_norm is the identity): each layer already ends in one (norm3), so every
    layer's output is normalised as the last one is."""
    return model.project(model.decoder_norm(stream))


def forward(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, keep: dict | None = None,
            src_embedding: torch.Tensor | None = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``model(src, tgt)`` with heads off -> logits (B, T, V) and the decoder's stream after each layer."""
    memory, src_mask = encode(model, src, keep, src_embedding)
    streams = decode_layers(model, tgt, memory, src_mask, keep)
    return lens_logits(model, streams[-1]), streams
