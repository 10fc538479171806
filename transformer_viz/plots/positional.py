"""Sinusoidal positional encoding: the matrix, its curves, how positions resemble each other, and
order."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (
    DIVERGING, base_layout, heatmap, heatmap_traces, make_figure, token_labels)
from transformer_viz.plots.embeddings import cosine_similarity_matrix, thin_dimension_ticks


def pe_formula(positions, dim: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """PE(pos, dim) straight from the paper: sin for even dim = 2i, cos for odd dim = 2i+1."""
    pos = np.asarray(positions, dtype=np.float64)
    two_i = dim - dim % 2
    angle = pos / base ** (two_i / d_model)
    return np.sin(angle) if dim % 2 == 0 else np.cos(angle)


def wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Wavelength of each sin/cos pair i: 2π · base^(2i/d_model), from 2π up to 2π · base."""
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    return 2 * np.pi * base ** (two_i / d_model)


def pe_heatmap(pe, title: str | None = None, position_labels: list[str] | None = None) -> go.Figure:
    z = np.asarray(pe, dtype=np.float64)
    fig = heatmap(z, x_labels=list(range(z.shape[1])),
                  y_labels=position_labels or list(range(z.shape[0])), title=title, zmin=-1, zmax=1,
                  x_title="dimension (d_model)", y_title="position", hover_value="PE",
                  height=max(280, min(700, 14 * z.shape[0] + 140)))
    return thin_dimension_ticks(fig, z.shape[1])


