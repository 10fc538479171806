"""plots/margins.py: the room a grid of square heatmaps' labels take, reserved before plotly.js
draws it."""

import numpy as np
import pytest

from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import attention_map, head_grid
from transformer_viz.plots.margins import reserve_margins, square_grid, text_width
from transformer_viz.plots.payload import browser_figure

LABELS = token_labels(["<s>", "▁Ein", "▁Mann", "▁fährt", "▁Fahrrad", "</s>"])


def test_text_width_reads_entities_and_tags_and_scales_with_size():
    # An escaped "</s>" is drawn as its four characters (a tag, <b>, is not drawn).
    assert text_width("&lt;/s&gt;", 10) == pytest.approx(sum(text_width(c, 10) for c in "</s>"))
    assert text_width("<b>head 0</b>", 10) == pytest.approx(text_width("head 0", 10))
    assert text_width("Mann", 20) == pytest.approx(2 * text_width("Mann", 10))
    # Arial's advance widths: "i" is 222/1000 em, "W" 944/1000 em.
    assert (text_width("i", 100) == pytest.approx(22.2)
            and text_width("W", 100) == pytest.approx(94.4))


def test_a_head_grid_gets_room_for_its_longest_labels():
    grid = head_grid(np.full((4, 6, 6), 1 / 6), LABELS, LABELS)
    spec = browser_figure(grid).to_dict()
    size = spec["layout"]["yaxis"]["tickfont"]["size"]
    widest = max(text_width(t, size) for t in LABELS)
    assert square_grid(spec["layout"])
    # y labels to the left, x labels turned by 90° below: the margins hold the widest label.
    assert spec["layout"]["margin"]["l"] >= widest + 10
    assert spec["layout"]["margin"]["b"] >= widest + 10
    assert spec["layout"]["margin"]["l"] <= widest * 1.1 + 20  # not far more than needed
    assert grid.layout.margin.l == 10  # the figure itself is unchanged


def test_longer_labels_get_more_room():
    short = browser_figure(head_grid(np.full((2, 3, 3), 1 / 3), ["a", "b", "c"],
                                     ["a", "b", "c"])).to_dict()
    long = browser_figure(head_grid(np.full((2, 3, 3), 1 / 3), ["a", "b", "Fahrradfahrer"],
                                    ["a", "b", "Fahrradfahrer"])).to_dict()
    assert long["layout"]["margin"]["l"] > short["layout"]["margin"]["l"] + 50


def test_other_figures_keep_their_margins():
    single = attention_map(np.eye(6), LABELS, LABELS)  # one square panel: plotly.js settles it
    spec = browser_figure(single).to_dict()
    assert not square_grid(spec["layout"])
    assert spec["layout"]["margin"] == single.layout.margin.to_plotly_json()


def test_numbers_plotly_picks_itself_leave_the_margins_alone():
    spec = {"layout": {"xaxis": {"automargin": True, "scaleanchor": "y", "constrain": "domain"},
                       "yaxis": {"automargin": True, "scaleanchor": "x", "constrain": "domain"},
                       "margin": {"l": 10, "b": 10}},
            "data": [{"type": "heatmap", "x": [0.5, 1.5], "y": ["a", "b"]}]}
    assert reserve_margins(spec)["layout"]["margin"] == {"l": 10, "b": 10}


def test_x_labels_at_an_angle_plotly_picks_leave_the_margins_alone():
    spec = browser_figure(head_grid(np.full((2, 6, 6), 1 / 6), LABELS, LABELS)).to_dict()
    spec["layout"]["margin"] = {"l": 10, "b": 10}
    for name, axis in spec["layout"].items():
        if name.startswith("xaxis"):
            # plotly.js would turn them only where they overlap, at the width drawn
            axis.pop("tickangle", None)
    assert reserve_margins(spec)["layout"]["margin"] == {"l": 10, "b": 10}
