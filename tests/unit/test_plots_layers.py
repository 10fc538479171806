"""plots/layers.py: every head at once, the masked scores, Add & Norm statistics, the feed-forward's
zeros."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from tests.support.figures import traces, z_of
from transformer_viz.plots.layers import (attention_map, head_grid, masked_attention_figure,
                                          position_stats, relu_zero_fraction, zero_fraction_figure)


def reference_softmax(z: np.ndarray) -> np.ndarray:
    return torch.softmax(torch.as_tensor(z, dtype=torch.float64), -1).numpy()


def test_head_grid_has_one_heatmap_per_head_with_the_right_shape():
    rng = np.random.default_rng(0)
    h, Lq, Lk = 6, 3, 5
    weights = reference_softmax(rng.normal(size=(h, Lq, Lk)))
    xs, ys = [f"{k} s" for k in range(Lk)], [f"{q} t" for q in range(Lq)]
    fig = head_grid(weights, xs, ys, selected=2)
    heads = [t for t in fig.data if t.type == "heatmap"]
    # no grey traces: nothing is masked
    assert [t.name for t in heads] == [f"head {j}" for j in range(h)]
    for j, trace in enumerate(heads):
        assert np.asarray(trace.z).shape == (Lq, Lk)
        np.testing.assert_allclose(np.asarray(trace.z, dtype=float), weights[j])
        assert list(trace.x) == xs and list(trace.y) == ys
    # every head on its own axes, and the selected one is marked in its title
    assert len({(t.xaxis, t.yaxis) for t in heads}) == h
    titles = [a.text for a in fig.layout.annotations]
    assert "◀" in titles[2] and sum("◀" in t for t in titles) == 1
    # token labels on the outer edges: keys under the lowest panel of each column, queries left of
    # each row; square cells (y scaled to x)
    shown_x = [j for j in range(h) if fig.layout[f"xaxis{j + 1 if j else ''}"].showticklabels]
    shown_y = [j for j in range(h) if fig.layout[f"yaxis{j + 1 if j else ''}"].showticklabels]
    assert shown_x == [2, 3, 4, 5] and shown_y == [0, 4]  # 6 heads in 4 columns
    for j in range(h):
        ax = j + 1 if j else ""
        assert (fig.layout[f"yaxis{ax}"].scaleanchor == f"x{ax}"
                and fig.layout[f"yaxis{ax}"].scaleratio == 1)


def test_masked_cells_are_grey_not_coloured():
    rng = np.random.default_rng(1)
    T = 5
    scores = rng.normal(size=(T, T))
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    masked = np.where(future, -np.inf, scores)
    fig = masked_attention_figure(scores, masked, reference_softmax(masked),
                                  [str(t) for t in range(T)], [str(t) for t in range(T)])
    colour = traces(fig, "masked scores")[0]
    grey = traces(fig, "masked scores masked")[0]
    z = np.asarray(colour.z, dtype=float)
    assert np.array_equal(np.isnan(z), future)  # no colour at all where the mask put −∞
    np.testing.assert_allclose(z[~future], scores[~future])
    assert np.array_equal(~np.isnan(np.asarray(grey.z, dtype=float)), future)
    # one flat grey, outside any colour scale
    assert grey.colorscale[0][1] == grey.colorscale[-1][1]
    # the unmasked score panel has no grey layer; the weights panel greys exactly the same cells, in
    # the same grey, and never draws them as the colour scale's 0
    assert not traces(fig, "scores masked")
    weights_grey = traces(fig, "weights masked")[0]
    assert np.array_equal(~np.isnan(np.asarray(weights_grey.z, dtype=float)), future)
    assert weights_grey.colorscale == grey.colorscale
    assert "weight exactly 0" in weights_grey.hovertemplate
    weights = np.asarray(traces(fig, "weights")[0].z, dtype=float)
    assert np.array_equal(np.isnan(weights), future)
    np.testing.assert_allclose(weights[~future], reference_softmax(masked)[~future])
    # one colour bar per scale, both right of the last panel; the title centred
    right = fig.layout.xaxis3.domain[1]
    assert fig.layout.coloraxis.colorbar.x > right and fig.layout.coloraxis2.colorbar.x > right
    # one above the other, apart: side by side their titles ran into each other at 1280 px
    bars = fig.layout.coloraxis.colorbar, fig.layout.coloraxis2.colorbar
    assert bars[0].x == bars[1].x and bars[0].yanchor == "top" and bars[1].yanchor == "bottom"
    assert bars[1].y + bars[1].len < bars[0].y - bars[0].len
    assert fig.layout.title.x == 0.5 or fig.layout.title.text is None

    # a lone weights map greys the cells it is told are masked, in the same grey
    lone = attention_map(reference_softmax(masked), list("abcde"), list("abcde"), masked=future)
    assert np.array_equal(~np.isnan(z_of(traces(lone, "masked")[0])), future)
    assert traces(lone, "masked")[0].colorscale == grey.colorscale
    # square cells
    assert lone.layout.yaxis.scaleanchor == "x" and lone.layout.yaxis.scaleratio == 1

    grid = head_grid(np.stack([masked, masked]), list("abcde"), list("abcde"),
                     colorscale="RdBu_r", zmin=None, zmax=None)
    assert len(traces(grid, "head 1 masked")) == 1
    assert np.array_equal(np.isnan(np.asarray(traces(grid, "head 1")[0].z, dtype=float)), future)


def test_attention_map_keeps_values_and_labels():
    values = np.array([[0.25, 0.75], [1.0, 0.0]])
    fig = attention_map(values, ["0 a", "1 b"], ["0 x", "1 y"])
    np.testing.assert_array_equal(np.asarray(fig.data[0].z, dtype=float), values)
    assert list(fig.data[0].x) == ["0 a", "1 b"]


def test_relu_zero_fraction_on_a_known_array():
    hidden = np.array([[0.0, 1.0, 0.0, 2.0],
                       [0.0, 0.0, 0.0, 0.0],
                       [3.0, 4.0, 5.0, 6.0]])
    per_position, overall = relu_zero_fraction(hidden)
    np.testing.assert_array_equal(per_position, [0.5, 1.0, 0.0])
    assert overall == 0.5
    fig = zero_fraction_figure(per_position, ["0 a", "1 b", "2 c"], overall, d_ff=4)
    assert list(fig.data[0].customdata) == [2, 4, 0]  # the hover's "n of d_ff units"
    assert fig.layout.shapes[0].y0 == 0.5  # the overall line


def test_position_stats_is_layernorms_biased_variance():
    x = torch.randn(4, 16, dtype=torch.float64)
    mean, var = position_stats(x.numpy())
    np.testing.assert_allclose(mean, x.mean(-1).numpy())
    np.testing.assert_allclose(var, x.var(-1, unbiased=False).numpy())
    normed = F.layer_norm(x, (16,), eps=0.0).numpy()
    mean, var = position_stats(normed)
    np.testing.assert_allclose(mean, 0, atol=1e-12)
    np.testing.assert_allclose(var, 1, atol=1e-9)
