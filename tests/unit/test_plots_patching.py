"""The figures of "Why this word?" (plots/patching.py): the shares drawn as given on one 0–1 scale,
the causal cone's outside grey, the outlined columns, and the bars in reading order."""

from __future__ import annotations

import numpy as np

from tests.support.figures import z_of
from transformer_viz.plots.patching import (CANNOT_REACH, contrast_figure, decoder_patch_figure,
                                            encoder_patch_figure, head_patch_figure,
                                            source_share_figure)

RNG = np.random.default_rng(0)


def test_the_encoder_grid_ends_in_all_positions_and_outlines_the_changed_token():
    shares, all_ = RNG.uniform(-0.2, 1.1, (3, 5)), np.ones(3)
    fig = encoder_patch_figure(shares, all_, list("abcde"), [2])
    (trace,) = fig.data
    np.testing.assert_array_equal(z_of(trace), np.column_stack([shares, all_]))
    assert list(trace.x)[-1] == "all positions" and (trace.zmin, trace.zmax) == (0, 1)
    (outline,) = fig.layout.shapes
    assert (outline.x0, outline.x1) == (1.5, 2.5)


def test_the_decoder_grid_greys_the_positions_after_t():
    shares = RNG.uniform(0, 1, (2, 6))
    fig = decoder_patch_figure(shares, list("abcdef"), 3)
    grey, colour = fig.data
    later = np.arange(6) > 3
    assert np.isnan(z_of(colour)[:, later]).all() and np.isnan(z_of(grey)[:, ~later]).all()
    np.testing.assert_array_equal(z_of(colour)[:, ~later], shares[:, ~later])
    assert CANNOT_REACH in grey.hovertemplate
    last = decoder_patch_figure(shares, list("abcdef"), 5)  # t = the last position: nothing greyed
    assert len(last.data) == 1


def test_the_heads_grid_is_one_panel_per_kind_on_one_scale():
    shares = RNG.uniform(0, 1, (3, 2, 4))
    fig = head_patch_figure(shares)
    assert len(fig.data) == 3 and {t.coloraxis for t in fig.data} == {"coloraxis"}
    for k, trace in enumerate(fig.data):
        np.testing.assert_array_equal(z_of(trace), shares[k])
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 1)


def test_the_contrast_bars_are_the_source_the_prefix_and_the_plain_attribution():
    source, target, plain = RNG.normal(size=4), RNG.normal(size=2), RNG.normal(size=4)
    fig = contrast_figure(source, list("abcd"), target, ["<s>", "x"], plain)
    bars = {(t.name, t.yaxis): t for t in fig.data}
    np.testing.assert_array_equal(bars[("why X, not Y", "y")].x, source)
    np.testing.assert_array_equal(bars[("why X, not Y", "y2")].x, target)
    np.testing.assert_array_equal(bars[("why X (plain)", "y")].x, plain)
    assert fig.layout.yaxis.autorange == "reversed"  # the first token on top
    assert len(contrast_figure(source, list("abcd"), target, ["<s>", "x"]).data) == 2


def test_the_source_and_prefix_shares_stack_to_1_and_the_flagged_tokens_are_hatched():
    share = np.array([0.9, 0.3, 0.55])
    fig = source_share_figure(["a", "b", "</s>"], share, share < 0.4, threshold=0.4, title="S")
    source, prefix = fig.data
    assert fig.layout.barmode == "stack" and list(source.x) == ["a", "b", "</s>"]
    np.testing.assert_allclose(np.asarray(source.y) + np.asarray(prefix.y), 1.0)
    np.testing.assert_allclose(source.y, share)
    assert list(source.marker.pattern.shape) == ["", "/", ""]
    assert fig.layout.shapes[0].y0 == 0.4
