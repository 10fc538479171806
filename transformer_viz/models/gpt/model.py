"""A decoder-only Transformer (GPT: Radford et al., 2018, 2019), written as plainly as
``transformer/model.py``, whose layers it reuses.

Take the encoder–decoder, drop the encoder and with it the cross-attention, and keep one stack of
blocks whose self-attention carries the causal mask: position t sees positions ≤ t only. The model
reads a prompt and predicts its next token; a completion is drawn one token at a time
(generation/sampling.py).

    x_0 = E[tokens] + P[positions],   x_l = Block(x_{l−1}),   logits = LayerNorm(x_N) Eᵀ

As in GPT-2: learned position embeddings (no sinusoids, no ×√d_model), Pre-LN blocks
(x + Attention(LayerNorm(x)), then x + FFN(LayerNorm(x))) and one final LayerNorm, GELU in the
feed-forward network, the output projection tied to the token embeddings. A block is
``transformer.EncoderLayer`` given the causal mask, so the attention code and the trace names are
the decoder's: ``decoder.{i}.self_attn.weights`` and so on (names.py lists them; there is no
``src.*``, ``encoder.*`` or ``cross_attn``).
"""

from __future__ import annotations

import torch
from torch import nn

from transformer_viz.core.masks import causal_mask
from transformer_viz.core.trace import Trace
from transformer_viz.models.gpt.config import NO_PAD, GPTConfig
from transformer_viz.models.transformer.model import EncoderLayer, final_norm


class GPT(nn.Module):
    """Decoder-only Transformer. ``forward(tokens)`` returns next-token logits (B, T, V)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = nn.Embedding(cfg.max_len, cfg.d_model)
        self.embed_dropout = nn.Dropout(cfg.dropout)
        self.decoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.decoder_norm = final_norm(cfg)
        self._init_weights()

    def _init_weights(self) -> None:
        # GPT-2's initialisation: N(0, 0.02) for every matrix and embedding, zero biases.
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def attention_mask(self, tokens: torch.Tensor) -> torch.Tensor:
        """Causal mask, and padding hidden as keys where the model has a padding token:
        (B, 1, T, T)."""
        T = tokens.size(1)
        mask = causal_mask(T, tokens.device)  # (1, 1, T, T)
        if self.cfg.pad_id != NO_PAD:
            keys = (tokens != self.cfg.pad_id)[:, None, None, :]  # (B, 1, 1, T)
            keys[..., 0] = True  # the first position always stays visible, so no row is all −∞
            mask = mask & keys  # (B, 1, T, T)
        return mask.expand(tokens.size(0), 1, T, T)

    def embed(self, tokens: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """token IDs (B, T) -> E[tokens] + P[0..T−1], (B, T, d_model)."""
        T = tokens.size(1)
        if T > self.cfg.max_len:
            raise ValueError(f"sequence of {T} positions exceeds the model's maximum of "
                             f"{self.cfg.max_len}")
        embedding = self.tok_embed(tokens)  # (B, T, d_model)
        positional = self.pos_embed.weight[:T]  # (T, d_model)
        x = embedding + positional
        if trace is not None:
            trace.record("tgt.token_ids", tokens)
            trace.record("tgt.embedding", embedding)
            trace.record("tgt.positional", positional)
            trace.record("tgt.input", x)
        return self.embed_dropout(x)

    def hidden_states(self, tokens: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """tokens (B, T) -> the stream after the last block and the final LayerNorm,
        (B, T, d_model)."""
        mask = self.attention_mask(tokens)
        x = self.embed(tokens, trace)
        for i, layer in enumerate(self.decoder_layers):
            x = layer(x, mask, trace, f"decoder.{i}")  # (B, T, d_model)
        x = self.decoder_norm(x)
        if trace is not None:
            trace.record("decoder.out", x)
        return x

    def project(self, x: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """(B, T, d_model) -> logits (B, T, V), through the token embedding matrix (tied)."""
        logits = x @ self.tok_embed.weight.t()  # (B, T, V)
        if trace is not None:
            trace.record("logits", logits)
            trace.record("probs", torch.softmax(logits.float(), dim=-1))
        return logits

    def forward(self, tokens: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """tokens (B, T), starting with <s> -> logits (B, T, V): row t predicts token t + 1."""
        return self.project(self.hidden_states(tokens, trace), trace)

    # --- generation: new positions only, the keys and values of earlier ones cached ---------------

    def extend(self, tokens: torch.Tensor, caches: list[dict]) -> torch.Tensor:
        """tokens (B, n): the next n positions, after those whose keys and values ``caches`` holds
        (one dict per block, filled here; start with ``[{} for _ in range(N)]``) -> logits of the
        last new position (B, V).

        Equal to forward() over the whole sequence at that position (tested), for a fraction of the
        work: each generated token runs one position through the blocks instead of all of them. No
        padding."""
        offset = caches[0]["k"].size(2) if caches and "k" in caches[0] else 0
        n = tokens.size(1)
        if offset + n > self.cfg.max_len:
            raise ValueError(f"sequence of {offset + n} positions exceeds the model's maximum of "
                             f"{self.cfg.max_len}")
        x = self.tok_embed(tokens) + self.pos_embed.weight[offset:offset + n]  # (B, n, d_model)
        # New position i (absolute offset + i) may attend to keys 0 … offset + i; one new position
        # sees them all.
        # (1, 1, n, offset + n)
        mask = None if n == 1 else causal_mask(offset + n, tokens.device)[..., offset:, :]
        for layer, cache in zip(self.decoder_layers, caches):
            x = layer.norm1(x, lambda y, c=cache, a=layer.self_attn: a(y, y, mask, None, "", c))
            x = layer.norm2(x, layer.ffn)
        return self.project(self.decoder_norm(x[:, -1:]))[:, 0]  # (B, V): LayerNorm is per position

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# --- the documented trace names -------------------------------------------------------------------
