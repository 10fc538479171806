"""What each piece of transformer_viz/fenced/ saves against its public equivalent, in one process:

    python bench/fenced_gain.py [--figures 30] [--rounds 3]

Prints, per round, the milliseconds a figure takes to get the shared template assigned with plotly's
validation (public) and without it (fenced/plotly_private.py), on a 13 × 13 attention-like heatmap;
and the page's budget this is measured against (5 % of 0.09 CPU-s, the median server CPU of a page
for a new sentence).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import plotly.graph_objects as go

from transformer_viz.fenced.plotly_private import assign_unvalidated
from transformer_viz.plots.common import TEMPLATE


def heatmap() -> go.Figure:
    labels = [f"token {i}" for i in range(13)]
    return go.Figure(go.Heatmap(z=np.random.default_rng(0).random((13, 13)), x=labels, y=labels))


def per_figure_ms(assign, n: int) -> float:
    figures = [heatmap() for _ in range(n)]
    start = time.perf_counter()
    for fig in figures:
        assign(fig)
    return (time.perf_counter() - start) / n * 1000


def validated(fig: go.Figure) -> None:
    fig.layout.template = TEMPLATE


def unvalidated(fig: go.Figure) -> None:
    assign_unvalidated(fig.layout, "template", TEMPLATE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("budget: 5 % of 90 ms = 4.5 ms of server CPU a page")
    for r in range(args.rounds):
        a, b = per_figure_ms(validated, args.figures), per_figure_ms(unvalidated, args.figures)
        print(f"round {r}: template validated {a:.2f} ms, unvalidated {b:.2f} ms a figure "
              f"(saves {a - b:.2f} ms, {a / b:.0f}x)")


if __name__ == "__main__":
    main()
