"""What a 390 px phone needs of the figures, each a defect the phone walk
(tests/browser/test_browser_legibility.py) found: no text under 10 px, no title or axis title
longer than a phone's chart, no two texts over each other."""

from __future__ import annotations

import numpy as np

from tests.support.figures import traces
from transformer_viz.plots.common import TEMPLATE, heatmap, min_width
from transformer_viz.plots.decoding import beam_tree_figure
from transformer_viz.plots.embeddings import thin_dimension_ticks
from transformer_viz.plots.lecture import vit_patches_figure
from transformer_viz.plots.positional import embedding_plus_pe_figure
from transformer_viz.plots.rnn import bucket_bleu_figure
from transformer_viz.plots.sampling import temperature_figure

PHONE_FLOOR = 10  # px


def test_bar_values_share_one_size_and_hide_below_the_phone_floor():
    """plotly shrinks a bar's value label to the bar: 3.9 to 8.5 px on a phone's bar charts."""
    assert TEMPLATE.layout.uniformtext.minsize == PHONE_FLOOR
    assert TEMPLATE.layout.uniformtext.mode == "hide"


def test_the_vit_patch_numbers_are_at_least_the_phone_floor():
    fig = vit_patches_figure()
    sizes = {note.font.size for note in fig.layout.annotations}
    assert len(fig.layout.annotations) == 65 and min(sizes) >= PHONE_FLOOR


def test_a_downward_beam_tree_asks_for_a_column_per_beam_as_wide_as_its_longest_token():
    text = [["▁The", "▁This", "▁A"], ["▁sleeping", "▁cat", "▁dog"]]
    parents = [[0, 0, 0], [0, 1, 2]]
    scores = [[-0.1, -1.0, -2.0], [-0.3, -1.2, -2.5]]
    finished = [[False] * 3, [False] * 3]
    down = beam_tree_figure(text, parents, scores, finished, best_beam=0, down=True)
    across = beam_tree_figure(text, parents, scores, finished, best_beam=0)
    # "␣sleeping": 9 characters, ~7.5 px each, beside a node, in each of 3 columns, plus the axis
    # and the colour bar: wider than a phone's 358 px column, so it scrolls with a cue
    assert min_width(down) == 3 * (int(7.5 * 9) + 30) + 160 > 358
    assert min_width(across) is None
    assert traces(down, "beams")[0].textposition == "middle right"


def test_bleu_by_length_has_its_legend_under_the_figure():
    """At the right, the legend left the lines a third of a phone's width and the length labels ran
    into each other."""
    fig = bucket_bleu_figure(["≤ 10", "11–15", "> 25"], {"RNN": [20.0, 15.0, 9.0],
                                                         "Transformer": [50.0, 40.0, 26.0]},
                             [229, 422, 46])
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0
    assert all(len(line) <= 32 for line in fig.layout.xaxis.title.text.split("<br>"))


def test_embedding_plus_pe_axis_titles_fit_a_third_of_a_phone():
    """A panel is about 150 px on a phone: "embedding E[id]·√d_model · dimension" ran into its
    neighbour's title."""
    parts = [np.zeros((3, 64)) for _ in range(3)]
    fig = embedding_plus_pe_figure(*parts, ["a", "b", "c"])
    for axis in (fig.layout.xaxis, fig.layout.xaxis2, fig.layout.xaxis3):
        assert max(len(line) for line in axis.title.text.split("<br>")) <= 14


def test_thinned_dimension_ticks_may_still_turn():
    """Eight upright three-digit ticks ran into each other on a phone's 140 px plot."""
    fig = thin_dimension_ticks(heatmap(np.zeros((2, 256))), 256)
    assert fig.layout.xaxis.dtick == 32 and fig.layout.xaxis.tickangle is None


def test_two_panel_bars_leave_a_third_of_the_panel_for_the_values():
    """The left panel's value labels ran into the right panel's token labels on a phone."""
    fig = temperature_figure(["a", "b", "c"], [0.7, 0.2, 0.1], [0.5, 0.3, 0.2], 1.5)
    upper = fig.layout.xaxis.range[1]
    # no tick past a probability of 1
    assert upper >= 1.5 * 0.7 and list(fig.layout.xaxis.tickvals) == [0, 0.5, 1]
    assert fig.layout.xaxis2.range[1] == upper
