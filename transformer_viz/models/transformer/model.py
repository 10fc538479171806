"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), top to
bottom.

This one forward pass is what the app, the command line, the notebook, training and decoding run:
decoding calls it one position at a time with a key/value cache (``start_state`` / ``decode_step``).
Every documented name (docs/trace_names.md) is a hook point (core/hooks.py): a
:class:`~transformer_viz.core.trace.Trace` records them all;
:class:`~transformer_viz.core.hooks.Hooks` read or replace chosen ones (switch a head off, patch in
another run's activation, read a layer's stream). Attention runs through PyTorch's fused
``scaled_dot_product_attention`` unless something reads its steps; then it runs the explicit
softmax(QKᵀ/√d_k)·V that a student reads. The weight products go through models/products.py, which
lays the weights out for speed when no gradient is wanted. No tensor is ever kept on a module
between calls.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transformer_viz.core.hooks import Hooks, combine, explicit, point
from transformer_viz.core.masks import padding_mask, target_mask
from transformer_viz.core.trace import Trace
from transformer_viz.fenced.torch_private import norm_parameters, submodules_at_hand
from transformer_viz.models import products
from transformer_viz.models.transformer.config import ModelConfig
from transformer_viz.models.transformer.state import DecoderState


def sinusoidal_positional_encoding(length: int, d_model: int,
                                   base: float = 10000.0) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / base^(2i/d_model)), PE(pos, 2i+1) = cos(pos / base^(2i/d_model)).
    -> (length, d_model)"""
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / base ** (two_i / d_model)  # (L, d_model/2)
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class Embedding(nn.Module):
    """Token embedding scaled by √d_model, so that it is not drowned by the positional encoding.

    ``scale=False`` leaves the rows as they are (Marian models trained without the scale, see
    checkpoints/marian.py)."""

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True) -> None:
        super().__init__()
        self.d_model = d_model
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * d_model**-0.5)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(token_ids, self.weight) * self.scale  # (B, L, d_model)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W_O,
    head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i)."""

    def __init__(self, d_model: int, h: int, attn_dropout: float = 0.0) -> None:
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_dropout = attn_dropout
        submodules_at_hand(self)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d_model) -> (B, h, L, d_k)."""
        B, L, _ = x.shape
        if L == 1:  # a decoding step's one position: the same view without the transpose
            return x.view(B, self.h, 1, self.d_k)
        return x.view(B, L, self.h, self.d_k).transpose(1, 2)

    def merge_heads(self, heads: torch.Tensor) -> torch.Tensor:
        """(B, h, L, d_k) -> Concat(head_1, …, head_h), (B, L, d_model)."""
        B, _, L, _ = heads.shape
        if L == 1:
            return heads.reshape(B, 1, self.h * self.d_k)
        return heads.transpose(1, 2).reshape(B, L, self.h * self.d_k)

    def keys_values(self, x_kv: torch.Tensor) -> dict[str, torch.Tensor]:
        """x_kv (B, Lk, d_model) -> {"k": X W_K + b_K, "v": X W_V + b_V}, each (B, h, Lk, d_k)."""
        k, v = products.linear(x_kv, self.w_k, self.w_v)  # each (B, Lk, d_model)
        return {"k": self.split_heads(k), "v": self.split_heads(v)}

    def forward(self, x_q: torch.Tensor, x_kv: torch.Tensor, mask: torch.Tensor | None,
                hooks: Hooks | Trace | None = None, name: str = "",
                cache: dict | None = None) -> torch.Tensor:
        """x_q (B, Lq, d_model), x_kv (B, Lk, d_model), mask broadcastable to (B, h, Lq, Lk) or None
        (attend everywhere) -> (B, Lq, d_model).

        ``cache`` ({"k", "v"}, decoding one position at a time): self-attention (``x_kv is x_q``)
        appends this call's keys and values to the earlier positions'; cross-attention computes its
        keys and values once (:meth:`keys_values`) and reads them at every later step.
        """
        self_attention = x_kv is x_q
        if cache is not None and not self_attention and "k" in cache:
            (q,) = products.linear(x_q, self.w_q)  # (B, Lq, d_model)
            k, v = cache["k"], cache["v"]  # (B, h, Lk, d_k)
        else:
            if self_attention:  # Q, K and V read one input: one product X [W_Q | W_K | W_V]
                q, k, v = products.linear(x_q, self.w_q, self.w_k, self.w_v)  # each (B, L, d_model)
            else:
                (q,) = products.linear(x_q, self.w_q)
                k, v = products.linear(x_kv, self.w_k, self.w_v)
            k, v = self.split_heads(k), self.split_heads(v)  # (B, h, Lk, d_k)
            if cache is not None:
                if self_attention and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)  # (B, h, L_past + Lk, d_k)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        q = self.split_heads(q)  # (B, h, Lq, d_k)
        # Without hooks (every decoding step) a hook point costs one test, and no name is formatted.
        if hooks is not None:
            q, k, v = (point(hooks, f"{name}.q", q), point(hooks, f"{name}.k", k),
                       point(hooks, f"{name}.v", v))
        if hooks is not None and hooks.explicit(name):
            heads = self._written_out(q, k, v, mask, hooks, name)
        else:
            dropout_p = self.attn_dropout if self.training else 0.0
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        if hooks is not None:  # a hook zeroing head i's rows switches it off (b_O still flows)
            heads = point(hooks, f"{name}.heads", heads)  # (B, h, Lq, d_k)
        (out,) = products.linear(self.merge_heads(heads), self.w_o)  # (B, Lq, d_model)
        return out if hooks is None else point(hooks, f"{name}.out", out)

    def _written_out(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     mask: torch.Tensor | None, hooks: Hooks | Trace, name: str) -> torch.Tensor:
        """softmax(QKᵀ/√d_k)·V step by step, each step a hook point -> heads (B, h, Lq, d_k)."""
        scores = point(hooks, f"{name}.scores", q @ k.transpose(-2, -1) / math.sqrt(self.d_k))
        if mask is None:  # attend everywhere: the all-True mask, so that it can be shown
            mask = torch.ones(1, 1, 1, k.size(2), dtype=torch.bool, device=k.device)
        mask = point(hooks, f"{name}.mask", mask)
        masked_scores = point(hooks, f"{name}.masked_scores",
                              scores.masked_fill(~mask, float("-inf")))
        weights = torch.softmax(masked_scores, dim=-1)  # (B, h, Lq, Lk); masked: exp(−∞) = 0
        weights = point(hooks, f"{name}.weights",
                        F.dropout(weights, self.attn_dropout, self.training))
        return weights @ v  # (B, h, Lq, d_k)


# The feed-forward nonlinearities a config may name (config.ACTIVATIONS): the paper's ReLU, the
# exact GELU and swish (x·sigmoid(x)) that imported Marian models use (transformers' "gelu" and
# "swish"), and GPT-2's tanh approximation of GELU (transformers' "gelu_new"), which models/gpt/
# uses.
_ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu,
                         "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position separately
    (max(0, ·) is the config's activation: ReLU unless an imported model needs another)."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu") -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.activation = _ACTIVATION_FUNCTIONS[activation]
        submodules_at_hand(self)

    def forward(self, x: torch.Tensor, hooks: Hooks | Trace | None = None,
                name: str = "") -> torch.Tensor:
        (pre,) = products.linear(x, self.w_1)  # (B, L, d_ff)
        hidden = self.activation(pre)
        if hooks is not None:
            hidden = point(hooks, f"{name}.hidden", hidden)
        (out,) = products.linear(hidden, self.w_2)  # (B, L, d_model)
        return out if hooks is None else point(hooks, f"{name}.out", out)


class AddNorm(nn.Module):
    """The residual connection around a sublayer, with LayerNorm.

    Post-LN (the paper): LayerNorm(x + Dropout(Sublayer(x))).
    Pre-LN: x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, d_model: int, dropout: float, pre_ln: bool, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.pre_ln = pre_ln
        submodules_at_hand(self)

    def _points(self, hooks: Hooks | Trace, name: str, residual: torch.Tensor) -> torch.Tensor:
        """The residual and, for a reader, its per-position mean and (biased) variance over
        d_model."""
        residual = point(hooks, f"{name}.residual", residual)
        mean = residual.mean(-1, keepdim=True)  # (B, L, 1)
        # (B, L): biased, as LayerNorm's; ~3x torch.var's speed
        var = (residual - mean).pow(2).mean(-1)
        # (B, L): read only, LayerNorm computes its own
        point(hooks, f"{name}.mean", mean.squeeze(-1))
        point(hooks, f"{name}.var", var)
        return residual

    def forward(self, x: torch.Tensor, sublayer, hooks: Hooks | Trace | None = None,
                name: str = "") -> torch.Tensor:
        # The functions rather than the modules' calls: a decoding step runs this 3·N times, and a
        # module call's overhead is as long as the LayerNorm of one row. The norm's parameters are
        # read where nn.Module.__getattr__ finds them, without the failed lookup before it
        # (fenced/torch_private.py).
        norm = self.norm
        weight, bias = norm_parameters(norm)
        shape, eps = norm.normalized_shape, norm.eps
        if self.pre_ln:
            if hooks is not None:  # Pre-LN: the norm acts on the stream before the sublayer
                x = self._points(hooks, name, x)
            normed = F.layer_norm(x, shape, weight, bias, eps)
            if hooks is not None:
                normed = point(hooks, f"{name}.out", normed)
            return x + self._dropout(sublayer(normed))
        residual = x + self._dropout(sublayer(x))
        if hooks is not None:
            residual = self._points(hooks, name, residual)
        out = F.layer_norm(residual, shape, weight, bias, eps)
        return out if hooks is None else point(hooks, f"{name}.out", out)

    def _dropout(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.dropout.p, True) if self.training else x


