"""The decoder's residual stream after each layer, and the logit lens that reads it.

The streams are read through hook points on the model's own forward pass (``decoder.{i}.out``), so
an experiment's other hooks (heads switched off, an embedding replaced) act on them as on the
output.
"""

from __future__ import annotations

import numpy as np
import torch

from transformer_viz.core.hooks import Hooks, Recorder
from transformer_viz.models.transformer.model import Transformer


def stream_names(N: int) -> list[str]:
    """The hook points of the decoder's stream after each of its N layers."""
    return [f"decoder.{i}.out" for i in range(N)]


def lens_logits(model: Transformer, stream: torch.Tensor) -> torch.Tensor:
    """The model's own last steps applied to a residual stream (B, T, d_model) -> logits (B, T, V):
    the final LayerNorm where the model has one (Pre-LN), then the (tied) output projection. A
    Post-LN model has no final LayerNorm (its decoder_norm is the identity): each layer already ends
    in one (norm3), so every layer's output is normalised as the last one is."""
    return model.project(model.decoder_norm(stream))


def decode_streams(model: Transformer, tgt: torch.Tensor, memory: torch.Tensor,
                   src_mask: torch.Tensor, hooks: Hooks | None = None, start_at_layer: int = 0,
                   stream: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The decoder's stream after each layer from ``start_at_layer`` on, each (B, T, d_model), with
    ``hooks`` acting (``stream``: the stream after layer start_at_layer − 1, see
    Transformer.decode)."""
    names = stream_names(model.cfg.N)[start_at_layer:]
    recorder = Recorder(names)
    hooks = recorder.hooks() if hooks is None else hooks.merged(recorder.hooks())
    model.decode(tgt, memory, src_mask, hooks=hooks, start_at_layer=start_at_layer, stream=stream)
    return [recorder[name] for name in names]


def forward_with_streams(model: Transformer, src: torch.Tensor, tgt: torch.Tensor,
                         hooks: Hooks | None = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``model(src, tgt)`` with ``hooks`` -> logits (B, T, V) and the decoder's stream
    after each layer."""
    memory, src_mask = model.encode(src, hooks=hooks)
    streams = decode_streams(model, tgt, memory, src_mask, hooks)
    return lens_logits(model, streams[-1]), streams


# --- inside a layer: the stream after each sublayer -----------------------------------------------

SUBLAYERS = ("self_attn", "cross_attn", "ffn")


def sublayer_names(cfg) -> list[tuple[int, str, str]]:
    """(layer, sublayer, hook point) of the decoder's stream after each sublayer and its Add & Norm:
    Post-LN's ``norm{k}.out``; Pre-LN's stream after sublayer k is what enters the next norm (the
    layer's output after the last one)."""
    rows = []
    for i in range(cfg.N):
        if cfg.pre_ln:
            names = [f"decoder.{i}.norm2.residual", f"decoder.{i}.norm3.residual",
                     f"decoder.{i}.out"]
        else:
            names = [f"decoder.{i}.norm{k}.out" for k in (1, 2, 3)]
        rows += [(i, sublayer, name) for sublayer, name in zip(SUBLAYERS, names)]
    return rows


@torch.no_grad()
def sublayer_lens(model: Transformer, src: torch.Tensor, tgt: torch.Tensor,
                  predicted: torch.Tensor) -> dict[str, np.ndarray]:
    """The logit lens after every sublayer of every decoder layer ("was it cross-attention or the
    FFN that decided?"), for one sentence pair (src (1, S), tgt (1, T)) and the tokens each position
    predicts (T,): "p" and "rank" (N, 3, T) of the predicted token, and "kl" (N, 3, T), the KL
    divergence from the model's output distribution to the lens's, in nats."""
    rows = sublayer_names(model.cfg)
    recorder = Recorder([name for _, _, name in rows])
    final = torch.log_softmax(model(src, tgt, hooks=recorder.hooks())[0].float(), -1)  # (T, V)
    p, rank, kl = [], [], []
    for _, _, name in rows:
        logp = torch.log_softmax(lens_logits(model, recorder[name])[0].float(), -1)  # (T, V)
        chosen = logp.gather(-1, predicted[:, None])  # (T, 1)
        p.append(chosen[:, 0].exp())
        rank.append(1 + (logp > chosen).sum(-1))
        kl.append((final.exp() * (final - logp)).sum(-1))
    shape = (model.cfg.N, len(SUBLAYERS), -1)
    return {key: torch.stack(values).view(shape).cpu().numpy()
            for key, values in (("p", p), ("rank", rank), ("kl", kl))}


def decided_at(rank: np.ndarray) -> np.ndarray:
    """Per target position, the first reading (row of ``rank`` (N, 3, T) flattened to N·3 rows:
    layer by layer, sublayer by sublayer) from which the token finally written is the top guess
    at every later reading too; −1 where the last reading does not rank it first (a suppressed
    token)."""
    rows = np.asarray(rank).reshape(-1, np.shape(rank)[-1]) == 1  # (N·3, T)
    # a position is decided at row r when rows r … end all rank it first
    stays = np.flip(np.cumprod(np.flip(rows, 0), 0), 0).astype(bool)  # (N·3, T)
    return np.where(stays[-1], stays.argmax(0), -1)
