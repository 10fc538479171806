"""Attention beyond text, part two: a toy Detection Transformer (Carion et al., 2020) that finds
handwritten digits on a small canvas, written as plainly as ``transformer/model.py``, whose encoder
and decoder layers it reuses.

A small CNN turns the canvas into a grid of feature vectors; each grid cell is a token of the
encoder, which mixes them with self-attention. The decoder starts from a fixed set of M learned
*object queries*; each query looks at the image through cross-attention (queries from the decoder,
keys and values from the encoder's output) and at the other queries through self-attention, and
finally predicts one object: a class among the ten digits or "no object" (∅), and a box. There is no
anchor, no non-maximum suppression and no causal mask: the queries are a set, and training pairs
them one-to-one with the objects (Hungarian matching, models/detr/boxes.py).

    tokens = Conv(canvas) flattened + E_pos,  memory = Encoder(tokens),  y = Decoder(Q_obj, memory)
    class_i = softmax(W_c y_i)  (11 classes, the last is ∅),
    box_i = sigmoid(MLP(y_i)) = (cx, cy, w, h) ∈ [0, 1]⁴

Simplifications of the paper, each for a 32 × 32 canvas on a CPU: the learned position embedding
E_pos is added once to the tokens (the paper adds a sine encoding to the keys of every layer); the
queries are the decoder's input (the paper starts from zeros and adds the queries to every layer's
attention); Pre-LN layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_viz.core.trace import Trace
from transformer_viz.models.detr.config import DETRConfig
from transformer_viz.models.transformer.model import DecoderLayer, EncoderLayer, final_norm


@dataclass
class DETROutput:
    """What one forward pass predicts; ``aux`` holds the same for the outputs of the earlier decoder
    layers (trained too, as in the paper: every layer learns to predict)."""

    class_logits: torch.Tensor  # (B, M, n_classes + 1)
    boxes: torch.Tensor  # (B, M, 4): (cx, cy, w, h), fractions of the canvas side
    aux: list[tuple[torch.Tensor, torch.Tensor]]


class Backbone(nn.Module):
    """canvas (B, H, W) -> feature map (B, d_model, H/4, W/4): four 3 × 3 convolutions, two of
    stride 2, and a 1 × 1 projection to d_model. The receptive field of one cell is 17 pixels, more
    than a digit."""

    def __init__(self, channels: int, d_model: int) -> None:
        super().__init__()
        c1, c2 = channels, 2 * channels
        self.convs = nn.ModuleList([nn.Conv2d(1, c1, 3, padding=1),
                                    nn.Conv2d(c1, c2, 3, stride=2, padding=1),
                                    nn.Conv2d(c2, c2, 3, stride=2, padding=1),
                                    nn.Conv2d(c2, c2, 3, padding=1)])
        self.project = nn.Conv2d(c2, d_model, 1)

    def forward(self, canvas: torch.Tensor) -> torch.Tensor:
        x = canvas[:, None]  # (B, 1, H, W)
        for conv in self.convs:
            x = F.relu(conv(x))
        return self.project(x)  # (B, d_model, H/4, W/4)


class BoxHead(nn.Module):
    """y (…, d_model) -> box (…, 4) in [0, 1]: a three-layer perceptron, as in the paper."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d_model, d_model), nn.Linear(d_model, d_model),
                                     nn.Linear(d_model, 4)])

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            y = F.relu(layer(y))
        return torch.sigmoid(self.layers[-1](y))


class DETR(nn.Module):
    """``forward(canvas (B, H, W), trace)`` -> :class:`DETROutput`."""

    def __init__(self, cfg: DETRConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = Backbone(cfg.backbone_channels, cfg.d_model)
        self.pos_embed = nn.Parameter(torch.randn(cfg.n_tokens, cfg.d_model) * 0.02)  # E_pos
        # Q_obj, the object queries
        self.query_embed = nn.Parameter(torch.randn(cfg.n_queries, cfg.d_model))
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.encoder_norm, self.decoder_norm = final_norm(cfg), final_norm(cfg)
        self.class_head = nn.Linear(cfg.d_model, cfg.n_classes + 1)
        self.box_head = BoxHead(cfg.d_model)

    def encode(self, canvas: torch.Tensor, trace: Trace | None) -> torch.Tensor:
        """canvas (B, H, W) -> memory (B, S, d_model), S = (H/4)·(W/4) feature-map cells, row by
        row."""
        features = self.backbone(canvas)  # (B, d_model, g, g)
        tokens = features.flatten(2).transpose(1, 2)  # (B, S, d_model)
        x = tokens + self.pos_embed
        if trace is not None:
            trace.record("detr.canvas", canvas)
            trace.record("detr.features", tokens)
            trace.record("detr.positional", self.pos_embed)
            trace.record("detr.tokens", x)
        # (B, 1, 1, S)
        everything = torch.ones(x.shape[0], 1, 1, x.shape[1], dtype=torch.bool, device=x.device)
        for i, layer in enumerate(self.encoder_layers):
            x = layer(x, everything, trace, f"encoder.{i}")
        x = self.encoder_norm(x)
        if trace is not None:
            trace.record("encoder.out", x)
        return x

    def predict(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """decoder stream (B, M, d_model) -> class logits (B, M, n_classes + 1), boxes (B, M, 4)."""
        y = self.decoder_norm(y)
        return self.class_head(y), self.box_head(y)

    def forward(self, canvas: torch.Tensor, trace: Trace | None = None) -> DETROutput:
        memory = self.encode(canvas, trace)  # (B, S, d_model)
        B, S, M = canvas.shape[0], memory.shape[1], self.cfg.n_queries
        y = self.query_embed.expand(B, M, self.cfg.d_model)  # (B, M, d_model)
        if trace is not None:
            trace.record("detr.queries", self.query_embed)
        # No mask anywhere: the queries are a set (no order to hide), and the canvas has no padding.
        # (B, 1, M, M)
        among_queries = torch.ones(B, 1, M, M, dtype=torch.bool, device=canvas.device)
        to_memory = torch.ones(B, 1, 1, S, dtype=torch.bool, device=canvas.device)  # (B, 1, 1, S)
        aux = []
        for i, layer in enumerate(self.decoder_layers):
            y = layer(y, memory, among_queries, to_memory, trace, f"decoder.{i}")
            if i < len(self.decoder_layers) - 1 and self.training:
                aux.append(self.predict(y))
        class_logits, boxes = self.predict(y)
        if trace is not None:
            trace.record("decoder.out", self.decoder_norm(y))
            trace.record("detr.class_logits", class_logits)
            trace.record("detr.class_probs", torch.softmax(class_logits.float(), dim=-1))
            trace.record("detr.boxes", boxes)
        return DETROutput(class_logits, boxes, aux)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