_NAMES: dict = {}
_PARTS = ("self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3", "out")  # of a layer


def _names(prefix: str, parts=_PARTS) -> tuple[str, ...]:
    """("decoder.0", parts) -> ("decoder.0.self_attn", …): hook-point names, formatted once rather
    than at every decoding step."""
    names = _NAMES.get((prefix, parts))
    if names is None:
        names = _NAMES[prefix, parts] = tuple(f"{prefix}.{part}" for part in parts)
    return names


_UNNAMED = ("",) * len(_PARTS)


def _layer_names(name: str, hooks: Hooks | Trace | None) -> tuple[str, ...]:
    """A layer's hook-point names (_names); without hooks nothing reads them, and the name is not
    read either. So torch.compile traces a layer's forward without its name, and the N layers of a
    stack run one compiled graph rather than one per name (training/gpu_run/compiling.py)."""
    return _UNNAMED if hooks is None else _names(name)


class EncoderLayer(nn.Module):
    """Self-attention → Add & Norm → feed-forward → Add & Norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        # vit.py and detr.py build these layers from their own configs, which have no activation:
        # ReLU, as in the paper
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, getattr(cfg, "activation", "relu"))
        self.norm1 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        self.norm2 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        submodules_at_hand(self)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None, hooks: Hooks | Trace | None,
                name: str) -> torch.Tensor:
        attn_name, _, ffn_name, norm1_name, norm2_name, _, out_name = _layer_names(name, hooks)
        x = self.norm1.forward(x, lambda y: self.self_attn.forward(y, y, src_mask, hooks,
                                                                   attn_name), hooks, norm1_name)
        x = self.norm2.forward(x, lambda y: self.ffn.forward(y, hooks, ffn_name), hooks, norm2_name)
        return x if hooks is None else point(hooks, out_name, x)  # (B, S, d_model)


class DecoderLayer(nn.Module):
    """Masked self-attention → Add & Norm → cross-attention → Add & Norm → feed-forward
    → Add & Norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        # detr.py's config has no activation: ReLU
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, getattr(cfg, "activation", "relu"))
        self.norm1 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        self.norm2 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        self.norm3 = AddNorm(cfg.d_model, cfg.dropout, cfg.pre_ln, cfg.layer_norm_eps)
        submodules_at_hand(self)

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None,
        src_mask: torch.Tensor | None,
        hooks: Hooks | Trace | None,
        name: str,
        cache: dict | None = None,
    ) -> torch.Tensor:
        self_cache = cross_cache = None
        if cache is not None:
            self_cache, cross_cache = cache.setdefault("self", {}), cache.setdefault("cross", {})
        self_name, cross_name, ffn_name, norm1_name, norm2_name, norm3_name, out_name = (
            _layer_names(name, hooks))
        y = self.norm1.forward(y, lambda z: self.self_attn.forward(z, z, tgt_mask, hooks, self_name,
                                                                   self_cache), hooks, norm1_name)
        # Queries come from the decoder, keys and values from the encoder output.
        y = self.norm2.forward(y, lambda z: self.cross_attn.forward(z, memory, src_mask, hooks,
                                                                    cross_name, cross_cache),
                               hooks, norm2_name)
        y = self.norm3.forward(y, lambda z: self.ffn.forward(z, hooks, ffn_name), hooks, norm3_name)
        return y if hooks is None else point(hooks, out_name, y)  # (B, T, d_model)


