"""A figure in one sentence, with its key number, for a screen reader: what kind of chart it is,
what its title says, and its largest value and where it is. Pure: a figure in, a sentence out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


def _title(fig: go.Figure) -> str:
    text = fig.layout.title.text if fig.layout.title and fig.layout.title.text else ""
    return " ".join(text.replace("<br>", " ").split())


def _main_traces(fig: go.Figure) -> list:
    """The traces that carry values: not the grey overlays of masked cells."""
    return [t for t in fig.data if not (t.name or "").endswith("masked")]


def _number(value: float) -> str:
    return f"{value:.3g}"


def _heatmap(trace) -> str:
    z = np.asarray(trace.z, dtype=np.float64)
    if z.ndim != 2 or not np.isfinite(z).any():
        return "a heatmap"
    r, c = np.unravel_index(np.nanargmax(np.where(np.isfinite(z), z, np.nan)), z.shape)
    x = list(trace.x) if trace.x is not None else list(range(z.shape[1]))
    y = list(trace.y) if trace.y is not None else list(range(z.shape[0]))
    return (f"a heatmap of {z.shape[0]} rows by {z.shape[1]} columns; its largest value, "
            f"{_number(z[r, c])}, is at row {y[r]}, column {x[c]}")


def _bars(trace) -> str:
    horizontal = trace.orientation == "h"
    values = np.asarray(trace.x if horizontal else trace.y, dtype=np.float64)
    labels = list(trace.y if horizontal else trace.x) \
        if (trace.y if horizontal else trace.x) is not None else list(range(len(values)))
    if not len(values) or not np.isfinite(values).any():
        return "a bar chart"
    i = int(np.nanargmax(values))
    return f"a bar chart of {len(values)} bars; the highest, {_number(values[i])}, is {labels[i]}"


def _lines(traces) -> str:
    named = [t for t in traces if t.y is not None and len(t.y)]
    if not named:
        return "a chart"
    best = max(named, key=lambda t: np.nanmax(np.asarray(t.y, dtype=np.float64)))
    y = np.asarray(best.y, dtype=np.float64)
    i = int(np.nanargmax(y))
    x = list(best.x) if best.x is not None else list(range(len(y)))
    series = f"{len(named)} series" if len(named) > 1 else "one series"
    return (f"a line chart of {series}; the highest point, {_number(y[i])}, is "
            f"{best.name + ' ' if best.name else ''}at {x[i]}")


def describe(fig: go.Figure) -> str:
    """One sentence: the chart's kind, its title and its largest value with where it is."""
    traces = _main_traces(fig)
    kinds = {t.type for t in traces}
    if "heatmap" in kinds:
        body = _heatmap(next(t for t in traces if t.type == "heatmap"))
    elif kinds == {"bar"}:
        body = _bars(max(traces, key=lambda t: len(t.x if t.x is not None else [])))
    elif kinds and kinds <= {"scatter", "scattergl"} and any(t.y is not None for t in traces):
        body = _lines(traces)
    else:
        body = "a diagram"
    title = _title(fig)
    text = f"{title}: {body}." if title else f"{body[0].upper()}{body[1:]}."
    return text
