"""The decoder-only page's figures (plots/sampling.py): the numbers drawn are the numbers given."""

from __future__ import annotations

import numpy as np

from tests.support.figures import z_of
from transformer_viz.plots.common import BLUE, FAINT, ORANGE
from transformer_viz.plots.sampling import (families_figure, families_masks, kept_set_figure,
                                            temperature_figure)
from transformer_viz.generation.sampling import next_token_distribution


def test_temperature_figure_draws_both_distributions_side_by_side():
    logits = np.array([3.0, 1.0, 0.0, -1.0])
    step = next_token_distribution(logits, temperature=2.0)
    fig = temperature_figure(["a", "b", "c", "<d>"], step.model, step.tempered, 2.0)
    before, after = fig.data
    np.testing.assert_allclose(before.x, step.model)
    np.testing.assert_allclose(after.x, step.tempered)
    assert before.xaxis == "x" and after.xaxis == "x2"  # two panels
    assert list(before.y) == ["1. a", "2. b", "3. c", "4. &lt;d&gt;"]  # ranked and escaped
    assert fig.layout.annotations[1].text == "T = 2"


def test_kept_set_figure_greys_the_cut_tokens_and_marks_the_chosen_one():
    step = next_token_distribution(np.array([2.0, 1.5, 1.0, 0.0, -1.0]), top_k=3)
    fig = kept_set_figure(list("abcde"), step.tempered, step.kept, step.final, chosen=1)
    assert list(fig.data[0].marker.color) == [BLUE, ORANGE, BLUE, FAINT, FAINT]
    np.testing.assert_allclose(fig.data[1].x, step.final)
    assert np.isclose(sum(fig.data[1].x), 1.0) and fig.data[1].x[3] == 0


def test_families_figure_draws_the_four_masks():
    masks = families_masks(3, 4, 5)
    assert masks["decoder masked self (T × T)"].sum() == 10  # 1 + 2 + 3 + 4
    assert masks["cross (T × S)"].shape == (4, 3)
    fig = families_figure(["x1", "x2", "x3"], ["y1", "y2", "y3", "y4"], list("abcde"))
    colour = [t for t in fig.data if not t.name.endswith("masked")]
    greys = [t for t in fig.data if t.name.endswith("masked")]
    assert len(colour) == 4 and len(greys) == 2  # only the two causal masks hide anything
    causal = z_of(greys[-1])  # the decoder-only panel: grey above the diagonal
    assert np.array_equal(~np.isnan(causal), np.triu(np.ones((5, 5), dtype=bool), 1))


def test_families_figure_labels_x_only_on_the_bottom_row():
    """The top row's x labels, turned, ran into the bottom row's panel titles; its keys are its
    rows' tokens. Every label at least 10 px, a phone's floor."""
    fig = families_figure(["a", "b"], ["c", "d", "e"], ["a", "b", "c"])
    shown = [fig.layout[f"xaxis{k or ''}"].showticklabels for k in (0, 2, 3, 4)]
    assert shown == [False, False, True, True]
    axes = [*fig.select_xaxes(), *fig.select_yaxes()]
    assert all(axis.tickfont.size >= 10 for axis in axes)


def test_the_families_panels_keep_their_titles_and_labels_apart_on_a_projector():
    """At 1280 px the titles leaned into each other (plotly's "auto" anchor), the right column's
    token labels ran into the left panels' titles and squares shrank the panels to strips."""
    fig = families_figure(["x1", "x2"], ["y1", "y2"], list("abcd"))
    titles = [a for a in fig.layout.annotations if "<br>" in (a.text or "")]
    assert len(titles) == 4 and {a.xanchor for a in titles} == {"center"}
    assert max(len(line) for a in titles for line in a.text.split("<br>")) <= 14
    assert [fig.layout[f"yaxis{k}"].side for k in ("", "2", "3", "4")] == ["left", "right"] * 2
    assert not any(fig.layout[f"yaxis{k}"].scaleanchor for k in ("", "2", "3", "4"))
