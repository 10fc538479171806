"""Figures for the Vision Transformer (models/vit/): the image and its patch grid, the patch embeddings, the
[CLS] token's attention to the patches overlaid on the image, attention rollout, the class probabilities.
Pure functions: arrays in, a plotly figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import BLUE, DIVERGING, GREEN, ORANGE, make_figure

GREYS = [[0.0, "#ffffff"], [1.0, "#000000"]]  # ink on paper: 0 white, 1 black
# The attention overlay: transparent at 0, a strong orange at the most-attended patch.
OVERLAY = [[0.0, "rgba(230, 85, 13, 0.0)"], [1.0, "rgba(230, 85, 13, 0.85)"]]


def attention_rollout(weights) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020): weights (N, h, T, T), one layer per row, first layer first
    -> (T, T), how much each token at the top draws on each input token through every layer.

    Per layer: the heads' mean Ā, plus the identity for the residual connection, rows renormalised to sum
    to 1: Â = (Ā + I) / rowsum. Then the product through the layers, the last one on the left:
    R = Â_N · … · Â_1.
    """
    weights = np.asarray(weights, dtype=np.float64)
    T = weights.shape[-1]
    rollout = np.eye(T)
    for layer in weights:
        mixed = layer.mean(axis=0) + np.eye(T)  # (T, T)
        mixed = mixed / mixed.sum(axis=-1, keepdims=True)
        rollout = mixed @ rollout
    return rollout


def upsample(patch_values, patch_size: int) -> np.ndarray:
    """One value per patch (P,), patches row by row on a square grid -> one per pixel (H, W)."""
    values = np.asarray(patch_values, dtype=np.float64)
    grid = int(round(values.size ** 0.5))
    return np.kron(values.reshape(grid, grid), np.ones((patch_size, patch_size)))  # (grid·p, grid·p)


def image_trace(image) -> dict:
    """A grey image (H, W) in [0, 1] as a heatmap, ink on paper; the hover gives each pixel's value."""
    image = np.asarray(image, dtype=np.float64)
    return {"type": "heatmap", "z": image, "colorscale": GREYS, "zmin": 0.0, "zmax": 1.0, "showscale": False,
            "name": "pixels", "hovertemplate": "row %{y}, column %{x}<br>pixel %{z:.2f}<extra></extra>"}


def image_layout(size: int, tick_step: int = 1) -> dict:
    """Square pixel axes for a size × size image, row 0 at the top, a tick every ``tick_step`` pixels."""
    axis = {"range": [-0.5, size - 0.5], "showgrid": False, "zeroline": False,
            "tickvals": list(range(0, size, tick_step)), "constrain": "domain"}
    return {"xaxis": {**axis, "title": {"text": "pixel column"}},
            "yaxis": {**axis, "range": [size - 0.5, -0.5], "scaleanchor": "x", "title": {"text": "pixel row"}}}


