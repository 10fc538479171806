"""A decoder-only Transformer (GPT: Radford et al., 2018, 2019), written as plainly as ``transformer.py``, whose
layers it reuses.

Take the encoder–decoder, drop the encoder and with it the cross-attention, and keep one stack of blocks whose
self-attention carries the causal mask: position t sees positions ≤ t only. The model reads a prompt and
predicts its next token; a completion is drawn one token at a time (text/sampling.py).

    x_0 = E[tokens] + P[positions],   x_l = Block(x_{l−1}),   logits = LayerNorm(x_N) Eᵀ

As in GPT-2: learned position embeddings (no sinusoids, no ×√d_model), Pre-LN blocks
(x + Attention(LayerNorm(x)), then x + FFN(LayerNorm(x))) and one final LayerNorm, GELU in the feed-forward
network, the output projection tied to the token embeddings. A block is ``transformer.EncoderLayer`` given
the causal mask, so the attention code and the trace names are the decoder's: ``decoder.{i}.self_attn.weights``
and so on (trace_names below lists them; there is no ``src.*``, ``encoder.*`` or ``cross_attn``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from transformer_viz.core.jsonconfig import JsonConfig, check_size, field_problems
from transformer_viz.core.masks import causal_mask
from transformer_viz.core.special_tokens import BOS, EOS, PAD, UNK
from transformer_viz.core.trace import Trace
from transformer_viz.models.config import ACTIVATIONS
from transformer_viz.models.transformer import EncoderLayer
from transformer_viz.models.transformer_names import _attention_names, _ffn_names

ARCH = "gpt"
NO_PAD = -1  # pad_id of a model trained without padding (GPT-2): no token is ever hidden as padding


@dataclass
class GPTConfig(JsonConfig):
    """Hyper-parameters of the decoder-only model, named as in :class:`~transformer_viz.models.config.ModelConfig`
    (d_model, d_ff, h, N: N blocks in the one stack). ``arch`` tells a checkpoint's loader what to build."""

    vocab_size: int = 8000
    d_model: int = 256
    d_ff: int = 1024
    h: int = 8
    N: int = 4
    max_len: int = 128  # positions the learned position embedding has rows for
    dropout: float = 0.1
    attn_dropout: float = 0.0
    pre_ln: bool = True  # GPT-2's blocks; False builds Post-LN blocks (and no final LayerNorm)
    layer_norm_eps: float = 1e-5
    activation: str = "gelu_tanh"  # GPT-2's "gelu_new"
    pad_id: int = PAD  # NO_PAD (−1): no padding token (imported GPT-2)
    bos_id: int = BOS  # what a prompt starts with (GPT-2: <|endoftext|>)
    eos_id: int = EOS  # what ends a completion (GPT-2: <|endoftext|> again)
    unk_id: int = UNK
    arch: str = ARCH

    def __post_init__(self) -> None:
        if self.arch != ARCH:
            raise ValueError(f"arch must be {ARCH!r}, not {self.arch!r}")
        if not isinstance(self.h, int) or self.h < 1 or self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not implemented; "
                             f"choose one of {', '.join(ACTIVATIONS)}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    @property
    def name(self) -> str:
        return f"GPT (N={self.N}, d_model={self.d_model}, h={self.h}, d_ff={self.d_ff})"

    def validate(self) -> None:
        """Types and ranges of every field, checked before anything is allocated (ValueError otherwise)."""
        vocab = self.vocab_size if isinstance(self.vocab_size, int) and not isinstance(self.vocab_size, bool) else 1
        limits = {"vocab_size": (5, 1_000_000), "d_model": (2, 8192), "d_ff": (1, 65536), "h": (1, 256),
                  "N": (1, 128), "max_len": (2, 65536), "pad_id": (NO_PAD, vocab - 1), "bos_id": (0, vocab - 1),
                  "eos_id": (0, vocab - 1), "unk_id": (NO_PAD, vocab - 1)}
        problems = field_problems(self, limits, ("dropout", "attn_dropout"), ("layer_norm_eps",), ("pre_ln",))
        if problems:  # the estimate needs numbers
            check_size(problems, 0)
        per_block = 4 * self.d_model * self.d_model + 2 * self.d_model * self.d_ff
        check_size(problems, self.N * per_block + (self.vocab_size + self.max_len) * self.d_model)