def pe_halves_heatmap(pe, title: str | None = None) -> go.Figure:
    """The same PE matrix with its columns regrouped: the sin dimensions 2i on the left, the cos
    dimensions 2i+1 on the right, each panel ordered by i. Interleaved, neighbouring columns
    alternate sin and cos and draw a moiré over hundreds of columns; grouped, each panel is one
    smooth family of waves."""
    z = np.asarray(pe, dtype=np.float64)
    positions = list(range(z.shape[0]))
    i = list(range(z.shape[1] // 2))
    colour = {"colorscale": DIVERGING, "zmin": -1, "zmax": 1, "zmid": 0}
    data = (heatmap_traces(z[:, 0::2], i, positions, "PE", "sin (dimension 2i)", ("x", "y"),
                           **colour)
            + heatmap_traces(z[:, 1::2], i, positions, "PE", "cos (dimension 2i+1)", ("x2", "y2"),
                             showscale=False, **colour))
    # Short axis titles: "i (dimension 2i: sin)" and its twin ran into each other at a
    # projector's 18 px.
    layout = {"xaxis": {"domain": [0, 0.48], "title": {"text": "i (sin: 2i)"}},
              "yaxis": {"autorange": "reversed", "title": {"text": "position"}},
              "xaxis2": {"domain": [0.52, 1.0], "title": {"text": "i (cos: 2i+1)"}, "anchor": "y2"},
              "yaxis2": {"autorange": "reversed", "anchor": "x2", "matches": "y",
                         "showticklabels": False}}
    return make_figure(data, layout, title, max(280, min(700, 14 * z.shape[0] + 140)))


def pe_curves_figure(pe, dims: list[int], d_model: int, base: float = 10000.0,
                     fine: int = 20) -> go.Figure:
    """For each chosen dimension: the continuous formula as a line, the rows of the PE matrix as
    markers.

    The markers come from the matrix the model adds; that they sit on the line is the formula at
    work.
    """
    pe = np.asarray(pe, dtype=np.float64)
    L = pe.shape[0]
    grid = np.linspace(0, L - 1, (L - 1) * fine + 1)
    positions = np.arange(L)
    fig = go.Figure()
    for n, dim in enumerate(dims):
        kind = "sin" if dim % 2 == 0 else "cos"
        colour = f"hsl({(n * 67) % 360}, 65%, 45%)"
        fig.add_trace(go.Scatter(x=grid, y=pe_formula(grid, dim, d_model, base), mode="lines",
                                 line=dict(color=colour, width=1.5),
                                 name=f"dim {dim} ({kind}) formula", legendgroup=str(dim),
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=positions, y=pe[:, dim], mode="markers",
                                 marker=dict(color=colour, size=7),
                                 name=f"dim {dim}: PE[pos, {dim}]", legendgroup=str(dim),
                                 hovertemplate=f"dimension {dim}<br>position %{{x}}<br>PE "
                                               "%{y:.4f}<extra></extra>"))
    fig.update_xaxes(title="position")
    fig.update_yaxes(title="PE(pos, dim)", range=[-1.1, 1.1])
    return base_layout(fig, f"sin/cos curves (base {base:g}, d_model {d_model})", height=380)


def position_similarity(pe, kind: str = "dot") -> np.ndarray:
    """PE_p · PE_q (depends only on p − q) or their cosine -> (L, L)."""
    pe = np.asarray(pe, dtype=np.float64)
    if kind == "cosine":
        return cosine_similarity_matrix(pe)
    if kind != "dot":
        raise ValueError(f"kind must be 'dot' or 'cosine', not {kind!r}")
    return pe @ pe.T


def position_similarity_heatmap(sim, kind: str, title: str | None = None) -> go.Figure:
    L = np.asarray(sim).shape[0]
    positions = list(range(L))
    return heatmap(sim, x_labels=positions, y_labels=positions, title=title, x_title="position",
                   y_title="position", hover_value="cosine" if kind == "cosine" else "dot product",
                   height=max(320, min(700, 14 * L + 160)))


def wavelength_figure(d_model: int, bases: list[float], chosen: float) -> go.Figure:
    """Wavelength per sin/cos pair for several bases (log scale): the base sets the slowest wave,
    2π·base."""
    fig = go.Figure()
    pairs = np.arange(d_model // 2)
    for base in bases:
        fig.add_trace(go.Scatter(x=pairs, y=wavelengths(d_model, base), mode="lines",
                                 name=f"base {base:g}",
                                 line=dict(width=3 if base == chosen else 1.2),
                                 hovertemplate=f"base {base:g}<br>pair i %{{x}}<br>"
                                               "wavelength %{y:.4g}<extra></extra>"))
    fig.update_xaxes(title="pair i (dimensions 2i, 2i+1)")
    fig.update_yaxes(title="wavelength (positions)", type="log")
    return base_layout(fig, "Wavelength 2π·base^(2i/d_model)", height=340)


def embedding_plus_pe_figure(embedding, positional, total, tokens: list[str]) -> go.Figure:
    """Three heatmaps side by side on one colour scale: embedding + positional = input."""
    parts = [np.asarray(a, dtype=np.float64) for a in (embedding, positional, total)]
    labels = token_labels(tokens)
    bound = float(max(np.abs(p).max() for p in parts)) or 1.0
    # Short, on two lines: a panel of the three is about 150 px wide on a phone.
    titles = ("E[id]·√d_model", "+ PE", "= input")
    fig = go.Figure()
    # Three x axes on one shared y axis, laid out by hand (make_subplots is slow for a page rerun).
    layout = {}
    names = ("embedding", "positional", "input")
    for n, (part, name, title) in enumerate(zip(parts, names, titles)):
        axis = "x" if n == 0 else f"x{n + 1}"
        fig.add_trace(go.Heatmap(z=part, x=list(range(part.shape[1])), y=labels, xaxis=axis,
                                 yaxis="y", coloraxis="coloraxis", name=name,
                                 hovertemplate=f"{name}<br>token %{{y}}<br>dimension %{{x}}<br>"
                                               "value %{z:.4g}<extra></extra>"))
        layout["xaxis" if n == 0 else f"xaxis{n + 1}"] = dict(
            domain=[n * 0.34, n * 0.34 + 0.32], title=dict(text=f"{title}<br>dimension"),
            anchor="y")
    fig.update_layout(**layout, yaxis=dict(type="category", autorange="reversed"),
                      coloraxis=dict(colorscale=DIVERGING, cmin=-bound, cmax=bound, cmid=0))
    return base_layout(fig, "embedding + positional encoding = input",
                       height=max(300, 22 * len(labels) + 160))


def norms_figure(embedding, positional, total, tokens: list[str]) -> go.Figure:
    """‖embedding‖, ‖PE‖ and ‖input‖ per token: how large the word part and the position part
    are."""
    labels = token_labels(tokens)
    fig = go.Figure()
    for name, part in (("‖embedding‖", embedding), ("‖PE‖", positional), ("‖input‖", total)):
        fig.add_trace(go.Bar(x=labels,
                             y=np.linalg.norm(np.asarray(part, dtype=np.float64), axis=-1),
                             name=name,
                             hovertemplate=f"token %{{x}}<br>{name} %{{y:.4g}}<extra></extra>"))
    fig.update_xaxes(type="category", title="token")
    fig.update_yaxes(title="L2 norm")
    return base_layout(fig, "Norms per position", height=320)


def reversed_words(text: str) -> str:
    """The same words in the opposite order (whitespace-separated words)."""
    return " ".join(reversed(text.split()))


def match_positions(tokens_a: list[str], tokens_b: list[str]) -> list[int | None]:
    """For each token of a, the position of the same token in b (repeats matched in order), or
    None."""
    free: dict[str, list[int]] = {}
    for j, tok in enumerate(tokens_b):
        free.setdefault(tok, []).append(j)
    return [free[tok].pop(0) if free.get(tok) else None for tok in tokens_a]


def order_difference(input_a, input_b, matches: list[int | None]) -> np.ndarray:
    """input_a[i] − input_b[match(i)] for each token of a (NaN row where there is no match) -> (L_a,
    d_model)."""
    a = np.asarray(input_a, dtype=np.float64)
    b = np.asarray(input_b, dtype=np.float64)
    out = np.full_like(a, np.nan)
    for i, j in enumerate(matches):
        if j is not None:
            out[i] = a[i] - b[j]
    return out


def order_table(tokens: list[str], matches: list[int | None], emb_difference,
                difference) -> dict[str, list]:
    """The word-order comparison, per token of the original order: its position there and in the
    reversed sentence (None: no partner), and the norms of the two differences, ‖Δ embedding‖ (0 for
    a partnered token: the same row of E) and ‖Δ input‖ (NaN without a partner)."""
    return {"token": list(tokens), "position (original)": list(range(len(tokens))),
            "position (reversed)": list(matches),
            "‖Δ embedding‖": np.linalg.norm(np.asarray(emb_difference, dtype=np.float64),
                                            axis=-1).tolist(),
            "‖Δ input‖": np.linalg.norm(np.asarray(difference, dtype=np.float64), axis=-1).tolist()}


def largest_move_latex(table: dict[str, list]) -> str | None:
    """Of the tokens that moved (from :func:`order_table`), the one whose input changed most, as
    LaTeX: its two positions, ‖ΔE‖ and ‖Δ input‖ = ‖PE_i − PE_j‖. None when no
    token changed position."""
    matches, delta = table["position (reversed)"], table["‖Δ input‖"]
    moved = [i for i, j in enumerate(matches) if j is not None and j != i]
    if not moved:
        return None
    i = max(moved, key=lambda n: delta[n])
    j = matches[i]
    return (r"\text{same token, moved from position } %d \text{ to } %d:\ \lVert \Delta E \rVert = "
            r"%.3g,\ \lVert \Delta\,\text{input} \rVert = \lVert PE_{%d} - PE_{%d} \rVert = %.3f"
            % (i, j, table["‖Δ embedding‖"][i], i, j, delta[i]))


def order_difference_heatmap(diff, tokens: list[str], matches: list[int | None]) -> go.Figure:
    labels = [f"{lab} (→ {j})" if j is not None else f"{lab} (no match)"
              for lab, j in zip(token_labels(tokens), matches)]
    n_columns = np.asarray(diff).shape[1]
    fig = heatmap(diff, x_labels=list(range(n_columns)), y_labels=labels,
                  title="input(original order) − input(reversed order), same token",
                  x_title="dimension (d_model)", y_title="token (→ its position when reversed)",
                  hover_value="difference", height=max(260, 22 * len(labels) + 120))
    return thin_dimension_ticks(fig, n_columns)
