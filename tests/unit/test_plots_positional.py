"""plots/positional.py: the PE matrix and its curves against the paper's formula, position
similarity, and the same words in another order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.figures import z_of
from transformer_viz.engine import traced_forward
from transformer_viz.models.transformer.model import sinusoidal_positional_encoding
from transformer_viz.plots import positional as pos


@pytest.mark.parametrize("base", [100.0, 10000.0])
def test_pe_curves_match_the_paper_formula(base):
    d_model, L = 16, 12
    pe = sinusoidal_positional_encoding(L, d_model, base).numpy()
    dims = [0, 1, 6, 15]
    fig = pos.pe_curves_figure(pe, dims, d_model, base)
    lines, markers = fig.data[0::2], fig.data[1::2]
    assert len(lines) == len(markers) == len(dims)
    for dim, line, marker in zip(dims, lines, markers):
        i = dim // 2
        by_hand = [(math.sin if dim % 2 == 0 else math.cos)(p / base ** (2 * i / d_model))
                   for p in range(L)]
        np.testing.assert_allclose(np.asarray(marker.y), by_hand, atol=1e-6)  # the model's matrix
        grid = np.asarray(line.x)
        assert grid[0] == 0 and grid[-1] == L - 1 and len(grid) > L
        curve = [(math.sin if dim % 2 == 0 else math.cos)(p / base ** (2 * i / d_model))
                 for p in grid]
        np.testing.assert_allclose(np.asarray(line.y), curve, atol=1e-12)


def test_pe_heatmap_is_positions_by_dimensions():
    pe = sinusoidal_positional_encoding(10, 8).numpy()
    fig = pos.pe_heatmap(pe)
    assert z_of(fig.data[-1]).shape == (10, 8)
    np.testing.assert_allclose(z_of(fig.data[-1]), pe)


def test_position_similarity_depends_only_on_distance():
    d_model = 32
    pe = sinusoidal_positional_encoding(20, d_model).numpy()
    dot = pos.position_similarity(pe, "dot")
    np.testing.assert_allclose(np.diag(dot), d_model / 2, rtol=1e-5)  # sin² + cos² = 1 per pair
    np.testing.assert_allclose(dot[:-3, :-3], dot[3:, 3:], atol=1e-4)  # constant along diagonals
    cos = pos.position_similarity(pe, "cosine")
    np.testing.assert_allclose(cos, dot / (d_model / 2), atol=1e-5)
    assert dot[0, 1] > dot[0, 10]  # neighbours are more alike than distant positions
    with pytest.raises(ValueError):
        pos.position_similarity(pe, "euclid")


def test_wavelengths_span_2pi_to_2pi_base():
    w = pos.wavelengths(8, 10000.0)
    np.testing.assert_allclose(w, [2 * math.pi * 10000 ** (k / 8) for k in (0, 2, 4, 6)])
    assert len(pos.wavelength_figure(8, [100.0, 10000.0], 100.0).data) == 2


def test_embedding_plus_pe_figure_shows_the_traced_sum(sentence_trace):
    _, _, trace = sentence_trace
    e, p, x = (trace["src.embedding"][0].numpy(), trace["src.positional"].numpy(),
               trace["src.input"][0].numpy())
    fig = pos.embedding_plus_pe_figure(e, p, x, ["<b>", "b", "c", "b", "d", "</s>"])
    assert [t.xaxis for t in fig.data] == ["x", "x2", "x3"]
    np.testing.assert_allclose(z_of(fig.data[2]), z_of(fig.data[0]) + z_of(fig.data[1]), atol=1e-5)
    assert list(fig.data[0].y)[0] == "0 &lt;b&gt;"
    norms = pos.norms_figure(e, p, x, ["a"] * 6)
    np.testing.assert_allclose(np.asarray(norms.data[1].y), math.sqrt(e.shape[1] / 2), rtol=1e-5)


def test_reversed_order_same_tokens_different_inputs(tiny_model):
    words = [5, 9, 14, 20]
    a = traced_forward(tiny_model, words + [2], [1])
    b = traced_forward(tiny_model, words[::-1] + [2], [1])
    tokens_a, tokens_b = ["w5", "w9", "w14", "w20", "</s>"], ["w20", "w14", "w9", "w5", "</s>"]
    assert pos.reversed_words("w5 w9 w14 w20") == "w20 w14 w9 w5"
    matches = pos.match_positions(tokens_a, tokens_b)
    assert matches == [3, 2, 1, 0, 4]
    d_emb = pos.order_difference(a["src.embedding"][0], b["src.embedding"][0], matches)
    d_in = pos.order_difference(a["src.input"][0], b["src.input"][0], matches)
    np.testing.assert_allclose(d_emb, 0.0, atol=1e-6)  # same token, same embedding row
    norms = np.linalg.norm(d_in, axis=1)
    assert np.all(norms[:4] > 0.1) and norms[4] < 1e-6  # only </s> kept its position
    pe = sinusoidal_positional_encoding(5, tiny_model.cfg.d_model).numpy()
    np.testing.assert_allclose(d_in[0], pe[0] - pe[3], atol=1e-5)
    fig = pos.order_difference_heatmap(d_in, ["<i>"] + tokens_a[1:], matches)
    assert list(fig.data[-1].y)[0] == "0 &lt;i&gt; (→ 3)"
    table = pos.order_table(tokens_a, matches, d_emb, d_in)
    assert (table["position (original)"] == [0, 1, 2, 3, 4]
            and table["position (reversed)"] == matches)
    np.testing.assert_allclose(table["‖Δ input‖"], norms)
    worst = int(np.argmax(norms))  # the moved token whose input changed most: its PE difference
    formula = pos.largest_move_latex(table)
    assert rf"moved from position }} {worst} \text{{ to }} {matches[worst]}:" in formula
    assert (rf"\lVert PE_{{{worst}}} - PE_{{{matches[worst]}}} \rVert = {norms[worst]:.3f}"
            in formula)


def test_largest_move_needs_a_moved_token():
    unmoved = pos.order_table(["a", "b"], [0, None], np.zeros((2, 3)),
                              np.array([[0.0] * 3, [np.nan] * 3]))
    assert unmoved["position (reversed)"] == [0, None] and np.isnan(unmoved["‖Δ input‖"][1])
    assert pos.largest_move_latex(unmoved) is None


def test_match_positions_handles_repeats_and_missing():
    assert pos.match_positions(["a", "b", "a", "c"], ["a", "a", "b"]) == [0, 2, 1, None]
    d = pos.order_difference(np.ones((2, 3)), np.zeros((1, 3)), [0, None])
    assert np.all(d[0] == 1) and np.all(np.isnan(d[1]))


def test_pe_halves_are_the_sin_and_cos_columns():
    from transformer_viz.plots.positional import pe_halves_heatmap

    pos, i = np.arange(6)[:, None], np.arange(4)[None, :]
    angle = pos / 10000.0 ** (2 * i / 8)
    pe = np.empty((6, 8))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    fig = pe_halves_heatmap(pe)
    sin, cos = fig.data
    np.testing.assert_allclose(np.asarray(sin.z, dtype=float), np.sin(angle))
    np.testing.assert_allclose(np.asarray(cos.z, dtype=float), np.cos(angle))
    assert ((cos.xaxis, cos.yaxis) == ("x2", "y2")
            and fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0])