class GPT(nn.Module):
    """Decoder-only Transformer. ``forward(tokens)`` returns next-token logits (B, T, V)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = nn.Embedding(cfg.max_len, cfg.d_model)
        self.embed_dropout = nn.Dropout(cfg.dropout)
        self.decoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.decoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.pre_ln else nn.Identity()
        self._init_weights()

    def _init_weights(self) -> None:
        # GPT-2's initialisation: N(0, 0.02) for every matrix and embedding, zero biases.
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def attention_mask(self, tokens: torch.Tensor) -> torch.Tensor:
        """Causal mask, and padding hidden as keys where the model has a padding token: (B, 1, T, T)."""
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
            raise ValueError(f"sequence of {T} positions exceeds the model's maximum of {self.cfg.max_len}")
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
        """tokens (B, T) -> the stream after the last block and the final LayerNorm, (B, T, d_model)."""
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

    # --- generation: new positions only, the keys and values of earlier ones cached ------------------------

    def extend(self, tokens: torch.Tensor, caches: list[dict]) -> torch.Tensor:
        """tokens (B, n): the next n positions, after those whose keys and values ``caches`` holds (one dict per
        block, filled here; start with ``[{} for _ in range(N)]``) -> logits of the last new position (B, V).

        Equal to forward() over the whole sequence at that position (tested), for a fraction of the work: each
        generated token runs one position through the blocks instead of all of them. No padding."""
        offset = caches[0]["k"].size(2) if caches and "k" in caches[0] else 0
        n = tokens.size(1)
        if offset + n > self.cfg.max_len:
            raise ValueError(f"sequence of {offset + n} positions exceeds the model's maximum of {self.cfg.max_len}")
        x = self.tok_embed(tokens) + self.pos_embed.weight[offset:offset + n]  # (B, n, d_model)
        # New position i (absolute offset + i) may attend to keys 0 … offset + i; one new position sees them all.
        mask = None if n == 1 else causal_mask(offset + n, tokens.device)[..., offset:, :]  # (1, 1, n, offset + n)
        for layer, cache in zip(self.decoder_layers, caches):
            x = layer.norm1(x, lambda y, c=cache, a=layer.self_attn: a(y, y, mask, None, "", c))
            x = layer.norm2(x, layer.ffn)
        return self.project(self.decoder_norm(x[:, -1:]))[:, 0]  # (B, V): LayerNorm is per position

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# --- the documented trace names ---------------------------------------------------------------------------

def _pre_ln_norm_names(prefix: str, sublayer: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.residual", "(B, T, d_model)", f"the stream x before the {sublayer} (Pre-LN: the norm's input)"),
        (f"{prefix}.mean", "(B, T)", "per-position mean of x over d_model"),
        (f"{prefix}.var", "(B, T)", "per-position (biased) variance of x over d_model"),
        (f"{prefix}.out", "(B, T, d_model)", f"LayerNorm(x), what the {sublayer} reads; x + {sublayer}(LayerNorm(x)) "
                                             f"goes on"),
    ]


def trace_names(N: int = 4) -> list[tuple[str, str, str]]:
    """Every name ``GPT.forward(..., trace=Trace())`` records for a model of N Pre-LN blocks."""
    rows = [
        ("tgt.token_ids", "(B, T)", "token IDs of the prompt, starting with <s>"),
        ("tgt.embedding", "(B, T, d_model)", "E[token_ids] (no ×√d_model)"),
        ("tgt.positional", "(T, d_model)", "P[0..T−1], a learned position embedding"),
        ("tgt.input", "(B, T, d_model)", "embedding + positional (dropout in training)"),
    ]
    for i in range(N):
        p = f"decoder.{i}"
        rows += _pre_ln_norm_names(f"{p}.norm1", "self-attention")
        rows += _attention_names(f"{p}.self_attn", "T", "T") + _pre_ln_norm_names(f"{p}.norm2", "FFN")
        rows += [(n, s, m.replace("max(0, ", "GELU(") if n.endswith("hidden") else m)
                 for n, s, m in _ffn_names(f"{p}.ffn", "T")]
        rows.append((f"{p}.out", "(B, T, d_model)", "output of block i: x + Attention(LN(x)), then + FFN(LN(·))"))
    rows += [
        ("decoder.out", "(B, T, d_model)", "LayerNorm of the last block's output (the final LayerNorm)"),
        ("logits", "(B, T, V)", "decoder.out Eᵀ (output projection tied to the token embeddings)"),
        ("probs", "(B, T, V)", "softmax(logits) over the vocabulary: row t is the distribution of token t + 1"),
    ]
    return rows
