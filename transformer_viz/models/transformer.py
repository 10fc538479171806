"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), top to bottom.

Every ``forward`` takes an optional :class:`~transformer_viz.core.trace.Trace`. Without one, attention runs
through PyTorch's fused ``scaled_dot_product_attention``; with one, it runs the explicit
softmax(QKᵀ/√d_k)·V that a student reads, and records every intermediate under a stable name.
No tensor is ever kept on a module between calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from transformer_viz.core.masks import padding_mask, target_mask
from transformer_viz.core.trace import Trace
from transformer_viz.models.config import ModelConfig


def sinusoidal_positional_encoding(length: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / base^(2i/d_model)), PE(pos, 2i+1) = cos(pos / base^(2i/d_model)). -> (length, d_model)"""
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / base ** (two_i / d_model)  # (L, d_model/2)
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class Embedding(nn.Module):
    """Token embedding scaled by √d_model, so that it is not drowned by the positional encoding.

    ``scale=False`` leaves the rows as they are (Marian models trained without the scale, see checkpoints/marian.py)."""

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True) -> None:
        super().__init__()
        self.d_model = d_model
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * d_model**-0.5)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(token_ids, self.weight) * self.scale  # (B, L, d_model)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W_O, head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i)."""

    def __init__(self, d_model: int, h: int, attn_dropout: float = 0.0) -> None:
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_dropout = attn_dropout

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, L, _ = x.shape
        return x.view(B, L, self.h, self.d_k).transpose(1, 2)  # (B, h, L, d_k)

    def keys_values(self, x_kv: torch.Tensor) -> dict[str, torch.Tensor]:
        """x_kv (B, Lk, d_model) -> {"k", "v"}, each (B, h, Lk, d_k)."""
        return {"k": self.split_heads(self.w_k(x_kv)), "v": self.split_heads(self.w_v(x_kv))}

    def forward(
        self,
        x_q: torch.Tensor,
        x_kv: torch.Tensor,
        mask: torch.Tensor | None,
        trace: Trace | None = None,
        name: str = "",
        cache: dict | None = None,
        static_kv: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x_q (B, Lq, d_model), x_kv (B, Lk, d_model), mask broadcastable to (B, h, Lq, Lk) -> (B, Lq, d_model).

        ``cache`` (incremental decoding only): for self-attention the keys/values of earlier steps are
        appended to; for cross-attention (``static_kv``) they are computed once from the encoder output.
        """
        q = self.split_heads(self.w_q(x_q))  # (B, h, Lq, d_k)
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]  # (B, h, Lk, d_k)
        else:
            kv = self.keys_values(x_kv)
            k, v = kv["k"], kv["v"]  # (B, h, Lk, d_k)
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)  # (B, h, L_past + Lk, d_k)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v

        if trace is None:
            dropout_p = self.attn_dropout if self.training else 0.0
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (B, h, Lq, d_k)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, Lq, Lk)
            masked_scores = scores.masked_fill(~mask, float("-inf"))
            weights = torch.softmax(masked_scores, dim=-1)  # masked cells: exp(−∞) = exactly 0
            weights = F.dropout(weights, self.attn_dropout, self.training)
            heads = weights @ v  # (B, h, Lq, d_k)
            for key, value in (("q", q), ("k", k), ("v", v), ("scores", scores), ("mask", mask),
                               ("masked_scores", masked_scores), ("weights", weights), ("heads", heads)):
                trace.record(f"{name}.{key}", value)

        if head_mask is not None:  # (B|1, h, 1, 1); 0 switches head i off before W_O (models/heads.py)
            heads = heads * head_mask  # (B, h, Lq, d_k)
        B, _, Lq, _ = heads.shape
        concat = heads.transpose(1, 2).reshape(B, Lq, self.h * self.d_k)  # (B, Lq, d_model)
        out = self.w_o(concat)  # (B, Lq, d_model)
        if trace is not None:
            trace.record(f"{name}.out", out)
        return out


# The feed-forward nonlinearities a config may name (config.ACTIVATIONS): the paper's ReLU, the exact
# GELU and swish (x·sigmoid(x)) that imported Marian models use (transformers' "gelu" and "swish"), and
# GPT-2's tanh approximation of GELU (transformers' "gelu_new"), which models/gpt.py uses.
_ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu,
                         "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position separately (max(0, ·) is the
    config's activation: ReLU unless an imported model needs another)."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu") -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.activation = _ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: torch.Tensor, trace: Trace | None = None, name: str = "") -> torch.Tensor:
        hidden = self.activation(self.w_1(x))  # (B, L, d_ff)
        out = self.w_2(hidden)  # (B, L, d_model)
        if trace is not None:
            trace.record(f"{name}.hidden", hidden)
            trace.record(f"{name}.out", out)
        return out


class AddNorm(nn.Module):
    """The residual connection around a sublayer, with LayerNorm.

    Post-LN (the paper): LayerNorm(x + Dropout(Sublayer(x))). Pre-LN: x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, d_model: int, dropout: float, pre_ln: bool, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.pre_ln = pre_ln

    def _record(self, trace: Trace | None, name: str, residual: torch.Tensor, out: torch.Tensor) -> None:
        if trace is not None:
            mean = residual.mean(-1, keepdim=True)  # (B, L, 1)
            var = (residual - mean).pow(2).mean(-1)  # (B, L): biased, as LayerNorm uses (and ~3x faster than torch.var)
            trace.record(f"{name}.residual", residual)
            trace.record(f"{name}.mean", mean.squeeze(-1))  # (B, L)
            trace.record(f"{name}.var", var)
            trace.record(f"{name}.out", out)

    def forward(self, x: torch.Tensor, sublayer, trace: Trace | None = None, name: str = "") -> torch.Tensor:
        if self.pre_ln:
            normed = self.norm(x)
            self._record(trace, name, x, normed)  # Pre-LN: the norm acts on the stream before the sublayer
            return x + self.dropout(sublayer(normed))
        residual = x + self.dropout(sublayer(x))
        out = self.norm(residual)
        self._record(trace, name, residual, out)
        return out


class EncoderLayer(nn.Module):
    """Self-attention → Add & Norm → feed-forward → Add & Norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        # vit.py and detr.py build these layers from their own configs, which have no activation: ReLU, as in the paper
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, getattr(cfg, "activation", "relu"))
        self.norm1 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        self.norm2 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor, trace: Trace | None, name: str) -> torch.Tensor:
        x = self.norm1(x, lambda y: self.self_attn(y, y, src_mask, trace, f"{name}.self_attn"), trace, f"{name}.norm1")
        x = self.norm2(x, lambda y: self.ffn(y, trace, f"{name}.ffn"), trace, f"{name}.norm2")
        if trace is not None:
            trace.record(f"{name}.out", x)
        return x  # (B, S, d_model)


class DecoderLayer(nn.Module):
    """Masked self-attention → Add & Norm → cross-attention → Add & Norm → feed-forward → Add & Norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, getattr(cfg, "activation", "relu"))  # detr.py: ReLU
        self.norm1 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        self.norm2 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        self.norm3 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor,
        src_mask: torch.Tensor,
        trace: Trace | None,
        name: str,
        cache: dict | None = None,
    ) -> torch.Tensor:
        self_cache = cache.setdefault("self", {}) if cache is not None else None
        cross_cache = cache.setdefault("cross", {}) if cache is not None else None
        y = self.norm1(y, lambda z: self.self_attn(z, z, tgt_mask, trace, f"{name}.self_attn", self_cache),
                       trace, f"{name}.norm1")
        # Queries come from the decoder, keys and values from the encoder output.
        y = self.norm2(y, lambda z: self.cross_attn(z, memory, src_mask, trace, f"{name}.cross_attn",
                                                    cross_cache, static_kv=True), trace, f"{name}.norm2")
        y = self.norm3(y, lambda z: self.ffn(z, trace, f"{name}.ffn"), trace, f"{name}.norm3")
        if trace is not None:
            trace.record(f"{name}.out", y)
        return y  # (B, T, d_model)


