"""The decoder's residual stream after each layer, and the logit lens that reads it.

The streams are read through hook points on the model's own forward pass (``decoder.{i}.out``), so an
experiment's other hooks (heads switched off, an embedding replaced) act on them as on the output.
"""

from __future__ import annotations

import torch

from transformer_viz.core.hooks import Hooks, Recorder
from transformer_viz.models.transformer import Transformer


def stream_names(N: int) -> list[str]:
    """The hook points of the decoder's stream after each of its N layers."""
    return [f"decoder.{i}.out" for i in range(N)]


def lens_logits(model: Transformer, stream: torch.Tensor) -> torch.Tensor:
    """The model's own last steps applied to a residual stream (B, T, d_model) -> logits (B, T, V): the
    final LayerNorm where the model has one (Pre-LN), then the (tied) output projection. A Post-LN model
    has no final LayerNorm (its decoder_norm is the identity): each layer already ends in one (norm3), so
    every layer's output is normalised as the last one is."""
    return model.project(model.decoder_norm(stream))


def decode_streams(model: Transformer, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
                   hooks: Hooks | None = None, start_at_layer: int = 0,
                   stream: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The decoder's stream after each layer from ``start_at_layer`` on, each (B, T, d_model), with
    ``hooks`` acting (``stream``: the stream after layer start_at_layer − 1, see Transformer.decode)."""
    names = stream_names(model.cfg.N)[start_at_layer:]
    recorder = Recorder(names)
    hooks = recorder.hooks() if hooks is None else hooks.merged(recorder.hooks())
    model.decode(tgt, memory, src_mask, hooks=hooks, start_at_layer=start_at_layer, stream=stream)
    return [recorder[name] for name in names]


def forward_with_streams(model: Transformer, src: torch.Tensor, tgt: torch.Tensor,
                         hooks: Hooks | None = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``model(src, tgt)`` with ``hooks`` -> logits (B, T, V) and the decoder's stream after each layer."""
    memory, src_mask = model.encode(src, hooks=hooks)
    streams = decode_streams(model, tgt, memory, src_mask, hooks)
    return lens_logits(model, streams[-1]), streams
