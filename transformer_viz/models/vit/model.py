"""Attention beyond text: a Vision Transformer (Dosovitskiy et al., 2021) for 8 × 8 handwritten
digits, written as plainly as ``transformer/model.py``, whose encoder layer it reuses.

The image is cut into non-overlapping p × p patches; each patch, flattened to p·p pixel values, is a
token: x_p^i E (a linear map to d_model). A learned [CLS] token is put in front, a learned position
embedding is added to every token, and the N encoder layers of ``transformer/model.py``
(the same attention code, the same trace names ``encoder.{i}.self_attn.weights`` …) mix them. The
class is read from the [CLS] token's final state:

    z_0 = [x_cls; x_p^1 E; …; x_p^P E] + E_pos,   z_l = EncoderLayer(z_{l−1}),
    y = softmax(W LayerNorm(z_N^0))

Patches of 2 × 2 pixels (the default) make P = 16 tokens on a 4 × 4 grid: enough for attention maps
with something to show (4 × 4 pixel patches would leave only 4 tokens, a 2 × 2 map). The layers are
Pre-LN, as in the ViT paper. No padding: every image has the same P + 1 tokens, so the mask lets
every token see all.
"""

from __future__ import annotations

import torch
from torch import nn

from transformer_viz.core.trace import Trace
from transformer_viz.models.transformer.model import EncoderLayer, final_norm
from transformer_viz.models.vit.config import ViTConfig


def patchify(images: torch.Tensor, p: int) -> torch.Tensor:
    """images (B, H, W) -> patches (B, P, p·p), row by row over the patch grid, each patch row by
    row."""
    B, H, W = images.shape
    x = images.reshape(B, H // p, p, W // p, p)  # (B, gh, p, gw, p)
    x = x.permute(0, 1, 3, 2, 4)  # (B, gh, gw, p, p)
    return x.reshape(B, (H // p) * (W // p), p * p)  # (B, P, p·p)


def unpatchify(patches: torch.Tensor, p: int) -> torch.Tensor:
    """patches (B, P, p·p) -> images (B, H, W): the inverse of :func:`patchify` (square images)."""
    B, P, _ = patches.shape
    g = int(round(P ** 0.5))
    x = patches.reshape(B, g, g, p, p)  # (B, gh, gw, p, p)
    x = x.permute(0, 1, 3, 2, 4)  # (B, gh, p, gw, p)
    return x.reshape(B, g * p, g * p)  # (B, H, W)


class ViT(nn.Module):
    """``forward(images (B, H, W), trace)`` -> logits (B, n_classes)."""

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.patch_embed = nn.Linear(cfg.patch_size ** 2, cfg.d_model)  # E
        self.cls_token = nn.Parameter(torch.randn(1, 1, cfg.d_model) * 0.02)  # x_cls
        # E_pos
        self.pos_embed = nn.Parameter(torch.randn(1, cfg.n_patches + 1, cfg.d_model) * 0.02)
        self.embed_dropout = nn.Dropout(cfg.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.encoder_norm = final_norm(cfg)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)

    def embed(self, images: torch.Tensor, trace: Trace | None) -> torch.Tensor:
        """images (B, H, W) -> tokens (B, P + 1, d_model): [CLS] then the embedded patches, plus
        positions."""
        patches = patchify(images, self.cfg.patch_size)  # (B, P, p·p)
        embedded = self.patch_embed(patches)  # (B, P, d_model)
        B = images.shape[0]
        cls = self.cls_token.expand(B, 1, self.cfg.d_model)  # (B, 1, d_model)
        tokens = torch.cat([cls, embedded], dim=1) + self.pos_embed  # (B, P + 1, d_model)
        if trace is not None:
            trace.record("vit.patches", patches)
            trace.record("vit.patch_embed", embedded)
            trace.record("vit.positional", self.pos_embed[0])  # (P + 1, d_model)
            trace.record("vit.tokens", tokens)
        return self.embed_dropout(tokens)

    def forward(self, images: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        x = self.embed(images, trace)  # (B, P + 1, d_model)
        # (B, 1, 1, P + 1)
        mask = torch.ones(x.shape[0], 1, 1, x.shape[1], dtype=torch.bool, device=x.device)
        for i, layer in enumerate(self.encoder_layers):
            x = layer(x, mask, trace, f"encoder.{i}")
        x = self.encoder_norm(x)
        cls = x[:, 0]  # (B, d_model)
        logits = self.head(cls)  # (B, n_classes)
        if trace is not None:
            trace.record("encoder.out", x)
            trace.record("vit.cls", cls)
            trace.record("logits", logits)
            trace.record("probs", torch.softmax(logits.float(), dim=-1))
        return logits

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