@dataclass
class DecoderState:
    """What incremental decoding carries from one step to the next: per-layer key/value caches
    ({"self": …, "cross": …}, each {"k", "v"} of shape (B, h, L, d_k))."""

    memory: torch.Tensor  # (B, S, d_model)
    src_mask: torch.Tensor | None  # (B, 1, 1, S); None when no source is padded (attention then needs no mask)
    caches: list[dict] = field(default_factory=list)
    length: int = 0  # target positions already processed

    def select(self, index: torch.Tensor) -> "DecoderState":
        """Reorder/duplicate/drop batch rows: beams of a new source, sentences leaving the batch."""

        def pick(obj):
            if isinstance(obj, dict):
                return {key: pick(value) for key, value in obj.items()}
            return obj.index_select(0, index)

        src_mask = None if self.src_mask is None else self.src_mask.index_select(0, index)
        return DecoderState(self.memory.index_select(0, index), src_mask, [pick(c) for c in self.caches], self.length)

    def select_beams(self, index: torch.Tensor) -> "DecoderState":
        """Reorder rows among the beams of the same source (beam search, every step). Those rows share the
        memory, the mask and the cross-attention keys/values, which therefore stay as they are: only the
        self-attention caches, which differ from beam to beam, are gathered."""
        caches = [{**c, "self": {key: value.index_select(0, index) for key, value in c["self"].items()}}
                  for c in self.caches]
        return DecoderState(self.memory, self.src_mask, caches, self.length)


