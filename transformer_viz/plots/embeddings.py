"""Tokens and embeddings: padding, the embedding rows of a sentence, the √d_model scaling,
similarities."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from transformer_viz.core.special_tokens import PAD
from transformer_viz.plots.common import (ALLOWED_COLOUR, MASKED_COLOUR, SEQUENTIAL, base_layout,
                                          heatmap, safe_label, token_labels, token_text)


def pad_ids(ids: list[int], length: int, pad_id: int = PAD) -> tuple[list[int], list[bool]]:
    """Right-pad to ``length`` with ``pad_id`` -> (padded IDs, mask: True for a real token).

    A batch needs one length; the mask is what later keeps attention away from the padding.
    """
    ids = [int(i) for i in ids]
    if length < len(ids):
        raise ValueError(f"cannot pad {len(ids)} tokens to a shorter length {length}")
    n_pad = length - len(ids)
    return ids + [pad_id] * n_pad, [True] * len(ids) + [False] * n_pad


# Beyond this many positions the IDs stand in a column, one position a row: side by side, four-digit
# IDs at a projector's 16 px ran into each other even at full width.
MAX_PADDED_ACROSS = 16


def padding_figure(tokens: list[str], padded_ids: list[int], mask: list[bool],
                   pad_token: str = "<pad>") -> go.Figure:
    """Over the padded positions: the token ID, and the padding mask (1 real token, 0 padding); two
    rows, or for more than MAX_PADDED_ACROSS positions two columns."""
    n_real = sum(mask)
    labels = token_labels(list(tokens[:n_real]) + [pad_token] * (len(padded_ids) - n_real))
    real = np.asarray(mask, dtype=np.float64)
    z = np.vstack([real, real])
    text = np.array([[str(i) for i in padded_ids], [str(int(m)) for m in mask]], dtype=object)
    rows = ["token ID", "padding mask"]
    down = len(padded_ids) > MAX_PADDED_ACROSS
    x, y = (rows, labels) if down else (labels, rows)
    fig = go.Figure(go.Heatmap(
        z=z.T if down else z, x=x, y=y, text=text.T if down else text, texttemplate="%{text}",
        showscale=False, colorscale=[[0, MASKED_COLOUR], [1, ALLOWED_COLOUR]], zmin=0, zmax=1,
        hovertemplate=("position/token %{y}<br>%{x}: %{text}" if down
                       else "position/token %{x}<br>%{y}: %{text}") + "<extra></extra>"))
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_xaxes(type="category", side="top" if down else None)
    height = 26 * len(padded_ids) + 140 if down else 230
    return base_layout(fig, f"{n_real} tokens padded to length {len(padded_ids)}", height=height)


def thin_dimension_ticks(fig: go.Figure, n_columns: int) -> go.Figure:
    """A tick every 2^k dimensions on a wide dimension axis, instead of a crowded rotated label per
    column: at most 8 (with 16, three-digit labels at a projector's 16 px ran into each other
    in a 731 px column). Where even 8 are too close (a phone), the template turns them."""
    if n_columns > 40:
        step = 2 ** int(np.ceil(np.log2(n_columns / 8)))
        fig.update_xaxes(tickmode="linear", tick0=0, dtick=step)
    return fig


def embedding_heatmap(embedding, tokens: list[str], title: str | None = None) -> go.Figure:
    """Rows = the sentence's tokens, columns = the d_model dimensions of each one's embedding
    row."""
    z = np.asarray(embedding, dtype=np.float64)
    fig = heatmap(z, x_labels=list(range(z.shape[1])), y_labels=token_labels(tokens), title=title,
                  x_title="dimension (d_model)", y_title="token", hover_value="value",
                  height=max(260, 22 * z.shape[0] + 120))
    return thin_dimension_ticks(fig, z.shape[1])


def scaling_figure(raw_row, scaled_row, token: str, d_model: int) -> go.Figure:
    """One token's embedding row before and after × √d_model, dimension by dimension."""
    raw = np.asarray(raw_row, dtype=np.float64)
    scaled = np.asarray(scaled_row, dtype=np.float64)
    dims = list(range(raw.shape[0]))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=dims, y=raw, mode="lines+markers", name="E[id] (raw row)",
                             marker=dict(size=4),
                             hovertemplate="dimension %{x}<br>raw %{y:.4g}<extra></extra>"))
    fig.add_trace(go.Scatter(x=dims, y=scaled, mode="lines+markers", name=f"E[id] × √{d_model}",
                             marker=dict(size=4),
                             hovertemplate="dimension %{x}<br>scaled %{y:.4g}<extra></extra>"))
    fig.update_xaxes(title="dimension (d_model)")
    fig.update_yaxes(title="value")
    return base_layout(fig,
                       f"{safe_label(token_text(token))}: ×√{d_model} = ×{math.sqrt(d_model):.4g}",
                       height=320)


