"""The DETR page's figures (plots/detr.py): boxes land on the right pixels, attention is spread over
the right cells, and every query keeps its colour."""

from __future__ import annotations

import numpy as np

from tests.support.figures import z_of
from transformer_viz.plots.detr import (attention_on_canvas_figure, cost_matrix_figure,
                                        detections_figure, query_classes_figure, query_colour)


def test_a_box_covers_exactly_its_pixels():
    image = np.zeros((32, 32))
    fig = detections_figure(image, [np.array([0.5, 0.25, 0.25, 0.375])], [3], ["q3: 7 0.90"])
    (rect,) = fig.layout.shapes
    # a box of 8 × 12 pixels centred on pixel column 16, row 8: columns 12 … 19, rows 2 … 13 (cell
    # edges at ±0.5)
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (11.5, 19.5, 1.5, 13.5)
    assert rect.line.color == query_colour(3) == fig.layout.annotations[0].bgcolor
    assert fig.layout.annotations[0].text == "q3: 7 0.90"
    truth = detections_figure(image, [], [], [],
                              true_boxes=[np.array([0.5, 0.5, 0.25, 0.25])]).layout.shapes
    assert truth[0].line.dash == "dot"


def test_cell_weights_are_spread_over_their_4x4_pixels_and_the_asking_cell_is_outlined():
    weights = np.zeros(64)
    weights[8 * 2 + 5] = 1.0  # cell (2, 5)
    fig = attention_on_canvas_figure(np.zeros((32, 32)), weights, marker=(2, 5))
    z = z_of(fig.data[1])
    assert z.shape == (32, 32) and z[8:12, 20:24].min() == 1.0 and z.sum() == 16
    (rect,) = fig.layout.shapes
    assert (rect.x0, rect.y0) == (19.5, 7.5)


def test_class_probabilities_one_column_per_query_and_the_cost_pairs_outlined():
    probs = np.full((3, 11), 0.01)
    probs[1, 4] = 0.9
    fig = query_classes_figure(probs, [str(d) for d in range(10)] + ["∅"])
    assert list(fig.data[0].x) == ["q0", "q1", "q2"] and z_of(fig.data[0]).shape == (11, 3)
    assert fig.data[0].text[4][1] == "0.90"
    fig = cost_matrix_figure(np.arange(6.0).reshape(3, 2), [(2, 0), (0, 1)], ["3 (#1)", "5 (#2)"])
    assert sorted((s.y0 + 0.5, s.x0 + 0.5) for s in fig.layout.shapes) == [(0, 1), (2, 0)]


def test_every_query_label_is_drawn_in_the_ink_that_contrasts_more_with_its_colour():
    from transformer_viz.plots.detr import QUERY_COLOURS, _luminance, label_ink

    def ratio(a: str, b: str) -> float:
        light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
        return (light + 0.05) / (dark + 0.05)

    for colour in QUERY_COLOURS:
        ink = label_ink(colour)
        other = "#222222" if ink == "#ffffff" else "#ffffff"
        assert ratio(colour, ink) >= ratio(colour, other)
        assert ratio(colour, ink) >= 4.0, colour  # the old palette's labels went down to 2.2