def _grid_shapes(size: int, patch_size: int, colour: str = BLUE) -> list[dict]:
    lines = [k * patch_size - 0.5 for k in range(1, size // patch_size)]
    return ([{"type": "line", "x0": v, "x1": v, "y0": -0.5, "y1": size - 0.5, "line": {"color": colour, "width": 2}}
             for v in lines]
            + [{"type": "line", "y0": v, "y1": v, "x0": -0.5, "x1": size - 0.5, "line": {"color": colour, "width": 2}}
               for v in lines])


def patch_grid_figure(image, patch_size: int, occluded: tuple[int, ...] = (), title: str | None = None) -> go.Figure:
    """The image with its patch grid; each patch numbered in token order (1 … P, after [CLS] at 0); the
    occluded patches outlined in orange."""
    image = np.asarray(image, dtype=np.float64)
    size, grid = image.shape[0], image.shape[0] // patch_size
    layout = image_layout(size)
    layout["shapes"] = _grid_shapes(size, patch_size) + [
        {"type": "rect", "x0": (i % grid) * patch_size - 0.5, "x1": (i % grid + 1) * patch_size - 0.5,
         "y0": (i // grid) * patch_size - 0.5, "y1": (i // grid + 1) * patch_size - 0.5,
         "line": {"color": ORANGE, "width": 3}} for i in occluded]
    layout["annotations"] = [{"x": (i % grid) * patch_size - 0.4, "y": (i // grid) * patch_size - 0.4,
                              "text": str(i + 1), "showarrow": False, "xanchor": "left", "yanchor": "top",
                              "font": {"color": BLUE, "size": 11}, "bgcolor": "rgba(255,255,255,0.7)"}
                             for i in range(grid * grid)]
    return make_figure([image_trace(image)], layout, title, 380)


def patch_embeddings_figure(values, row_labels: list[str], title: str | None = None, pixels: bool = False) -> go.Figure:
    """Token vectors (rows × d_model) on a diverging scale centred on 0: one row per patch (or [CLS]);
    ``pixels``: the flattened patches themselves (rows × p·p), in the image's greys from 0 to 1."""
    values = np.asarray(values, dtype=np.float64)
    limit = float(np.abs(values).max()) or 1.0
    colour = {"colorscale": GREYS, "zmin": 0.0, "zmax": 1.0} if pixels else \
        {"colorscale": DIVERGING, "zmin": -limit, "zmax": limit}
    trace = {"type": "heatmap", "z": values, "x": list(range(values.shape[1])), "y": list(row_labels), **colour,
             "name": "value", "hovertemplate": "%{y}<br>" + ("pixel" if pixels else "dimension")
                                               + " %{x}<br>value %{z:.4g}<extra></extra>"}
    x_title = "pixel of the patch (row by row)" if pixels else "dimension of d_model"
    layout = {"xaxis": {"title": {"text": x_title}, "tickvals": list(range(values.shape[1])) if pixels else None},
              "yaxis": {"type": "category", "autorange": "reversed", "title": {"text": "token"}}}
    return make_figure([trace], layout, title, max(260, 110 + 18 * values.shape[0]))


def overlay_traces(image, pixel_values, value_name: str) -> list[dict]:
    """The image in grey (no hover of its own) and one value per pixel (H, W) laid over it, semi-transparent
    (0: clear, the largest value: strong orange); the hover shows the value and the pixel under it."""
    image = np.asarray(image, dtype=np.float64)
    values = np.asarray(pixel_values, dtype=np.float64)
    overlay = {"type": "heatmap", "z": values, "colorscale": OVERLAY, "zmin": 0.0, "zmax": float(values.max()) or 1.0,
               "name": value_name, "customdata": image, "colorbar": {"title": {"text": value_name}},
               "hovertemplate": f"row %{{y}}, column %{{x}}<br>{value_name} %{{z:.3f}}<br>"
                                "pixel %{customdata:.2f}<extra></extra>"}
    underneath = {**image_trace(image), "hoverinfo": "skip"}
    underneath.pop("hovertemplate")
    return [underneath, overlay]


def attention_overlay_figure(image, patch_weights, patch_size: int, title: str | None = None,
                             value_name: str = "weight") -> go.Figure:
    """The digit in grey with one weight per patch (P,) upsampled to its pixels and laid over it
    (:func:`overlay_traces`); the patch grid drawn on top."""
    size = np.asarray(image).shape[0]
    layout = image_layout(size)
    layout["shapes"] = _grid_shapes(size, patch_size, "rgba(49, 130, 189, 0.5)")
    return make_figure(overlay_traces(image, upsample(patch_weights, patch_size), value_name), layout, title, 380)


def class_probs_figure(probs, true_label: int | None = None, title: str | None = None) -> go.Figure:
    """P(class) for the ten digits; the predicted class in orange, the true one (when given) outlined green."""
    probs = np.asarray(probs, dtype=np.float64)
    classes = [str(c) for c in range(probs.size)]
    best = int(probs.argmax())
    colours = [ORANGE if c == best else BLUE for c in range(probs.size)]
    outline = [GREEN if c == true_label else "rgba(0,0,0,0)" for c in range(probs.size)]
    data = [{"type": "bar", "x": classes, "y": probs, "marker": {"color": colours, "line": {"color": outline,
                                                                                          "width": 3}},
             "text": [f"{p:.2f}" for p in probs], "textposition": "outside", "cliponaxis": False, "name": "P",
             "hovertemplate": "digit %{x}<br>P = %{y:.4f}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "title": {"text": "digit"}},
              "yaxis": {"range": [0, 1.12], "title": {"text": "probability"}}}
    return make_figure(data, layout, title, 300)
