"""Figures for "Why this word?" (interpret/patching.py, interpret/contrast.py): the restored shares
of activation patching per encoder layer × source position, per decoder layer × target position
(the causal cone drawn: the cells after t grey) and per head, the contrastive attribution as
bars, and each written token's source and prefix shares (interpret/source_share.py) as stacked
bars. Plain arrays in, a Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (BLUE, LIGHT_BLUE, LIGHT_ORANGE, ORANGE, SEQUENTIAL,
                                          category_axes, heatmap_traces, make_figure)

SHARE = "restored share"
# A share is a fraction of the clean run's preference: 0 nothing restored, 1 all of it. A patch
# that overshoots or pushes the other way keeps the scale's end colour; its hover says the value.
SHARE_SCALE = {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": 1.0}
CANNOT_REACH = "cannot reach position t (the causal mask: a position reads only earlier ones)"
# px for the title, the axis title and token labels turned upright, whose length a figure does not
# know until drawn; the rows get 40 px each
LABELS_HEIGHT = 220
# Short: three panels side by side on a phone, "encoder self-attention" ran into its neighbour
KIND_TITLES = {"enc": "encoder self", "dec": "decoder self", "cross": "cross"}


def _outline(column: int, rows: int) -> dict:
    """An orange outline around one column of a category heatmap (its cells sit at 0, 1, …)."""
    return {"type": "rect", "xref": "x", "yref": "y", "x0": column - 0.5, "x1": column + 0.5,
            "y0": -0.5, "y1": rows - 0.5, "line": {"color": ORANGE, "width": 3},
            "fillcolor": "rgba(0,0,0,0)"}


def _share_traces(z, x: list, rows: int, **extra) -> list[dict]:
    """The heatmap traces of restored shares, rows named by layer, on the 0–1 scale."""
    return heatmap_traces(z, x, [f"layer {i}" for i in range(rows)], SHARE, value_format=".3f",
                          colorbar={"title": {"text": SHARE}}, **SHARE_SCALE, **extra)


def encoder_patch_figure(shares, shares_all, labels: list[str], changed: list[int] = (),
                         title: str | None = None) -> go.Figure:
    """Encoder layer (rows) × source position (columns, ``labels``), then a column "all positions":
    the share restored by copying the clean run's encoder output there into the corrupted run.
    shares (N, S), shares_all (N,); the changed source positions are outlined."""
    shares = np.asarray(shares, dtype=np.float64)
    N = shares.shape[0]
    z = np.column_stack([shares, np.asarray(shares_all, dtype=np.float64)])  # (N, S + 1)
    x = list(labels) + ["all positions"]
    # Two lines: on one, at a projector's 18 px, the title ran past the chart's left edge
    layout = category_axes(x, "source position<br>(patched after this encoder layer)")
    layout["shapes"] = [_outline(s, N) for s in changed]
    return make_figure(_share_traces(z, x, N), layout, title, LABELS_HEIGHT + 40 * N)


def decoder_patch_figure(shares, labels: list[str], position: int,
                         title: str | None = None) -> go.Figure:
    """Decoder layer (rows) × target position (columns: the decoder input, ``labels``): the share
    restored by copying the clean run's decoder stream there. The positions after ``position``
    cannot reach it (grey); its own column is outlined. shares (N, T)."""
    shares = np.asarray(shares, dtype=np.float64)
    N, T = shares.shape
    later = np.broadcast_to(np.arange(T) > position, shares.shape)  # the causal cone's outside
    traces = _share_traces(shares, list(labels), N, masked=later, masked_hover=CANNOT_REACH)
    layout = category_axes(list(labels),
                           "target position<br>(decoder input, patched after the layer)")
    layout["shapes"] = [_outline(position, N)]
    return make_figure(traces, layout, title, LABELS_HEIGHT + 40 * N)


def head_patch_figure(shares, kinds: tuple[str, ...] = ("enc", "dec", "cross"),
                      title: str | None = None) -> go.Figure:
    """One panel per kind of attention (encoder self, decoder self, cross), layer (rows) × head
    (columns): the share restored by copying one head's clean output (before W_O). shares
    (kinds, N, h)."""
    shares = np.asarray(shares, dtype=np.float64)
    K, N, h = shares.shape
    data, layout = [], {}
    for k, kind in enumerate(kinds):
        suffix = "" if k == 0 else str(k + 1)
        name = KIND_TITLES.get(kind, kind)
        data += heatmap_traces(shares[k], [f"head {j}" for j in range(h)],
                               [f"layer {i}" for i in range(N)], SHARE, panel=name,
                               axes=(f"x{suffix}", f"y{suffix}"), value_format=".3f",
                               coloraxis="coloraxis")
        layout[f"xaxis{suffix}"] = {"domain": [k / K + 0.02, (k + 1) / K - 0.02],
                                    "type": "category", "title": {"text": name}}
        layout[f"yaxis{suffix}"] = {"type": "category", "autorange": "reversed",
                                    "anchor": f"x{suffix}", "showticklabels": k == 0}
    layout["coloraxis"] = {"colorscale": SEQUENTIAL, "cmin": 0.0, "cmax": 1.0,
                           "colorbar": {"title": {"text": SHARE}}}
    return make_figure(data, layout, title, 140 + 40 * N)


def _bars(values, labels: list[str], name: str, colour: str, panel: str = "", **extra) -> dict:
    return {"type": "bar", "orientation": "h", "x": np.asarray(values, dtype=np.float64),
            "y": list(labels), "name": name, "marker": {"color": colour},
            "xaxis": f"x{panel}", "yaxis": f"y{panel}",
            "hovertemplate": "%{y}<br>%{x:.4f}<extra>%{fullData.name}</extra>", **extra}


def contrast_figure(source, source_labels: list[str], target, target_labels: list[str],
                    plain=None, title: str | None = None) -> go.Figure:
    """Horizontal bars, one per token, top to bottom in reading order: the contrastive attribution
    to the source tokens (upper panel) and to the target prefix (lower panel); ``plain``, when
    given, the plain attribution of the same word over the source tokens beside the contrastive
    bars."""
    S, P = len(source), len(target)
    split = S / (S + P)  # each panel's height in proportion to its bars
    gap = 0.08
    data = [_bars(source, source_labels, "why X, not Y", BLUE, legendgroup="contrast"),
            _bars(target, target_labels, "why X, not Y", BLUE, "2", legendgroup="contrast",
                  showlegend=False)]
    if plain is not None:
        data.append(_bars(plain, source_labels, "why X (plain)", LIGHT_BLUE))
    layout = {"barmode": "group", "bargap": 0.2,
              "yaxis": {"type": "category", "autorange": "reversed",
                        "domain": [1 - split + gap / 2, 1], "title": {"text": "source token"}},
              "yaxis2": {"type": "category", "autorange": "reversed", "anchor": "x2",
                         "domain": [0, 1 - split - gap / 2], "title": {"text": "target prefix"}},
              "xaxis": {"zeroline": True, "anchor": "y"},
              "xaxis2": {"zeroline": True, "anchor": "y2",
                         "title": {"text": "attribution (logit units)"}},
              # under the figure: in a narrow column it takes two lines, which would run into the
              # title above
              "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom",
                         "yref": "container"}, "margin": {"b": 80}}
    height = 180 + 26 * (S + P) + (14 * S if plain is not None else 0)
    return make_figure(data, layout, title, height)


def source_share_figure(tokens: list[str], source_share, flagged=None,
                        threshold: float | None = None, title: str | None = None) -> go.Figure:
    """Stacked bars, one per written token (``tokens``): the share of its prediction that came from
    the source (blue) and from the translation so far (orange), summing to 1. ``flagged`` (T,)
    marks tokens with little from the source (hatched); ``threshold`` draws the flag's line."""
    share = np.asarray(source_share, dtype=np.float64)
    flagged = np.zeros(len(share), bool) if flagged is None else np.asarray(flagged, dtype=bool)
    pattern = {"shape": ["/" if f else "" for f in flagged], "fgcolor": "#333"}
    data = [{"type": "bar", "x": list(tokens), "y": values, "name": name,
             "marker": {"color": colour, "pattern": pattern},
             "hovertemplate": f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>"}
            for name, values, colour in (("from the source", share, BLUE),
                                         ("from the translation so far", 1 - share, LIGHT_ORANGE))]
    layout = {"barmode": "stack", "bargap": 0.2,
              "xaxis": {"type": "category", "title": {"text": "token written"}},
              # The colours named on the axis, not in a legend: above the plot, on a phone, the
              # legend ran into the title's second line
              "yaxis": {"range": [0, 1],
                        "title": {"text": "blue: source, orange: prefix"}},
              "showlegend": False}
    if threshold is not None:
        line = {"color": "#333", "dash": "dash", "width": 1.5}
        layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": threshold,
                             "y1": threshold, "line": line}]
    fig = make_figure(data, layout, title, LABELS_HEIGHT + 160)
    fig.layout.meta = {"min_width": 40 * len(share)}
    return fig
