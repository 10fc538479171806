"""Reading plotly figures in tests: a Figure from a plot function, or its JSON as a page sent it."""

from __future__ import annotations

import base64

import numpy as np


def array(value) -> np.ndarray:
    """A plotly JSON array as floats: a list (null -> NaN), or {dtype, bdata (base64), shape} for
    numpy data."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return data.reshape([int(n)
                             for n in str(value.get("shape", len(data))).split(",")]).astype(float)
    return np.array(value, dtype=float)


def z_of(trace) -> np.ndarray:
    """A heatmap trace's cells as floats (NaN where it draws nothing): a trace of a Figure or its
    JSON dict."""
    return array(trace["z"]) if isinstance(trace, dict) else np.asarray(trace.z, dtype=float)


def traces(figure, name: str) -> list:
    """The traces called ``name`` of a Figure or of its JSON dict."""
    if isinstance(figure, dict):
        return [t for t in figure["data"] if t.get("name") == name]
    return [t for t in figure.data if t.name == name]


def diagram_blocks(figure) -> list[dict]:
    """The labelled boxes of a block diagram (plots/blocks.py): each rectangle named "block" with
    its fill and the text drawn at its centre (as lines), in drawing order."""
    points = [(x, y, text, colour) for trace in figure.data if trace.mode == "text"
              for x, y, text, colour in zip(trace.x, trace.y, trace.text,
                                            _per_point(trace.textfont.color, len(trace.x)))]
    blocks = []
    for shape in figure.layout.shapes:
        if shape.name != "block":
            continue
        inside = [p for p in points if shape.x0 <= p[0] <= shape.x1
                  and shape.y0 <= p[1] <= shape.y1]
        assert len(inside) == 1, f"a box holds {len(inside)} labels"
        x, y, text, colour = inside[0]
        blocks.append({"x0": shape.x0, "x1": shape.x1, "y0": shape.y0, "y1": shape.y1,
                       "fill": shape.fillcolor, "lines": text.split("<br>"), "text_colour": colour,
                       "cx": x, "cy": y})
    assert len(blocks) == len(points), "a label outside every box"
    return blocks


def _per_point(value, n: int) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value] * n


def assert_readable_diagram(figure) -> list[dict]:
    """What a block diagram must be to be read from the back of a lecture hall, computed from the
    figure: text of at least 14 px, every label dark enough on its fill (WCAG AA, contrast ≥ 4.5)
    and inside its box at the width of the main column at 1280 px, an arrow into every box that has
    one under it in its column, and a residual path into every Add & Norm. Returns the blocks
    (:func:`diagram_blocks`)."""
    from transformer_viz.plots.blocks import DESIGN_WIDTH, Box, contrast_ratio, text_fits

    assert all(t.textfont.size >= 14 for t in figure.data if t.mode == "text")
    assert figure.layout.title.font.size >= 14
    labels = [a for a in figure.layout.annotations if a.text]
    assert labels and all(a.font.size >= 14 for a in labels)
    assert all(contrast_ratio(a.font.color, a.bgcolor or "#ffffff") >= 4.5 for a in labels)
    blocks = diagram_blocks(figure)
    arrows = [a for a in figure.layout.annotations if a.showarrow]
    for b in blocks:
        assert contrast_ratio(b["text_colour"], b["fill"]) >= 4.5, b["lines"]
        assert text_fits(Box(b["x0"], b["y0"], b["x1"], b["y1"], b["fill"], b["lines"]),
                         DESIGN_WIDTH), b["lines"]
        below = [c for c in blocks if c["y1"] <= b["y0"] and c["x0"] <= b["cx"] <= c["x1"]]
        if below:  # the data comes in from under the box, at the middle of its bottom edge
            assert any(a.name == "flow" and a.x == b["cx"] and a.y == b["y0"]
                       for a in arrows), b["lines"]
    norms = [b for b in blocks if b["lines"][0].startswith("Add &amp; Norm")]
    residuals = [s for s in figure.layout.shapes if s.name == "residual"]
    assert norms and len(residuals) == len(norms)
    for b in norms:  # a residual arrow ends on the box's side, at half its height
        assert any(a.name == "residual" and a.y == b["cy"] and a.x in (b["x0"], b["x1"])
                   for a in arrows), b["lines"]
    return blocks