def cosine_similarity_matrix(x) -> np.ndarray:
    """cos(x_i, x_j) for the rows of x (L, d) -> (L, L); a zero row has similarity 0 with
    everything."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    unit = x / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def cosine_heatmap(sim, tokens: list[str], title: str | None = None) -> go.Figure:
    labels = token_labels(tokens)
    return heatmap(sim, x_labels=labels, y_labels=labels, title=title, zmin=-1, zmax=1,
                   x_title="token", y_title="token", hover_value="cosine",
                   text_format="%{z:.2f}" if len(labels) <= 16 else None,
                   height=max(320, 26 * len(labels) + 140))


def nearest_neighbours(weight, ids: list[int], k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The k vocabulary rows most cosine-similar to each E[id] -> (neighbour IDs (L, k),
    similarities (L, k)).

    The token itself comes first (similarity 1): it is its own nearest neighbour, a built-in sanity
    check.
    """
    w = np.asarray(weight, dtype=np.float64)  # (V, d_model)
    norms = np.linalg.norm(w, axis=-1, keepdims=True)
    unit = w / np.where(norms == 0, 1.0, norms)
    ids = np.asarray(ids, dtype=np.int64)
    sims = unit[ids] @ unit.T  # (L, V)
    k = min(k, w.shape[0])
    # argpartition keeps it linear in V; only the k survivors are sorted.
    top = np.argpartition(-sims, k - 1, axis=-1)[:, :k]
    top_sims = np.take_along_axis(sims, top, axis=-1)
    order = np.argsort(-top_sims, axis=-1, kind="stable")
    top, top_sims = np.take_along_axis(top, order, -1), np.take_along_axis(top_sims, order, -1)
    # A different row can tie with the token itself only if the two rows are parallel;
    # keep the token first.
    for row, token_id in enumerate(ids):
        hit = np.flatnonzero(top[row] == token_id)
        if hit.size and hit[0] != 0:
            j = hit[0]
            top[row, [0, j]] = top[row, [j, 0]]
            top_sims[row, [0, j]] = top_sims[row, [j, 0]]
    return top, top_sims


def neighbours_figure(tokens: list[str], neighbour_tokens: list[list[str]], sims) -> go.Figure:
    """Rows = the sentence's tokens, columns = rank; each cell names the neighbour, coloured by
    similarity."""
    sims = np.asarray(sims, dtype=np.float64)
    text = [[safe_label(token_text(t)) for t in row] for row in neighbour_tokens]
    ranks = [f"#{r}" for r in range(sims.shape[1])]
    fig = go.Figure(go.Heatmap(
        z=sims, x=ranks, y=token_labels(tokens), text=text, texttemplate="%{text}",
        colorscale=SEQUENTIAL, zmin=min(0.0, float(sims.min())), zmax=1,
        colorbar=dict(title="cosine"),
        hovertemplate="token %{y}<br>neighbour %{x}: %{text}<br>cosine %{z:.4f}<extra></extra>"))
    fig.update_yaxes(type="category", autorange="reversed", title="token")
    fig.update_xaxes(type="category", title="rank (#0 = the token itself)")
    return base_layout(fig, "Nearest neighbours in the vocabulary (cosine of embedding rows)",
                       height=max(300, 26 * len(tokens) + 140))

