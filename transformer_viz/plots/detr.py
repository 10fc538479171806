"""Figures for the toy DETR (models/detr/): the canvas with each query's box, a query's cross-attention or a feature
cell's self-attention laid over the canvas, the queries' class probabilities, and the Hungarian matching of
queries to objects with its cost matrix. Pure functions: arrays in, a plotly figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import GREEN, SEQUENTIAL, make_figure
from transformer_viz.plots.vit import image_layout, image_trace, overlay_traces, upsample

# One colour per query, the same in every figure of the page: Okabe and Ito's colours (their yellow,
# faint on white, and their black, which the digits are drawn in, left out) and two dark ones, eight
# for the shipped model's 8 queries, apart under every colour-vision deficiency
# (tests/unit/test_colour_vision.py: ΔE ≥ 16).
QUERY_COLOURS = ("#d55e00", "#0072b2", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#882255",
                 "#661100")


def query_colour(query: int) -> str:
    return QUERY_COLOURS[query % len(QUERY_COLOURS)]


def _luminance(colour: str) -> float:
    """WCAG's relative luminance of a #rrggbb colour."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def label_ink(background: str) -> str:
    """White or near-black text, whichever contrasts more with ``background`` (WCAG's ratio)."""
    light = _luminance(background)
    white = 1.05 / (light + 0.05)
    dark = (light + 0.05) / (_luminance("#222222") + 0.05)
    return "#ffffff" if white >= dark else "#222222"


def _pixels(box, size: int) -> tuple[float, float, float, float]:
    """(cx, cy, w, h), fractions of the side -> pixel corners (x0, y0, x1, y1) on the heatmap's cell grid."""
    cx, cy, w, h = (float(v) * size for v in box)
    return cx - w / 2 - 0.5, cy - h / 2 - 0.5, cx + w / 2 - 0.5, cy + h / 2 - 0.5


def _canvas_layout(size: int) -> dict:
    return {**image_layout(size, tick_step=4), "showlegend": False}


def box_shapes(boxes, size: int, colours: list[str], dash: str = "solid", width: int = 3) -> list[dict]:
    return [{"type": "rect", "x0": x0, "y0": y0, "x1": x1, "y1": y1, "line": {"color": c, "width": width, "dash": dash}}
            for (x0, y0, x1, y1), c in ((_pixels(b, size), c) for b, c in zip(boxes, colours))]


def box_labels(boxes, texts: list[str], size: int, colours: list[str]) -> list[dict]:
    """A label above each box's top-left corner (below it when the box touches the top)."""
    labels = []
    for box, text, colour in zip(boxes, texts, colours):
        x0, y0, _, _ = _pixels(box, size)
        labels.append({"x": x0, "y": y0, "text": text, "showarrow": False, "xanchor": "left",
                       "yanchor": "bottom" if y0 > 2 else "top", "font": {"color": label_ink(colour), "size": 12},
                       "bgcolor": colour, "borderpad": 1})
    return labels


def detections_figure(image, boxes, queries: list[int], texts: list[str], true_boxes=None,
                      title: str | None = None) -> go.Figure:
    """The canvas with the boxes of the given queries, each in its query's colour and labelled; ``true_boxes``,
    when given, dashed green underneath."""
    size = np.asarray(image).shape[0]
    colours = [query_colour(q) for q in queries]
    layout = _canvas_layout(size)
    truth = [] if true_boxes is None else box_shapes(true_boxes, size, [GREEN] * len(true_boxes), "dot", 2)
    layout["shapes"] = truth + box_shapes(boxes, size, colours)
    layout["annotations"] = box_labels(boxes, texts, size, colours)
    return make_figure([image_trace(image)], layout, title, 400)


def attention_on_canvas_figure(image, cell_weights, boxes=(), colours=(), title: str | None = None,
                               value_name: str = "weight", marker: tuple[int, int] | None = None) -> go.Figure:
    """The canvas in grey with one weight per feature-map cell (S,) spread over the cell's pixels, orange over
    grey; optional boxes, and a ``marker`` (row, column) outlining one feature-map cell."""
    weights = np.asarray(cell_weights, dtype=np.float64)
    size, grid = np.asarray(image).shape[0], int(round(weights.size ** 0.5))
    stride = size // grid
    layout = _canvas_layout(size)
    layout["shapes"] = box_shapes(boxes, size, list(colours), width=2)
    if marker is not None:
        row, col = marker
        layout["shapes"].append({"type": "rect", "x0": col * stride - 0.5, "x1": (col + 1) * stride - 0.5,
                                 "y0": row * stride - 0.5, "y1": (row + 1) * stride - 0.5,
                                 "line": {"color": "#3182bd", "width": 3}})
    return make_figure(overlay_traces(image, upsample(weights, stride), value_name), layout, title, 400)


def query_classes_figure(probs, class_names: list[str], title: str | None = None) -> go.Figure:
    """P(class) for every query (M, C+1), drawn as one column per query and one row per class (narrow enough
    for half a page), each query's most likely class's probability written in."""
    probs = np.asarray(probs, dtype=np.float64)
    columns = [f"q{q}" for q in range(probs.shape[0])]
    text = [[f"{p:.2f}" if p == column.max() else "" for p in column] for column in probs]
    trace = {"type": "heatmap", "z": probs.T, "x": columns, "y": list(class_names), "colorscale": SEQUENTIAL,
             "zmin": 0.0, "zmax": 1.0, "text": [list(row) for row in zip(*text)], "texttemplate": "%{text}",
             "name": "P", "colorbar": {"title": {"text": "P"}},
             "hovertemplate": "query %{x}<br>class %{y}<br>P = %{z:.3f}<extra></extra>"}
    layout = {"xaxis": {"type": "category", "title": {"text": "object query"}},
              "yaxis": {"type": "category", "autorange": "reversed", "title": {"text": "class (∅: no object)"}}}
    return make_figure([trace], layout, title, 130 + 26 * probs.shape[1])


def cost_matrix_figure(cost, pairs: list[tuple[int, int]], object_names: list[str],
                       title: str | None = None) -> go.Figure:
    """The matching cost (M queries × n objects), lower is better, with the Hungarian pairs outlined."""
    cost = np.asarray(cost, dtype=np.float64)
    rows = [f"query {q}" for q in range(cost.shape[0])]
    trace = {"type": "heatmap", "z": cost, "x": list(object_names), "y": rows, "colorscale": "Viridis_r",
             "text": [[f"{c:.2f}" for c in row] for row in cost], "texttemplate": "%{text}", "name": "cost",
             "colorbar": {"title": {"text": "cost"}},
             "hovertemplate": "%{y}<br>%{x}<br>cost %{z:.3f}<extra></extra>"}
    shapes = [{"type": "rect", "xref": "x", "yref": "y", "x0": j - 0.5, "x1": j + 0.5, "y0": q - 0.5, "y1": q + 0.5,
               "line": {"color": "#d62728", "width": 4}} for q, j in pairs]
    layout = {"xaxis": {"type": "category", "title": {"text": "object on the canvas"}},
              "yaxis": {"type": "category", "autorange": "reversed"}, "shapes": shapes}
    return make_figure([trace], layout, title, 120 + 30 * cost.shape[0])
