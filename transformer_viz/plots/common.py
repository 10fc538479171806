"""Conventions every figure shares: readable unique token labels, escaped text, masked cells drawn apart."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

# Set once: passing template= to every figure makes plotly re-validate the whole template each time (~40 ms).
pio.templates.default = "plotly_white"

DIVERGING = "RdBu_r"  # signed values (embeddings, scores, activations), centred on 0
SEQUENTIAL = "Viridis"  # probabilities and weights in [0, 1]
MASKED_COLOUR = "#d0d0d0"  # cells set to −∞ by a mask: grey, outside any colour scale
FONT = dict(family="Inter, Arial, sans-serif", size=13)


def safe_label(text: str) -> str:
    """Plotly renders a subset of HTML in labels and hovers; escape user text so it shows literally."""
    return html.escape(str(text), quote=False)


def token_labels(tokens: list[str]) -> list[str]:
    """Unique, readable axis labels: position and token ("3 ▁Hund"); the position keeps repeats apart."""
    return [f"{i} {safe_label(t)}" for i, t in enumerate(tokens)]


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    fig.update_layout(title=title, font=FONT, margin=dict(l=10, r=10, t=50 if title else 20, b=10))
    if height:
        fig.update_layout(height=height)
    return fig


def heatmap(values, x_labels=None, y_labels=None, title: str | None = None, colorscale: str = DIVERGING,
            zmid: float | None = 0.0, zmin: float | None = None, zmax: float | None = None,
            x_title: str | None = None, y_title: str | None = None, hover_value: str = "value",
            colorbar_title: str | None = None, height: int | None = None, text_format: str | None = None) -> go.Figure:
    """A heatmap of a 2-D array; −∞ cells (masked) are drawn grey and hover as "masked (−∞)"."""
    z = np.asarray(values, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D array, got shape {z.shape}")
    masked = np.isneginf(z)
    shown = np.where(masked, np.nan, z)
    x = list(x_labels) if x_labels is not None else list(range(z.shape[1]))
    y = list(y_labels) if y_labels is not None else list(range(z.shape[0]))
    if colorscale == SEQUENTIAL and zmid == 0.0:
        zmid = None
    fig = go.Figure()
    if masked.any():
        fig.add_trace(go.Heatmap(z=np.where(masked, 1.0, np.nan), x=x, y=y, showscale=False, hoverongaps=False,
                                 colorscale=[[0, MASKED_COLOUR], [1, MASKED_COLOUR]],
                                 hovertemplate="row %{y}<br>column %{x}<br>masked (−∞)<extra></extra>",
                                 name="masked"))
    fig.add_trace(go.Heatmap(z=shown, x=x, y=y, colorscale=colorscale, zmid=zmid, zmin=zmin, zmax=zmax,
                             hoverongaps=False, colorbar=dict(title=colorbar_title) if colorbar_title else None,
                             texttemplate=text_format, name=hover_value,
                             hovertemplate=f"row %{{y}}<br>column %{{x}}<br>{hover_value} %{{z:.4g}}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title=y_title, type="category")
    fig.update_xaxes(title=x_title, type="category", tickangle=-45 if len(x) > 8 else 0)
    return base_layout(fig, title, height)
