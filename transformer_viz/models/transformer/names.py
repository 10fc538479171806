"""The Transformer's documented hook-point names, with shapes and formulas: what
``Transformer.forward(..., trace=Trace())`` records (models/transformer/model.py). The tests check
the list against a real forward pass, and models.trace_docs writes docs/trace_names.md from it."""

from __future__ import annotations


def _attention_names(prefix: str, q_len: str, k_len: str) -> list[tuple[str, str, str]]:
    # Self-attention reads one input X; cross-attention takes queries from the decoder stream and
    # keys and values from the encoder output. Every projection is an nn.Linear, so it adds a bias.
    x_q, x_kv = ("X", "memory") if prefix.endswith("cross_attn") else ("X", "X")
    return [
        (f"{prefix}.q", f"(B, h, {q_len}, d_k)", f"Q = {x_q} W_Q + b_Q, split into h heads"),
        (f"{prefix}.k", f"(B, h, {k_len}, d_k)", f"K = {x_kv} W_K + b_K"),
        (f"{prefix}.v", f"(B, h, {k_len}, d_k)", f"V = {x_kv} W_V + b_V"),
        (f"{prefix}.scores", f"(B, h, {q_len}, {k_len})", "Q Kᵀ / √d_k, before masking"),
        (f"{prefix}.mask", f"broadcastable to (B, h, {q_len}, {k_len})", "True = may attend"),
        (f"{prefix}.masked_scores", f"(B, h, {q_len}, {k_len})",
         "scores with masked cells set to −∞"),
        (f"{prefix}.weights", f"(B, h, {q_len}, {k_len})",
         "softmax over the last axis; masked cells exactly 0"),
        (f"{prefix}.heads", f"(B, h, {q_len}, d_k)", "weights · V, one result per head"),
        (f"{prefix}.out", f"(B, {q_len}, d_model)", "Concat(head_0, …, head_{h−1}) W_O + b_O"),
    ]


def _norm_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.residual", f"(B, {length}, d_model)",
         "x + Sublayer(x), the input of LayerNorm (Post-LN)"),
        (f"{prefix}.mean", f"(B, {length})", "per-position mean of the residual over d_model"),
        (f"{prefix}.var", f"(B, {length})",
         "per-position (biased) variance of the residual over d_model"),
        (f"{prefix}.out", f"(B, {length}, d_model)",
         "LayerNorm(residual) = γ ⊙ (residual − mean)/√(var + ε) + β"),
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
            (f"{side}.token_ids", f"(B, {length})",
             "token IDs from the tokenizer, padded with <pad>"),
            (f"{side}.embedding", f"(B, {length}, d_model)", "E[token_ids] × √d_model"),
            (f"{side}.positional", f"({length}, d_model)",
             "PE(pos, 2i) = sin(pos/base^(2i/d_model)), "
             "PE(pos, 2i+1) = cos(pos/base^(2i/d_model))"),
            (f"{side}.input", f"(B, {length}, d_model)",
             "embedding + positional (dropout in training)"),
        ]

    rows += embedding_rows("src", "S")
    for i in range(N):
        p = f"encoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "S", "S") + _norm_names(f"{p}.norm1", "S")
        rows += _ffn_names(f"{p}.ffn", "S") + _norm_names(f"{p}.norm2", "S")
        rows.append((f"{p}.out", "(B, S, d_model)",
                     "output of encoder layer i (= norm2.out in Post-LN)"))
    rows.append(("encoder.out", "(B, S, d_model)",
                 "output of the last encoder layer (the 'memory')"))
    rows += embedding_rows("tgt", "T")
    for i in range(N):
        p = f"decoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "T", "T") + _norm_names(f"{p}.norm1", "T")
        rows += _attention_names(f"{p}.cross_attn", "T", "S") + _norm_names(f"{p}.norm2", "T")
        rows += _ffn_names(f"{p}.ffn", "T") + _norm_names(f"{p}.norm3", "T")
        rows.append((f"{p}.out", "(B, T, d_model)",
                     "output of decoder layer i (= norm3.out in Post-LN)"))
    rows += [
        ("decoder.out", "(B, T, d_model)", "output of the last decoder layer"),
        ("logits", "(B, T, V)", "decoder.out Eᵀ (output projection tied to the embeddings)"),
        ("probs", "(B, T, V)", "softmax(logits) over the vocabulary"),
    ]
    return rows


_ATTENTION_HOOKS = {"q": "hook_q", "k": "hook_k", "v": "hook_v",
                    "masked_scores": "hook_attn_scores",
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
