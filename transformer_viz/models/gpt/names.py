"""The documented trace names of the decoder-only model: what
``GPT.forward(..., trace=Trace())`` records."""

from __future__ import annotations

from transformer_viz.models.transformer.names import _attention_names, _ffn_names


def _pre_ln_norm_names(prefix: str, sublayer: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.residual", "(B, T, d_model)",
         f"the stream x before the {sublayer} (Pre-LN: the norm's input)"),
        (f"{prefix}.mean", "(B, T)", "per-position mean of x over d_model"),
        (f"{prefix}.var", "(B, T)", "per-position (biased) variance of x over d_model"),
        (f"{prefix}.out", "(B, T, d_model)",
         f"LayerNorm(x), what the {sublayer} reads; x + {sublayer}(LayerNorm(x)) goes on"),
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
        rows += (_attention_names(f"{p}.self_attn", "T", "T")
                 + _pre_ln_norm_names(f"{p}.norm2", "FFN"))
        rows += [(n, s, m.replace("max(0, ", "GELU(") if n.endswith("hidden") else m)
                 for n, s, m in _ffn_names(f"{p}.ffn", "T")]
        rows.append((f"{p}.out", "(B, T, d_model)",
                     "output of block i: x + Attention(LN(x)), then + FFN(LN(·))"))
    rows += [
        ("decoder.out", "(B, T, d_model)",
         "LayerNorm of the last block's output (the final LayerNorm)"),
        ("logits", "(B, T, V)", "decoder.out Eᵀ (output projection tied to the token embeddings)"),
        ("probs", "(B, T, V)",
         "softmax(logits) over the vocabulary: row t is the distribution of token t + 1"),
    ]
    return rows
