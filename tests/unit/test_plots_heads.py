"""The new figures of "What does a head do?" (plots/heads.py): the map of head types (one cell per
head, its type as colour and text), the lens after each sublayer, and each layer's KL to the output
for the plain and the tuned lens."""

from __future__ import annotations

import numpy as np

from tests.support.figures import z_of
from transformer_viz.interpret.head_cards import TYPES
from transformer_viz.plots.describe import describe
from transformer_viz.plots.heads import (SUBLAYER_NAMES, TYPE_COLOURS, head_type_figure,
                                         layer_kl_figure, sublayer_lens_figure)


def test_the_type_map_has_one_cell_per_head_and_kind_coloured_by_type():
    rng = np.random.default_rng(0)
    K, N, h = 3, 2, 4
    types = rng.choice(TYPES, size=(K, N, h))
    fig = head_type_figure(types, TYPES, title="Head types")
    assert len(fig.data) == K and len(TYPE_COLOURS) >= len(TYPES)
    for k, trace in enumerate(fig.data):
        z = z_of(trace)
        assert z.shape == (N, h)
        assert [[TYPES[int(v)] for v in row] for row in z] == types[k].tolist()
        assert [list(row) for row in trace.text] == types[k].tolist()
        assert trace.customdata[1][3] == f"{('enc', 'dec', 'cross')[k]}.1.3"
    bar = fig.layout.coloraxis.colorbar
    assert list(bar.ticktext) == list(TYPES) and list(bar.tickvals) == list(range(len(TYPES)))
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (-0.5, len(TYPES) - 0.5)
    assert describe(fig).startswith("Head types: a heatmap of 2 rows by 4 columns")


def test_the_sublayer_lens_has_three_rows_per_layer_and_the_rank_as_text():
    N, T = 2, 5
    p = np.linspace(0, 1, N * 3 * T).reshape(N, 3, T)
    rank = np.arange(N * 3 * T).reshape(N, 3, T) + 1
    labels = [f"{t} tok" for t in range(T)]
    fig = sublayer_lens_figure(p, rank, labels)
    (trace,) = fig.data
    assert list(trace.y) == [f"layer {i}, {s}" for i in range(N) for s in SUBLAYER_NAMES]
    np.testing.assert_allclose(z_of(trace), p.reshape(N * 3, T))
    assert trace.text[4][2] == rank[1, 1, 2] and (trace.zmin, trace.zmax) == (0.0, 1.0)


def test_the_kl_bars_are_plain_then_tuned_per_layer():
    fig = layer_kl_figure([5.0, 3.0, 0.0], [2.0, 1.0, 0.0], title="KL")
    assert [t.name for t in fig.data] == ["plain logit lens", "tuned lens"]
    np.testing.assert_allclose(fig.data[1].y, [2.0, 1.0, 0.0])
    assert list(fig.data[0].x) == ["after layer 0", "after layer 1", "after layer 2"]
    assert len(layer_kl_figure([5.0, 0.0]).data) == 1
    assert describe(fig) == "KL: a bar chart of 3 bars; the highest, 5, is after layer 0."
