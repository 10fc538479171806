"""A figure to draw, as data: the plot function, its arguments, and the figure's data for a CSV."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import plotly.graph_objects as go


@dataclass(frozen=True)
class FigureSpec:
    """A figure to draw: its plot function, the function's arguments, and the figure's data for a
    CSV (anything pandas.DataFrame takes, or a DataFrame). The call is kept apart from the figure so
    that a client may cache it (the app's widgets.cached_figure) or restyle it (the Lecture's
    projector style)."""
    plot: Callable[..., go.Figure]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    data: object = field(default_factory=dict)

    def figure(self) -> go.Figure:
        """The figure: plot(*args, **kwargs)."""
        return self.plot(*self.args, **self.kwargs)
