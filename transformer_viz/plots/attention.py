"""One attention head, step by step: Q, K, V, scores, mask, softmax, weighted sum; and a toy
lookup."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (MASKED_WEIGHT, NEGATIVE, POSITIVE, SEQUENTIAL,
                                          base_layout, heatmap, mask_figure, safe_label,
                                          token_labels)

# Which attention, where its queries and keys come from: (trace prefix template,
# query side, key side).
ATTENTION_KINDS = {
    "Encoder self-attention": ("encoder.{layer}.self_attn", "src", "src"),
    "Decoder masked self-attention": ("decoder.{layer}.self_attn", "tgt", "tgt"),
    "Decoder cross-attention": ("decoder.{layer}.cross_attn", "tgt", "src"),
}


def head_slice(tensor, head: int) -> np.ndarray:
    """(B, h, L, ·) -> the first sentence's head as (L, ·)."""
    return np.asarray(tensor, dtype=np.float64)[0, head]


def mask_for_head(mask, Lq: int, Lk: int, head: int = 0) -> np.ndarray:
    """The boolean mask (broadcastable to (B, h, Lq, Lk)) for one head -> (Lq, Lk), True = may
    attend."""
    m = np.asarray(mask, dtype=bool)
    # the mask is shared by all heads unless it has an h axis
    m = np.broadcast_to(m, m.shape[:2] + (Lq, Lk))
    return np.array(m[0, min(head, m.shape[1] - 1)])


HEAD_ARRAYS = ("q", "k", "v", "scores", "masked_scores", "weights", "heads")


def head_arrays(trace, prefix: str, head: int, Lq: int, Lk: int) -> dict[str, np.ndarray]:
    """One head of one attention sublayer of the first sentence, every array the Attention page
    draws.

    ``trace``: traced name -> array (B, h, ·, ·); ``prefix``: e.g. "decoder.1.cross_attn". Returns q
    (Lq, d_k), k and v (Lk, d_k), scores, masked_scores and weights (Lq, Lk), heads (Lq, d_k), all
    float64, and mask (Lq, Lk), boolean, True = may attend.
    """
    arrays = {name: head_slice(trace[f"{prefix}.{name}"], head) for name in HEAD_ARRAYS}
    arrays["mask"] = mask_for_head(trace[f"{prefix}.mask"], Lq, Lk, head)
    return arrays


def matrix_heatmap(values, row_tokens: list[str], col_labels, title: str, hover_value: str,
                   x_title: str, y_title: str = "query token", **kwargs) -> go.Figure:
    z = np.asarray(values, dtype=np.float64)
    return heatmap(z, x_labels=col_labels, y_labels=token_labels(row_tokens), title=title,
                   x_title=x_title, y_title=y_title, hover_value=hover_value,
                   height=max(260, 24 * z.shape[0] + 140), **kwargs)


def vectors_heatmap(values, tokens: list[str], title: str, y_title: str,
                    bound: float | None = None) -> go.Figure:
    """Q, K, V or the heads: rows = tokens, columns = the d_k dimensions of this head.

    ``bound`` fixes the colour range to [−bound, bound], so that figures drawn with the same bound
    compare colour for colour (Q, K and V side by side); without it the range
    is this array's own."""
    z = np.asarray(values, dtype=np.float64)
    limits = {"zmin": -bound, "zmax": bound} if bound else {}
    return matrix_heatmap(z, tokens, list(range(z.shape[1])), title, "value", "dimension (d_k)",
                          y_title, **limits)


def scores_heatmap(values, q_tokens: list[str], k_tokens: list[str], title: str,
                   hover_value: str = "score", **kwargs) -> go.Figure:
    """Query × key matrix; −∞ cells are drawn grey by ``heatmap``, never with a colour."""
    text = "%{z:.2f}" if len(k_tokens) <= 14 and len(q_tokens) <= 14 else None
    return matrix_heatmap(values, q_tokens, token_labels(k_tokens), title, hover_value, "key token",
                          text_format=text, **kwargs)


def mask_heatmap(mask, q_tokens: list[str], k_tokens: list[str]) -> go.Figure:
    """The mask as the additive term it is: 0 where a query may attend, −∞ (grey) where it may
    not."""
    return mask_figure(mask, token_labels(k_tokens), token_labels(q_tokens),
                       "mask M: 0 = may attend, −∞ (grey) = masked",
                       max(260, 24 * len(q_tokens) + 140), "key token", "query token",
                       allowed_name="M = 0")


def weights_heatmap(weights, q_tokens: list[str], k_tokens: list[str], masked=None) -> go.Figure:
    """The softmax weights; the cells ``masked`` names (True = masked) are grey, as in the masked
    scores: their weight is exactly 0, which must not read as the colour scale's 0."""
    return scores_heatmap(weights, q_tokens, k_tokens,
                          "softmax weights (each row sums to 1; masked: 0, grey)",
                          hover_value="weight", colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0,
                          masked=masked, masked_hover=MASKED_WEIGHT)


def worked_score(q_vec, k_vec, d_k: int) -> dict[str, float]:
    """One cell of QKᵀ/√d_k, from its two vectors."""
    q = np.asarray(q_vec, dtype=np.float64)
    k = np.asarray(k_vec, dtype=np.float64)
    dot = float(q @ k)
    return {"dot": dot, "sqrt_d_k": math.sqrt(d_k), "scaled": dot / math.sqrt(d_k)}