def _padded(mask: torch.Tensor) -> bool:
    """Whether a padding mask hides any position."""
    return not bool(mask.all())


class Transformer(nn.Module):
    """Encoder–decoder Transformer. ``forward(src, tgt)`` returns logits (B, T, V)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(cfg.vocab_size, cfg.d_model, cfg.scale_embedding)
        self.tgt_embed = self.src_embed if cfg.tie_embeddings else Embedding(cfg.vocab_size, cfg.d_model,
                                                                               cfg.scale_embedding)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.N))
        # Pre-LN leaves the stream un-normalised after the last layer, so it needs one final LayerNorm.
        self.encoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.pre_ln else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.pre_ln else nn.Identity()
        if not cfg.tie_embeddings:
            self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.logits_bias:  # Marian's final_logits_bias: fixed at import, never trained here
            self.register_buffer("logits_bias", torch.zeros(cfg.vocab_size))
        self.embed_dropout = nn.Dropout(cfg.dropout)
        # A buffer, not a parameter: fixed by the formula, rebuilt from the config, never trained or saved.
        self.register_buffer("pe", sinusoidal_positional_encoding(cfg.max_len, cfg.d_model, cfg.pe_base),
                             persistent=False)
        self._init_weights()

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)

    # --- the pieces, in the order data flows through them ---------------------------------------

    def embed(self, token_ids: torch.Tensor, side: str, trace: Trace | None, offset: int = 0) -> torch.Tensor:
        """token IDs (B, L) -> embedding × √d_model + PE, (B, L, d_model)."""
        L = token_ids.size(1)
        if offset + L > self.cfg.max_len:
            raise ValueError(f"sequence of {offset + L} positions exceeds the model's maximum of {self.cfg.max_len}")
        embedding = (self.src_embed if side == "src" else self.tgt_embed)(token_ids)  # (B, L, d_model)
        positional = self.pe[offset:offset + L]  # (L, d_model)
        x = embedding + positional
        if trace is not None:
            trace.record(f"{side}.token_ids", token_ids)
            trace.record(f"{side}.embedding", embedding)
            trace.record(f"{side}.positional", positional)
            trace.record(f"{side}.input", x)
        return self.embed_dropout(x)

    def encode(self, src: torch.Tensor, trace: Trace | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """src (B, S) -> memory (B, S, d_model) and the source padding mask (B, 1, 1, S)."""
        src_mask = padding_mask(src, self.cfg.pad_id)  # (B, 1, 1, S)
        # Untraced and nothing padded: attention without a mask gives the same numbers, with less work.
        layer_mask = src_mask if trace is not None or _padded(src_mask) else None
        x = self.embed(src, "src", trace)
        for i, layer in enumerate(self.encoder_layers):
            x = layer(x, layer_mask, trace, f"encoder.{i}")
        x = self.encoder_norm(x)
        if trace is not None:
            trace.record("encoder.out", x)
        return x, src_mask

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        trace: Trace | None = None,
        causal: bool = True,
    ) -> torch.Tensor:
        """tgt (B, T) attending to memory (B, S, d_model) -> decoder output (B, T, d_model).

        ``causal=False`` drops the subsequent-position mask (the masking lab's "what if" view).
        """
        tgt_mask = target_mask(tgt, self.cfg.pad_id, causal=causal)  # (B, 1, T, T)
        y = self.embed(tgt, "tgt", trace)
        for i, layer in enumerate(self.decoder_layers):
            y = layer(y, memory, tgt_mask, src_mask, trace, f"decoder.{i}")
        y = self.decoder_norm(y)
        if trace is not None:
            trace.record("decoder.out", y)
        return y

    def project(self, y: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """decoder output (B, T, d_model) -> logits (B, T, V)."""
        weight = self.tgt_embed.weight if self.cfg.tie_embeddings else self.generator.weight
        logits = y @ weight.t()  # (B, T, V)
        if self.cfg.logits_bias:
            logits = logits + self.logits_bias
        if trace is not None:
            trace.record("logits", logits)
            trace.record("probs", torch.softmax(logits.float(), dim=-1))
        return logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, trace: Trace | None = None,
                causal: bool = True) -> torch.Tensor:
        """src (B, S), tgt (B, T) token IDs -> logits (B, T, V). Teacher forcing: tgt starts with <s>."""
        memory, src_mask = self.encode(src, trace)
        return self.project(self.decode(tgt, memory, src_mask, trace, causal), trace)

    # --- incremental decoding: one new target position per call, keys/values cached --------------

    def start_state(self, src: torch.Tensor) -> DecoderState:
        """Encode the source once; the cross-attention keys/values depend only on it, so they are computed
        here, once per sentence (beam search copies them to its beams instead of recomputing them)."""
        memory, src_mask = self.encode(src)
        caches = [{"self": {}, "cross": layer.cross_attn.keys_values(memory)} for layer in self.decoder_layers]
        return DecoderState(memory, src_mask if _padded(src_mask) else None, caches)

    def decode_step(self, last_tokens: torch.Tensor, state: DecoderState) -> torch.Tensor:
        """last_tokens (B,) at position state.length -> logits (B, V) for the next position.

        The new position may attend to every cached earlier position, so no causal mask is needed;
        the target is never padded during generation (finished rows keep emitting <pad>, ignored).
        """
        y = self.embed(last_tokens[:, None], "tgt", None, offset=state.length)  # (B, 1, d_model)
        for layer, cache in zip(self.decoder_layers, state.caches):
            y = layer(y, state.memory, None, state.src_mask, None, "", cache)  # None: attend to all cached keys
        y = self.decoder_norm(y)
        state.length += 1
        return self.project(y)[:, 0]  # (B, V)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# --- the documented trace names ---------------------------------------------------------------------------
# What forward(..., trace=Trace()) records, with shapes and formulas; the tests check the list against a real
# forward pass and models.trace_docs writes docs/trace_names.md from it.

def _attention_names(prefix: str, q_len: str, k_len: str) -> list[tuple[str, str, str]]:
    # Self-attention reads one input X; cross-attention takes queries from the decoder stream and keys and
    # values from the encoder output. Every projection is an nn.Linear, so it adds a bias.
    x_q, x_kv = ("X", "memory") if prefix.endswith("cross_attn") else ("X", "X")
    return [
        (f"{prefix}.q", f"(B, h, {q_len}, d_k)", f"Q = {x_q} W_Q + b_Q, split into h heads"),
        (f"{prefix}.k", f"(B, h, {k_len}, d_k)", f"K = {x_kv} W_K + b_K"),
        (f"{prefix}.v", f"(B, h, {k_len}, d_k)", f"V = {x_kv} W_V + b_V"),
        (f"{prefix}.scores", f"(B, h, {q_len}, {k_len})", "Q Kᵀ / √d_k, before masking"),
        (f"{prefix}.mask", f"broadcastable to (B, h, {q_len}, {k_len})", "True = may attend"),
        (f"{prefix}.masked_scores", f"(B, h, {q_len}, {k_len})", "scores with masked cells set to −∞"),
        (f"{prefix}.weights", f"(B, h, {q_len}, {k_len})", "softmax over the last axis; masked cells exactly 0"),
        (f"{prefix}.heads", f"(B, h, {q_len}, d_k)", "weights · V, one result per head"),
        (f"{prefix}.out", f"(B, {q_len}, d_model)", "Concat(head_0, …, head_{h−1}) W_O + b_O"),
    ]


def _norm_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.residual", f"(B, {length}, d_model)", "x + Sublayer(x), the input of LayerNorm (Post-LN)"),
        (f"{prefix}.mean", f"(B, {length})", "per-position mean of the residual over d_model"),
        (f"{prefix}.var", f"(B, {length})", "per-position (biased) variance of the residual over d_model"),
        (f"{prefix}.out", f"(B, {length}, d_model)", "LayerNorm(residual) = γ ⊙ (residual − mean)/√(var + ε) + β"),
    ]


def _ffn_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.hidden", f"(B, {length}, d_ff)", "max(0, x W_1 + b_1)"),
        (f"{prefix}.out", f"(B, {length}, d_model)", "hidden W_2 + b_2"),
    ]


def trace_names(N: int = 6) -> list[tuple[str, str, str]]:
    """Every recorded name with its shape and formula, for a model of N layers (Post-LN)."""
    rows: list[tuple[str, str, str]] = []

    def embedding_rows(side: str, length: str) -> list[tuple[str, str, str]]:
        return [
            (f"{side}.token_ids", f"(B, {length})", "token IDs from the tokenizer, padded with <pad>"),
            (f"{side}.embedding", f"(B, {length}, d_model)", "E[token_ids] × √d_model"),
            (f"{side}.positional", f"({length}, d_model)",
             "PE(pos, 2i) = sin(pos/base^(2i/d_model)), PE(pos, 2i+1) = cos(pos/base^(2i/d_model))"),
            (f"{side}.input", f"(B, {length}, d_model)", "embedding + positional (dropout in training)"),
        ]

    rows += embedding_rows("src", "S")
    for i in range(N):
        p = f"encoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "S", "S") + _norm_names(f"{p}.norm1", "S")
        rows += _ffn_names(f"{p}.ffn", "S") + _norm_names(f"{p}.norm2", "S")
        rows.append((f"{p}.out", "(B, S, d_model)", "output of encoder layer i (= norm2.out in Post-LN)"))
    rows.append(("encoder.out", "(B, S, d_model)", "output of the last encoder layer (the 'memory')"))
    rows += embedding_rows("tgt", "T")
    for i in range(N):
        p = f"decoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "T", "T") + _norm_names(f"{p}.norm1", "T")
        rows += _attention_names(f"{p}.cross_attn", "T", "S") + _norm_names(f"{p}.norm2", "T")
        rows += _ffn_names(f"{p}.ffn", "T") + _norm_names(f"{p}.norm3", "T")
        rows.append((f"{p}.out", "(B, T, d_model)", "output of decoder layer i (= norm3.out in Post-LN)"))
    rows += [
        ("decoder.out", "(B, T, d_model)", "output of the last decoder layer"),
        ("logits", "(B, T, V)", "decoder.out Eᵀ (output projection tied to the embeddings)"),
        ("probs", "(B, T, V)", "softmax(logits) over the vocabulary"),
    ]
    return rows


_ATTENTION_HOOKS = {"q": "hook_q", "k": "hook_k", "v": "hook_v", "masked_scores": "hook_attn_scores",
                    "weights": "hook_pattern", "heads": "hook_z"}


def transformerlens_hook(name: str) -> str:
    """The nearest TransformerLens hook for a generic traced name ("encoder.{i}.self_attn.weights"),
    "" where there is none; docs/trace_names.md says how near."""
    parts = name.split(".")
    if parts[0] in ("src", "tgt"):
        side = "encoder" if parts[0] == "src" else "decoder"
        return {"embedding": "hook_embed", "positional": "hook_pos_embed",
                "input": f"{side}.0.hook_resid_pre"}.get(parts[1], "")
    if len(parts) < 3:
        return ""  # encoder.out, decoder.out, logits, probs: no hook of their own
    block, part, leaf = ".".join(parts[:2]), parts[2], parts[-1]
    if part == "out":
        return f"{block}.hook_resid_post"
    if part in ("self_attn", "cross_attn"):
        module = "attn" if part == "self_attn" else "cross_attn"
        if leaf == "out":
            return f"{block}.hook_{module}_out"
        return f"{block}.{module}.{_ATTENTION_HOOKS[leaf]}" if leaf in _ATTENTION_HOOKS else ""
    if part.startswith("norm"):
        hook = {"var": "hook_scale", "out": "hook_normalized"}.get(leaf)
        return f"{block}.ln{part[len('norm'):]}.{hook}" if hook else ""
    return {"hidden": f"{block}.mlp.hook_post", "out": f"{block}.hook_mlp_out"}.get(leaf, "")