def _padded(mask: torch.Tensor) -> bool:
    """Whether a padding mask hides any position. Off the CPU it is taken to hide one: reading
    the mask back would make the host wait, in every forward pass, until the device has run all
    the work queued before it; an all-True mask gives the same attention as none. So it is while
    torch.compile traces the model, where a read would split the graph in two."""
    if mask.device.type != "cpu" or torch.compiler.is_compiling():
        return True
    return not bool(mask.all())


def final_norm(cfg) -> nn.Module:
    """The norm after a stack's last layer: Pre-LN leaves the stream un-normalised there, so it
    needs one final LayerNorm; Post-LN's layers already end with one (the identity)."""
    return nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.pre_ln else nn.Identity()


class Transformer(nn.Module):
    """Encoder–decoder Transformer. ``forward(src, tgt)`` returns logits (B, T, V)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(cfg.vocab_size, cfg.d_model, cfg.scale_embedding)
        self.tgt_embed = (self.src_embed if cfg.tie_embeddings
                          else Embedding(cfg.vocab_size, cfg.d_model, cfg.scale_embedding))
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.N))
        self.encoder_norm, self.decoder_norm = final_norm(cfg), final_norm(cfg)
        if not cfg.tie_embeddings:
            self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.logits_bias:  # Marian's final_logits_bias: fixed at import, never trained here
            self.register_buffer("logits_bias", torch.zeros(cfg.vocab_size))
        self.embed_dropout = nn.Dropout(cfg.dropout)
        # A buffer, not a parameter: fixed by the formula, rebuilt from the config, never trained or
        # saved.
        self.register_buffer("pe", sinusoidal_positional_encoding(cfg.max_len, cfg.d_model,
                                                                  cfg.pe_base), persistent=False)
        self._init_weights()
        submodules_at_hand(self)
        # The hook-point names, formatted now rather than by the first forward pass, which then
        # changes nothing outside the model (torch.compile would trace that pass again).
        for layer_name in _names("encoder", range(cfg.N)) + _names("decoder", range(cfg.N)):
            _names(layer_name)

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)

    # --- the pieces, in the order data flows through them ---------------------------------------

    def embed(self, token_ids: torch.Tensor, side: str, hooks: Hooks | Trace | None,
              offset: int = 0) -> torch.Tensor:
        """token IDs (B, L) -> embedding × √d_model + PE, (B, L, d_model)."""
        L = token_ids.size(1)
        if offset + L > self.cfg.max_len:
            raise ValueError(f"sequence of {offset + L} positions exceeds the model's maximum of "
                             f"{self.cfg.max_len}")
        table = self.src_embed if side == "src" else self.tgt_embed
        positional = self.pe[offset:offset + L]  # (L, d_model)
        if hooks is None:
            x = table.forward(token_ids) + positional  # (B, L, d_model)
        else:
            token_ids = point(hooks, f"{side}.token_ids", token_ids)
            # A hook may put other vectors here: integrated gradients runs scaled embeddings of no
            # token.
            embedding = point(hooks, f"{side}.embedding", table.forward(token_ids))
            positional = point(hooks, f"{side}.positional", positional)
            x = point(hooks, f"{side}.input", embedding + positional)
        return self.embed_dropout(x) if self.training else x

    def encode(self, src: torch.Tensor, trace: Trace | None = None,
               hooks: Hooks | Trace | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """src (B, S) -> memory (B, S, d_model) and the source padding mask (B, 1, 1, S)."""
        hooks = combine(trace, hooks)
        src_mask = padding_mask(src, self.cfg.pad_id)  # (B, 1, 1, S)
        # Nothing padded: attention without a mask gives the same numbers with less work
        # (a trace shows the mask, so it gets one). Training always passes it: a batch without
        # padding is rare there, and layers compiled one by one (training/gpu_run/compiling.py)
        # would compile again for a missing mask.
        layer_mask = (src_mask if self.training or _padded(src_mask) or explicit(hooks, "encoder")
                      else None)
        x = self.embed(src, "src", hooks)
        layers = self.encoder_layers
        for layer, name in zip(layers, _names("encoder", range(len(layers)))):
            x = layer.forward(x, layer_mask, hooks, name)
        return point(hooks, "encoder.out", self.encoder_norm.forward(x)), src_mask

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        trace: Trace | None = None,
        causal: bool = True,
        hooks: Hooks | Trace | None = None,
        state: "DecoderState | None" = None,
        start_at_layer: int = 0,
        stream: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """tgt (B, T) attending to memory (B, S, d_model) -> decoder output (B, T, d_model).

        ``causal=False`` drops the subsequent-position mask (the masking lab's "what if" view).
        ``state`` (decoding, one position per call): tgt is the newest token at position
        state.length; it may attend to every cached earlier position, so it needs no mask
        (the target is never padded during generation: finished rows go on writing <pad>, which
        nobody reads).
        ``start_at_layer`` = l > 0 with ``stream`` (B, T, d_model), the stream after layer l − 1:
        only layers l… run (TransformerLens's start_at_layer), for rows that share the layers below.
        """
        hooks = combine(trace, hooks)
        if state is not None:
            tgt_mask = None
            y = self.embed(tgt, "tgt", hooks, offset=state.length)  # (B, 1, d_model)
            state.length += tgt.size(1)
        else:
            tgt_mask = target_mask(tgt, self.cfg.pad_id, causal=causal)  # (B, 1, T, T)
            y = stream if start_at_layer else self.embed(tgt, "tgt", hooks)
        layers = self.decoder_layers
        caches = state.caches if state is not None else [None] * len(layers)
        for i, (layer, name) in enumerate(zip(layers, _names("decoder", range(len(layers))))):
            if i >= start_at_layer:
                y = layer.forward(y, memory, tgt_mask, src_mask, hooks, name, caches[i])
        y = self.decoder_norm.forward(y)
        return y if hooks is None else point(hooks, "decoder.out", y)

    def project(self, y: torch.Tensor, trace: Trace | None = None,
                hooks: Hooks | Trace | None = None) -> torch.Tensor:
        """decoder output (B, T, d_model) -> logits (B, T, V)."""
        hooks = combine(trace, hooks)
        # (V, d_model)
        weight = self.tgt_embed.weight if self.cfg.tie_embeddings else self.generator.weight
        bias = self.logits_bias if self.cfg.logits_bias else None
        (logits,) = products.project(y, (weight,), (bias,))  # (B, T, V)
        if hooks is not None:
            logits = point(hooks, "logits", logits)
            point(hooks, "probs", torch.softmax(logits.float(), dim=-1))  # read only
        return logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, trace: Trace | None = None,
                causal: bool = True, hooks: Hooks | Trace | None = None) -> torch.Tensor:
        """src (B, S), tgt (B, T) token IDs -> logits (B, T, V). Teacher forcing: tgt starts with
        <s>.

        ``trace`` records every documented name (docs/trace_names.md); ``hooks`` reads or replaces
        the tensors at chosen names (core/hooks.py)."""
        hooks = combine(trace, hooks)
        memory, src_mask = self.encode(src, hooks=hooks)
        return self.project(self.decode(tgt, memory, src_mask, causal=causal, hooks=hooks),
                            hooks=hooks)

    # --- decoding: the same forward, one new target position per call, keys/values cached ---------

    def start_state(self, src: torch.Tensor, hooks: Hooks | Trace | None = None) -> DecoderState:
        """Encode the source once; the cross-attention keys/values depend only on it, so they are
        computed here, once per sentence (beam search copies them to its beams instead of
        recomputing them)."""
        memory, src_mask = self.encode(src, hooks=hooks)
        caches = [{"self": {}, "cross": layer.cross_attn.keys_values(memory)}
                  for layer in self.decoder_layers]
        return DecoderState(memory, src_mask if _padded(src_mask) else None, caches)

    def decode_step(self, last_tokens: torch.Tensor, state: DecoderState,
                    hooks: Hooks | Trace | None = None) -> torch.Tensor:
        """last_tokens (B,) at position state.length -> logits (B, V) for the next position: the
        forward pass above on one new position, with ``state``'s key/value caches. Without hooks or
        gradients the step runs in inference mode (no autograd bookkeeping: 7 % of its
        instructions), so its logits and caches are inference tensors: read them, or clone them to
        change them in place."""
        grad = torch.is_grad_enabled()
        layouts = None  # the products' layouts, checked at a decode call's first step only
        if not grad:
            layouts = state.layouts.setdefault(last_tokens.size(0) <= products.FEW_ROWS, {})
        inference = (hooks is None and not grad) or torch.is_inference_mode_enabled()
        with products.checked_once(layouts), torch.inference_mode(inference):
            y = self.decode(last_tokens[:, None], state.memory, state.src_mask, hooks=hooks,
                            state=state)
            return self.project(y, hooks=hooks)[:, 0]  # (B, V)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