def latex_number(x: float) -> str:
    """A small number in LaTeX, two significant digits: 3.2e-07 -> 3.2 \\times 10^{-7}; 0 stays
    0."""
    if x == 0:
        return "0"
    mantissa, exponent = f"{x:.1e}".split("e")
    return r"%s \times 10^{%d}" % (mantissa, int(exponent))


def worked_score_latex(q_vec, k_vec, i: int, j: int, traced: float, trace_name: str, head: int,
                       allowed: bool, weight: float) -> list[str]:
    """One score worked out by hand, as LaTeX lines: q_i · k_j (its first three terms), divided by
    √d_k, beside the traced value ``trace_name``[0, head, i, j] and their difference; then its
    softmax weight, or, for a masked cell (``allowed`` False), why the weight is exactly 0."""
    q, k = np.asarray(q_vec, dtype=np.float64), np.asarray(k_vec, dtype=np.float64)
    d_k = q.shape[0]
    worked = worked_score(q, k, d_k)
    terms = " + ".join(f"({a:.3f})({b:.3f})" for a, b in zip(q[:3], k[:3]))
    lines = [
        r"q_{%d} \cdot k_{%d} = \sum_{m=1}^{%d} q_{%d,m}\, k_{%d,m} = %s + \cdots = %.6f"
        % (i, j, d_k, i, j, terms, worked["dot"]),
        r"s_{%d,%d} = \frac{q_{%d} \cdot k_{%d}}{\sqrt{d_k}} = \frac{%.6f}{\sqrt{%d}} = "
        r"\frac{%.6f}{%.6f} = %.6f"
        % (i, j, i, j, worked["dot"], d_k, worked["dot"], worked["sqrt_d_k"], worked["scaled"]),
        r"\text{traced}\ \texttt{%s}[0, %d, %d, %d] = %.6f\quad(|\Delta| = %s)"
        % (trace_name.replace("_", r"\_"), head, i, j, traced,
           latex_number(abs(traced - worked["scaled"]))),
    ]
    if allowed:
        lines.append(r"w_{%d,%d} = \frac{e^{%.4f}}{\sum_{j'} e^{s_{%d,j'}}} = %.6f"
                     % (i, j, traced, i, weight))
    else:
        lines.append(r"M_{%d,%d} = -\infty \;\Rightarrow\; s_{%d,%d} + M_{%d,%d} = -\infty,\ "
                     r"w_{%d,%d} = 0"
                     % (i, j, i, j, i, j, i, j))
    return lines


def score_terms_figure(q_vec, k_vec, q_token: str, k_token: str) -> go.Figure:
    """The products q_m·k_m per dimension m; their sum is q·k."""
    q = np.asarray(q_vec, dtype=np.float64)
    k = np.asarray(k_vec, dtype=np.float64)
    terms = q * k
    dims = list(range(q.shape[0]))
    fig = go.Figure(go.Bar(x=dims, y=terms, marker_color=np.where(terms >= 0, POSITIVE, NEGATIVE),
                           customdata=np.stack([q, k], axis=-1),
                           hovertemplate="dimension %{x}<br>q %{customdata[0]:.4g} × k "
                                         "%{customdata[1]:.4g}<br>= %{y:.4g}<extra></extra>"))
    fig.update_xaxes(title="dimension m (d_k)")
    fig.update_yaxes(title="q_m · k_m")
    return base_layout(fig,
                       f"q({safe_label(q_token)}) · k({safe_label(k_token)}) = Σ q_m k_m = "
                       f"{terms.sum():.4g}", height=300)


def lookup_scores(query, keys, W=None) -> dict[str, np.ndarray]:
    """Similarity of one query (d_k,) to each key (n, d_k) three ways: q·k, q·k/√d_k, and qᵀGk.

    G (the argument ``W``) is a bilinear similarity matrix, not attention weights."""
    q = np.asarray(query, dtype=np.float64)
    K = np.asarray(keys, dtype=np.float64)
    d_k = q.shape[0]
    W = np.eye(d_k) if W is None else np.asarray(W, dtype=np.float64)
    return {"dot product q·k": K @ q, "scaled q·k/√d_k": K @ q / math.sqrt(d_k),
            "general qᵀGk": K @ (W.T @ q)}


def random_bilinear(d_k: int, seed: int = 0) -> np.ndarray:
    """A fixed random G (d_k, d_k) with entries N(0, 1/d_k), so qᵀWk is on the scale of q·k."""
    return np.random.default_rng(seed).normal(0.0, 1.0 / math.sqrt(d_k), size=(d_k, d_k))


def lookup_figure(weights: dict[str, np.ndarray], key_tokens: list[str],
                  title: str | None = None) -> go.Figure:
    """Grouped bars: for each key, the softmax weight each similarity gives it."""
    labels = token_labels(key_tokens)
    fig = go.Figure()
    for name, w in weights.items():
        fig.add_trace(go.Bar(x=labels, y=w, name=name,
                             hovertemplate=f"{name}<br>key %{{x}}<br>weight "
                                           "%{y:.4f}<extra></extra>"))
    fig.update_xaxes(type="category", title="key (the 'database' entries)")
    fig.update_yaxes(title="softmax weight", range=[0, 1.02])
    fig.update_layout(barmode="group")
    return base_layout(fig, title or "Soft lookup: how much of each value is retrieved", height=340)
