"""Figures for the lecture's steps whose models this app does not run (yet): drawn from the formulas
alone, with the sentence's own tokens where they apply. Pure functions: arguments in, plotly figure
out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (ARROW, BLUE, DECODER_FILL, ENCODER_FILL, FAINT, GREEN,
                                          INK, LIGHT_BLUE, MASKED_COLOUR, ORANGE, make_figure,
                                          safe_label, token_text)


def _node(x: float, y: float, text: str, colour: str, hover: str) -> dict:
    return {"type": "scatter", "x": [x], "y": [y], "mode": "markers+text", "text": [text],
            "textposition": "middle center",
            "marker": {"size": 38, "color": colour, "line": {"color": INK, "width": 1},
                       "symbol": "square"},
            "showlegend": False, "hovertemplate": f"{hover}<extra></extra>"}


def _arrow(x0: float, y0: float, x1: float, y1: float, colour: str = ARROW, width: int = 2) -> dict:
    return {"x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x",
            "ayref": "y", "showarrow": True, "arrowhead": 2, "arrowwidth": width,
            "arrowcolor": colour, "text": "", "standoff": 17, "startstandoff": 17}


def _label(x: float, y: float, text: str, size: int = 13, colour: str = INK,
           angle: int = 0) -> dict:
    return {"x": x, "y": y, "xref": "x", "yref": "y", "text": text, "showarrow": False,
            "textangle": angle, "font": {"size": size, "color": colour}}


def shown_positions(n: int, first: int = 3, last: int = 2) -> list[int | None]:
    """The positions an unrolled diagram draws: all of them when few, else the first and the last
    few with None (an ellipsis) between them."""
    if n <= first + last + 1:
        return list(range(n))
    return list(range(first)) + [None] + list(range(n - last, n))


def rnn_context_figure(src_tokens: list[str], tgt_tokens: list[str],
                       title: str | None = None) -> go.Figure:
    """An RNN encoder–decoder unrolled over the sentence: h_t = f(h_{t−1}, x_t) along the source,
    the last state is the one context vector c, and the decoder s_t = g(s_{t−1}, y_{t−1}, c) starts
    from it. Every source token reaches the decoder only through c: the bottleneck attention
    removes. Long sentences are drawn with their first and last states and an ellipsis between."""
    src = [safe_label(token_text(t)) for t in src_tokens]
    tgt = [safe_label(token_text(t)) for t in tgt_tokens]
    data, notes = [], []
    src_shown, tgt_shown = shown_positions(len(src)), shown_positions(len(tgt))
    for x, i in enumerate(src_shown):
        if i is None:
            notes.append(_label(x, 1, "…", 20))
        else:
            data.append(_node(x, 1, f"h{i + 1}", ENCODER_FILL,
                              f"encoder state h_{i + 1} after reading {src[i]}"))
            notes += [_label(x, 0.3, src[i], angle=-30), _arrow(x, 0.5, x, 1)]
        if x:
            notes.append(_arrow(x - 1, 1, x, 1))
    cx = len(src_shown) + 0.3
    data.append({**_node(cx, 1.7, "c", ORANGE,
                         "the context vector c = h_S: the whole source in one vector"),
                 "marker": {"size": 48, "color": ORANGE, "line": {"color": INK, "width": 2},
                            "symbol": "circle"},
                 "textfont": {"color": "white"}})
    notes.append(_arrow(len(src_shown) - 1, 1, cx, 1.7, ORANGE, 3))
    for k, t in enumerate(tgt_shown):
        x = len(src_shown) + 1 + k
        if k:
            notes.append(_arrow(x - 1, 1, x, 1))
        if t is None:
            notes.append(_label(x, 1, "…", 20))
            continue
        data.append(_node(x, 1, f"s{t + 1}", DECODER_FILL,
                          f"decoder state s_{t + 1}, writes {tgt[t]}"))
        notes += [_label(x, 0.3, tgt[t], angle=-30), _arrow(x, 1, x, 0.5, FAINT, 1)]
        notes.append(_arrow(cx, 1.7, x, 1, ORANGE if t == 0 else LIGHT_BLUE, 3 if t == 0 else 1))
    width = len(src_shown) + 1 + len(tgt_shown)
    notes.append(_label((len(src_shown) - 1) / 2, -0.25, f"encoder: {len(src)} source tokens", 13,
                        BLUE))
    notes.append(_label(len(src_shown) + 1 + (len(tgt_shown) - 1) / 2, -0.25,
                        f"decoder: {len(tgt)} output tokens", 13, ORANGE))
    layout = {"xaxis": {"visible": False, "range": [-0.7, width - 0.3]},
              "yaxis": {"visible": False, "range": [-0.45, 2.1]}, "annotations": notes}
    return make_figure(data, layout, title, 360)


def patch_grid(image_size: int = 224, patch: int = 16) -> tuple[np.ndarray, int]:
    """A synthetic grey image (a smooth pattern from sines) of image_size² pixels and the number of
    patches N = (image_size / patch)², as a Vision Transformer cuts it."""
    y, x = np.mgrid[0:image_size, 0:image_size] / image_size
    image = 0.5 + 0.25 * np.sin(6 * x + 2 * y) + 0.25 * np.cos(9 * y * x)
    return image, (image_size // patch) ** 2


def vit_patches_figure(image_size: int = 224, patch: int = 16,
                       title: str | None = None) -> go.Figure:
    """The image cut into (image_size / patch)² patches, numbered in reading order: each becomes one
    token (its patch² · 3 pixel values, projected to d_model), plus a [CLS] token at position 0."""
    image, n = patch_grid(image_size, patch)
    side = image_size // patch
    data = [{"type": "heatmap", "z": image, "colorscale": "Greys", "showscale": False,
             "hoverinfo": "skip"}]
    shapes = [{"type": "line", "x0": k * patch - 0.5, "x1": k * patch - 0.5, "y0": -0.5,
               "y1": image_size - 0.5, "line": {"color": ORANGE, "width": 1}}
              for k in range(side + 1)]
    shapes += [{"type": "line", "y0": k * patch - 0.5, "y1": k * patch - 0.5, "x0": -0.5,
                "x1": image_size - 0.5, "line": {"color": ORANGE, "width": 1}}
               for k in range(side + 1)]
    notes = [{"x": (c + 0.5) * patch, "y": (r + 0.5) * patch, "text": str(r * side + c + 1),
              "showarrow": False, "font": {"size": 11, "color": INK}}
             for r in range(side) for c in range(side) if (r + c) % 3 == 0]
    layout = {"xaxis": {"visible": False, "constrain": "domain"},
              "yaxis": {"visible": False, "autorange": "reversed", "scaleanchor": "x"},
              "shapes": shapes, "annotations": notes}
    title = title or f"{image_size}×{image_size} pixels → {side}×{side} = {n} patch tokens"
    return make_figure(data, layout, title, 420)


# (label, (x0, y0, x1, y1)) in image fractions
DETR_OBJECTS = (("dog", (0.08, 0.12, 0.45, 0.62)), ("ball", (0.55, 0.10, 0.70, 0.28)),
                ("person", (0.62, 0.30, 0.92, 0.95)))


def detr_queries_figure(n_queries: int = 10, title: str | None = None) -> go.Figure:
    """DETR's object queries: N learned query vectors each ask the encoded image "is there an object
    for me?"; after the decoder each gives a class and a box or ∅ (no object). Left, a scene with
    the boxes of the matched queries; right, the N query slots, matched ones coloured."""
    matched = {1: 0, 4: 1, 7: 2}  # query -> object, as the Hungarian matching might pair them
    data, shapes, notes = [], [], []
    for q, obj in matched.items():
        label, (x0, y0, x1, y1) = DETR_OBJECTS[obj]
        shapes.append({"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "xref": "x",
                       "yref": "y", "line": {"color": ORANGE, "width": 3}})
        notes.append({"x": x0, "y": y1, "xref": "x", "yref": "y", "text": f"q{q}: {label}",
                      "showarrow": False, "xanchor": "left", "yanchor": "bottom",
                      "font": {"size": 13, "color": ORANGE}})
    colours = [ORANGE if q in matched else MASKED_COLOUR for q in range(n_queries)]
    texts = [f"q{q} → {DETR_OBJECTS[matched[q]][0]}" if q in matched else f"q{q} → ∅"
             for q in range(n_queries)]
    data.append({"type": "scatter", "x": [0] * n_queries, "y": list(range(n_queries)),
                 "mode": "markers+text", "xaxis": "x2", "yaxis": "y2",
                 "marker": {"size": 18, "color": colours, "symbol": "square"}, "text": texts,
                 "textposition": "middle right", "showlegend": False,
                 "hovertemplate": "%{text}<extra></extra>"})
    data.append({"type": "scatter", "x": [0.5], "y": [0.5], "mode": "markers",
                 "marker": {"color": GREEN, "size": 1}, "showlegend": False, "hoverinfo": "skip"})
    layout = {"xaxis": {"domain": [0, 0.6], "range": [0, 1], "visible": False},
              "yaxis": {"range": [1, 0], "visible": False, "scaleanchor": "x"},
              "xaxis2": {"domain": [0.65, 1], "range": [-0.2, 2], "visible": False, "anchor": "y2"},
              "yaxis2": {"range": [n_queries - 0.5, -0.5], "visible": False, "anchor": "x2"},
              "shapes": [{"type": "rect", "x0": 0, "x1": 1, "y0": 0, "y1": 1, "xref": "x",
                          "yref": "y", "line": {"color": INK, "width": 1}, "fillcolor": "#f4f4f4",
                          "layer": "below"}] + shapes,
              "annotations": notes}
    title = title or f"{n_queries} object queries: {len(matched)} find an object, the rest ∅"
    return make_figure(data, layout, title, 420)
