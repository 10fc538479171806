"""Figures for the inside of one encoder or decoder layer: every head at once, the masked scores,
Add & Norm before and after LayerNorm, and the feed-forward activations.

Grids are built as one figure dict with explicit axis domains instead of ``make_subplots``: the
result is the same, and it builds several times faster, which keeps a page rerun cheap.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (BLUE, DIVERGING, GUIDE, LIGHT_BLUE, LIGHT_ORANGE,
                                          MASKED_WEIGHT, ORANGE, PURPLE, SEQUENTIAL, heatmap_traces,
                                          make_figure)

PANEL_GAP_X = 0.03
PANEL_GAP_Y = 0.09


def hline(y: float, colour: str = GUIDE, dash: str = "dot") -> dict:
    """A horizontal line across the plot as a layout shape (``add_hline`` costs ~10× more)."""
    return {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": y, "y1": y,
            "line": {"color": colour, "dash": dash}}


def _axis_id(index: int) -> str:
    """Plotly names the first axis pair x/y, the next ones x2/y2, x3/y3, …"""
    return "" if index == 0 else str(index + 1)


def grid_axes(n: int, cols: int, widths: list[float] | None = None, gap_x: float = PANEL_GAP_X,
              gap_y: float = PANEL_GAP_Y,
              titles: list[str] | None = None) -> tuple[dict, list[tuple[str, str]]]:
    """Layout entries for ``n`` panels in ``cols`` columns (rows fill top to bottom).

    Returns the layout dict (axes with their domains, panel titles as annotations) and, per panel,
    the (xaxis, yaxis) references a trace needs ("x3", "y3").
    """
    rows = -(-n // cols)
    widths = widths or [1.0] * cols
    usable_x = 1.0 - gap_x * (cols - 1)
    total = sum(widths)
    x_starts, x = [], 0.0
    for w in widths:
        x_starts.append(x)
        x += usable_x * w / total + gap_x
    panel_h = (1.0 - gap_y * (rows - 1)) / rows
    layout: dict = {"annotations": []}
    refs = []
    for i in range(n):
        r, c = divmod(i, cols)
        ax = _axis_id(i)
        x0 = x_starts[c]
        x1 = x0 + usable_x * widths[c] / total
        y1 = 1.0 - r * (panel_h + gap_y)
        y0 = y1 - panel_h
        layout[f"xaxis{ax}"] = {"domain": [max(0.0, x0), min(1.0, x1)], "anchor": f"y{ax}",
                                "type": "category"}
        layout[f"yaxis{ax}"] = {"domain": [max(0.0, y0), min(1.0, y1)], "anchor": f"x{ax}",
                                "type": "category", "autorange": "reversed"}
        if titles:
            # xanchor "center": plotly's "auto" anchors a title left of x < 1/3 and right of x >
            # 2/3, so two columns' titles leaned towards each other and, large, ran into each other
            layout["annotations"].append({"text": titles[i], "x": (x0 + x1) / 2, "y": min(1.0, y1),
                                          "xref": "paper", "yref": "paper", "showarrow": False,
                                          "xanchor": "center", "yanchor": "bottom",
                                          "font": {"size": 12}})
        refs.append((f"x{ax}", f"y{ax}"))
    return layout, refs


def head_grid(values, x_labels: list[str], y_labels: list[str], title: str | None = None,
              selected: int | None = None, cols: int | None = None, value_name: str = "weight",
              colorscale: str = SEQUENTIAL, zmin: float | None = 0.0, zmax: float | None = 1.0,
              height: int | None = None, panel_name: str = "head",
              panel_width: int | None = None) -> go.Figure:
    """One small heatmap per head. values (h, L_q, L_k); the heads share one colour scale.

    Each head's colour trace is named "head j" (masked cells, if any, in a grey trace "head j
    masked"); ``panel_name`` names the panels another way when they are not heads ("layer": one head
    in each layer); ``panel_width``, when given, is the px a panel needs (the figure's min_width),
    instead of the default.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(f"head_grid needs (h, L_q, L_k), got shape {values.shape}")
    h = values.shape[0]
    cols = cols or min(h, 4)
    titles = [f"<b>{panel_name} {j} ◀</b>" if j == selected else f"{panel_name} {j}"
              for j in range(h)]
    layout, refs = grid_axes(h, cols, titles=titles)
    data: list[dict] = []
    for j in range(h):
        data += heatmap_traces(values[j], list(x_labels), list(y_labels), value_name,
                               f"{panel_name} {j}", refs[j], ".6g", coloraxis="coloraxis")
    rows = -(-h // cols)
    for j in range(h):
        ax = _axis_id(j)
        c = j % cols
        # Token labels on the outer edges (queries left, keys below), small enough for a panel; and
        # square cells: one category step is as long on y as on x.
        layout[f"xaxis{ax}"].update(showticklabels=j + cols >= h, tickangle=-90,  # none below it
                                    tickfont={"size": 10}, automargin=True)
        layout[f"yaxis{ax}"].update(showticklabels=c == 0, tickfont={"size": 10}, automargin=True,
                                    scaleanchor=f"x{ax}", scaleratio=1, constrain="domain")
    layout["coloraxis"] = {"colorscale": colorscale, "cmin": zmin, "cmax": zmax,
                           "colorbar": {"title": {"text": value_name}}}
    if colorscale == DIVERGING and zmin is None and zmax is None:
        layout["coloraxis"]["cmid"] = 0.0
    fig = make_figure(data, layout, title, height or 140 + 240 * rows, panel_titles=True)
    if panel_width:
        fig.layout.meta = {"min_width": panel_width * cols + 60}
    return fig


def attention_map(values, x_labels: list[str], y_labels: list[str], title: str | None = None,
                  value_name: str = "weight", colorscale: str = SEQUENTIAL,
                  zmin: float | None = 0.0, zmax: float | None = 1.0, x_title: str = "key",
                  y_title: str = "query", height: int | None = None, masked=None) -> go.Figure:
    """One large attention map (L_q, L_k) with readable token axes; −∞ cells grey, as in
    ``heatmap``, and so are the cells ``masked`` names (True = masked: their
    weight is exactly 0)."""
    values = np.asarray(values, dtype=np.float64)
    layout, refs = grid_axes(1, 1)
    data = heatmap_traces(values, list(x_labels), list(y_labels), value_name, axes=refs[0],
                          value_format=".6g", masked=masked,
                          masked_hover=MASKED_WEIGHT if masked is not None else "masked (−∞)",
                          coloraxis="coloraxis")
    layout["xaxis"].update({"title": {"text": x_title}})
    # square cells
    layout["yaxis"].update(title={"text": y_title}, scaleanchor="x", scaleratio=1,
                           constrain="domain")
    layout["coloraxis"] = {"colorscale": colorscale, "cmin": zmin, "cmax": zmax,
                           "colorbar": {"title": {"text": value_name}}}
    return make_figure(data, layout, title, height or max(320, 140 + 24 * values.shape[0]))


def masked_attention_figure(scores, masked_scores, weights, x_labels: list[str],
                            y_labels: list[str], title: str | None = None) -> go.Figure:
    """Three panels of one head: QKᵀ/√d_k, the same with masked cells at −∞ (grey), and the softmax.

    The two score panels share a diverging colour scale centred on 0; the weights use [0, 1]. A
    masked cell is grey in the second and the third panel alike: its weight is exactly 0, not the
    colour scale's 0.
    """
    scores = np.asarray(scores, dtype=np.float64)
    masked_scores = np.asarray(masked_scores, dtype=np.float64)
    # Two short lines each: at 1280 px a panel is about 190 px wide, and one-line titles ran into
    # each other; so did "after the mask" and "weights = softmax" at a projector's 18 px.
    layout, refs = grid_axes(3, 3, gap_x=0.06, titles=["scores<br>QKᵀ/√d_k", "masked<br>(−∞: grey)",
                                                       "weights<br>= softmax"])
    x, y = list(x_labels), list(y_labels)
    data = (heatmap_traces(scores, x, y, "score", "scores", refs[0], ".6g", coloraxis="coloraxis")
            + heatmap_traces(masked_scores, x, y, "score", "masked scores", refs[1], ".6g",
                             coloraxis="coloraxis")
            + heatmap_traces(weights, x, y, "weight", "weights", refs[2], ".6g",
                             masked=np.isneginf(masked_scores), masked_hover=MASKED_WEIGHT,
                             coloraxis="coloraxis2"))
    finite = scores[np.isfinite(scores)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    # One colour bar per scale, both outside the panels, on the right, one above the other: none
    # sits between two panels, and their titles do not meet (side by side, "score" ran into "weight"
    # at 1280 px). Each title is turned beside its bar, which keeps its whole
    # length for three ticks.
    bar = {"x": 1.02, "xanchor": "left", "len": 0.45, "thickness": 12, "nticks": 3}
    layout["coloraxis"] = {"colorscale": DIVERGING, "cmin": -bound, "cmax": bound,
                           "colorbar": {**bar, "title": {"text": "score", "side": "right"},
                                        "y": 1.0, "yanchor": "top"}}
    layout["coloraxis2"] = {"colorscale": SEQUENTIAL, "cmin": 0.0, "cmax": 1.0,
                            "colorbar": {**bar, "title": {"text": "weight", "side": "right"},
                                         "y": 0.0, "yanchor": "bottom"}}

    for i in (1, 2):
        layout[f"yaxis{_axis_id(i)}"]["showticklabels"] = False
    for i in range(3):
        layout[f"xaxis{_axis_id(i)}"]["tickangle"] = -45
    fig = make_figure(data, layout, title, max(340, 160 + 22 * len(y)), panel_titles=True)
    fig.layout.title.update(x=0.5, xanchor="center")  # centred over the three panels
    fig.layout.margin.t += 20  # room for the panel titles' second line under the figure title
    return fig


def position_stats(x) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (biased, as LayerNorm uses) variance over the last axis. x (L, d_model) -> (L,),
    (L,)."""
    x = np.asarray(x, dtype=np.float64)
    return x.mean(-1), x.var(-1)


def layernorm_stats_figure(mean_before, var_before, mean_after, var_after, labels: list[str],
                           title: str | None = None) -> go.Figure:
    """Per position: mean (left) and variance (right) of the residual before LayerNorm and of its
    output."""
    layout, refs = grid_axes(2, 2, gap_x=0.08,
                             titles=["mean over d_model", "variance over d_model"])
    data = []
    series = [(0, mean_before, "mean before LayerNorm", LIGHT_BLUE),
              (0, mean_after, "mean after LayerNorm", BLUE),
              (1, var_before, "variance before LayerNorm", LIGHT_ORANGE),
              (1, var_after, "variance after LayerNorm", ORANGE)]
    for panel, values, name, colour in series:
        data.append({"type": "bar", "x": list(labels), "y": np.asarray(values, dtype=np.float64),
                     "name": name, "marker": {"color": colour}, "xaxis": refs[panel][0],
                     "yaxis": refs[panel][1],
                     "hovertemplate": f"%{{x}}<br>{name} %{{y:.6g}}<extra></extra>"})
    for i in range(2):
        ax = _axis_id(i)
        layout[f"yaxis{ax}"] = {**layout[f"yaxis{ax}"], "type": "linear", "autorange": True}
        layout[f"xaxis{ax}"]["tickangle"] = -45
    layout["barmode"] = "group"
    layout["legend"] = {"orientation": "h", "y": -0.35}
    # two panels, each with its own value axis, and a legend of four
    layout["meta"] = {"min_width": 600}
    return make_figure(data, layout, title, 400, panel_titles=True)


def gamma_beta_figure(gamma, beta, title: str | None = None) -> go.Figure:
    """LayerNorm's learned scale γ and shift β, one value per dimension of d_model."""
    gamma, beta = np.asarray(gamma, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    dims = np.arange(gamma.size)
    data = [{"type": "scatter", "x": dims, "y": gamma, "mode": "lines+markers", "name": "γ (scale)",
             "marker": {"size": 3}, "hovertemplate": "dimension %{x}<br>γ %{y:.6g}<extra></extra>"},
            {"type": "scatter", "x": dims, "y": beta, "mode": "lines+markers", "name": "β (shift)",
             "marker": {"size": 3}, "hovertemplate": "dimension %{x}<br>β %{y:.6g}<extra></extra>"}]
    layout = {"xaxis": {"title": {"text": "dimension of d_model"}},
              "shapes": [hline(1.0), hline(0.0)]}
    return make_figure(data, layout, title, 300)


def relu_zero_fraction(hidden) -> tuple[np.ndarray, float]:
    """How many ReLU units are exactly zero: per position (L,) and over the whole (L, d_ff)
    array."""
    hidden = np.asarray(hidden)
    zero = hidden == 0
    return zero.mean(axis=-1), float(zero.mean())


def ffn_hidden_figure(hidden, labels: list[str], title: str | None = None) -> go.Figure:
    """The feed-forward's hidden activations max(0, xW₁ + b₁), (L, d_ff); zeros show as the darkest
    colour."""
    hidden = np.asarray(hidden, dtype=np.float64)
    data = [{"type": "heatmap", "z": hidden, "x": np.arange(hidden.shape[1]), "y": list(labels),
             "colorscale": SEQUENTIAL, "zmin": 0.0, "colorbar": {"title": {"text": "max(0, ·)"}},
             "hovertemplate": "%{y}<br>unit %{x}<br>ReLU output %{z:.6g}<extra></extra>"}]
    layout = {"xaxis": {"title": {"text": f"hidden unit (of d_ff = {hidden.shape[1]})"}},
              "yaxis": {"type": "category", "autorange": "reversed"}}
    return make_figure(data, layout, title, max(260, 120 + 22 * hidden.shape[0]))


def zero_fraction_figure(fraction, labels: list[str], overall: float, d_ff: int,
                         title: str | None = None) -> go.Figure:
    """Per position, the share of the d_ff ReLU units that output exactly 0, with the overall share
    as a line."""
    fraction = np.asarray(fraction, dtype=np.float64)
    counts = np.rint(fraction * d_ff).astype(int)
    data = [{"type": "bar", "x": list(labels), "y": fraction, "customdata": counts,
             "name": "zero units", "text": [f"{f:.0%}" for f in fraction],
             "textposition": "outside", "marker": {"color": PURPLE},
             "hovertemplate": f"%{{x}}<br>%{{customdata}} of {d_ff} units are 0 "
                              "(%{y:.2%})<extra></extra>"}]
    layout = {"yaxis": {"range": [0, 1.15], "tickformat": ".0%",
                        "title": {"text": "units at exactly 0"}},
              "xaxis": {"type": "category"},
              "shapes": [hline(overall, ORANGE, "dash")],
              # above the plot, not on the line: there it ran into the bars' values
              "annotations": [{"text": f"dashed: overall {overall:.1%}", "xref": "paper", "x": 0,
                               "xanchor": "left", "yref": "paper", "y": 1, "yanchor": "bottom",
                               "showarrow": False, "font": {"color": ORANGE}}]}
    return make_figure(data, layout, title, 320)
