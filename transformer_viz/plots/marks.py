"""An answer drawn on a figure that already exists: a frame around the cells that hold it and the
answer above the figure's own title. Pure: a figure in, a new figure out (the one given is left as
it was, since the app shares built figures between sessions)."""

from __future__ import annotations

import plotly.graph_objects as go

from transformer_viz.plots.common import ORANGE

MARK_WIDTH = 3  # px: thicker than any grid line, so the frame reads at a glance


def _span(cells: tuple[int, int] | None, axis: str) -> dict:
    # A category axis places its n-th label at n: a cell spans n − 0.5 … n + 0.5. None frames the
    # whole
    # axis, in its domain's coordinates.
    if cells is None:
        return {f"{axis}ref": f"{axis} domain", f"{axis}0": 0, f"{axis}1": 1}
    first, last = cells
    return {f"{axis}ref": axis, f"{axis}0": first - 0.5, f"{axis}1": last + 0.5}


def mark_answer(fig: go.Figure, note: str, rows: tuple[int, int] | None = None,
                cols: tuple[int, int] | None = None) -> go.Figure:
    """A copy of ``fig`` with ``note`` (the answer, already escaped) as its title, the old title
    under it, and, when ``rows`` or ``cols`` is given, a frame around rows first … last and columns
    first … last of its first pair of axes (None: every row, or every column)."""
    out = go.Figure(fig)
    old = out.layout.title.text if out.layout.title and out.layout.title.text else ""
    title = f"{note}<br><sup>{old}</sup>" if old else note
    margin_top = (out.layout.margin.t or 50) + (25 if old else 0)
    out.update_layout(title={"text": title}, margin={"t": margin_top})
    if rows is not None or cols is not None:
        out.add_shape(type="rect", line={"color": ORANGE, "width": MARK_WIDTH},
                      fillcolor="rgba(0,0,0,0)",
                      **_span(cols, "x"), **_span(rows, "y"))
    return out
