"""plots/decoding.py: next-token bars, the causal and padding masks, the beam tree (from a real beam
search), and how predictions change without the causal mask."""

from __future__ import annotations

import numpy as np
import torch

from tests.support.figures import traces
from transformer_viz.plots.decoding import (beam_backtrack, beam_tree, beam_tree_figure,
                                            causal_mask_figure, key_mask_figure, topk_figure)
from transformer_viz.text.analysis import (PREDICTION_HEADERS, batch_row_labels, beam_hypothesis,
                                           compare_predictions, future_mass, mask_effect_text,
                                           prediction_table)
from transformer_viz.generation.decoding import beam_search
from transformer_viz.text.tokenizer import EOS, PAD


def reference_softmax(z: np.ndarray) -> np.ndarray:
    return torch.softmax(torch.as_tensor(z, dtype=torch.float64), -1).numpy()


def test_topk_figure_marks_the_chosen_token():
    fig = topk_figure(["a", "<b>", "a"], [0.5, 0.3, 0.1], chosen=1)
    assert list(fig.data[0].y) == ["1. a", "2. &lt;b&gt;", "3. a"]  # escaped and unique
    colours = list(fig.data[0].marker.color)
    assert colours[1] != colours[0] and colours[0] == colours[2]


def test_forced_comparison_shows_both_translations_token_by_token_with_the_fork_marked():
    from transformer_viz.plots.decoding import forced_comparison_figure

    fig = forced_comparison_figure(["▁A", "▁dog", "</s>"], [0.9, 0.6, 0.8],
                                   ["▁A", "▁cat", "▁runs", "</s>"], [0.9, 0.1, 0.5, 0.7], fork=2)
    original, forced = fig.data
    assert list(original.x) == [1, 2, 3] and list(forced.x) == [1, 2, 3, 4]
    assert list(forced.text) == ["␣A", "␣cat", "␣runs", "&lt;/s&gt;"]  # shown and escaped
    assert list(forced.y) == [0.9, 0.1, 0.5, 0.7]
    assert fig.layout.shapes[0].x0 == 1.5  # the fork: just before position 2


def test_causal_mask_and_key_mask_figures():
    fig = causal_mask_figure(["0 <s>", "1 a", "2 b", "3 c"])
    allowed = np.asarray(traces(fig, "may attend")[0].z, dtype=float)
    assert np.array_equal(~np.isnan(allowed), np.tril(np.ones((4, 4), dtype=bool)))
    fig = key_mask_figure([True, True, False], ["0 a", "1 </s>", "2 <pad>"])
    grey = np.asarray(traces(fig, "masked")[0].z, dtype=float)
    assert np.array_equal(~np.isnan(grey), np.array([[False, False, True]]))


BEAM = dict(  # K = 2, four steps; beam 1 finishes at step 2 and is then only carried along
    tokens=[[5, 6], [7, EOS], [8, PAD], [EOS, PAD]],
    parents=[[0, 0], [0, 1], [0, 1], [0, 1]],
    scores=[[-0.1, -0.5], [-0.3, -0.6], [-0.7, -0.6], [-0.9, -0.6]],
    finished=[[False, False], [False, True], [False, True], [True, True]],
)


def test_beam_tree_edges_connect_each_node_to_its_parent():
    nodes, edges = beam_tree(BEAM["parents"], BEAM["scores"], BEAM["finished"])
    drawn = {(n["step"], n["beam"]) for n in nodes}
    # the root, 2 first-step beams, 2 at step 2, and one real extension at steps 3 and 4 (carries
    # not drawn)
    assert drawn == {(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (4, 0)}
    assert len(edges) == len(nodes) - 1
    ends = {}
    for start, end in edges:
        assert start in drawn and end in drawn
        assert end[0] == start[0] + 1
        ends[end] = start
    for n in nodes[1:]:
        s, k = n["index"]
        expected_parent = (n["step"] - 1, BEAM["parents"][s][k] if s > 0 else 0)
        assert ends[(n["step"], n["beam"])] == expected_parent
    assert ends[(2, 1)] == (1, 1)  # beam 1 at step 2 extends beam 1 of step 1 with </s>

    text = [[f"t{tok}" for tok in row] for row in BEAM["tokens"]]
    fig = beam_tree_figure(text, BEAM["parents"], BEAM["scores"], BEAM["finished"], best_beam=1)
    edge_trace = traces(fig, "edges")[0]
    xs, ys = list(edge_trace.x), list(edge_trace.y)
    segments = [((xs[n], ys[n]), (xs[n + 1], ys[n + 1])) for n in range(0, len(xs), 3)]
    assert segments == edges
    path = traces(fig, "chosen translation")[0]
    # carries (3, 1), (4, 1) are not drawn
    assert list(zip(path.x, path.y)) == [(0, 0), (1, 1), (2, 1)]
    assert beam_hypothesis(BEAM["tokens"], BEAM["parents"], 1, EOS, PAD) == [6]
    assert beam_hypothesis(BEAM["tokens"], BEAM["parents"], 0, EOS, PAD) == [5, 7, 8]


def test_beam_tree_of_a_real_beam_search(tiny_model):
    src = torch.tensor([[5, 9, 12, 7, EOS]])
    result = beam_search(tiny_model, src, beam_size=3, max_len=8)
    tokens = [s.tokens[0] for s in result.steps]
    parents = [s.parents[0] for s in result.steps]
    nodes, edges = beam_tree(parents, [s.scores[0] for s in result.steps],
                             [s.finished[0] for s in result.steps])
    drawn = {(n["step"], n["beam"]) for n in nodes}
    assert all(start in drawn for start, _ in edges)
    # scores only fall along an edge (log-probabilities are ≤ 0)
    score = {(n["step"], n["beam"]): n["score"] for n in nodes}
    assert all(score[end] <= score[start] + 1e-6 for start, end in edges)
    finals = [beam_hypothesis(tokens, parents, k, EOS, PAD) for k in range(3)]
    assert result.tokens[0] in finals
    path = beam_backtrack(tokens, parents, 0)
    assert path[0] == (0, 0) and len(path) == len(tokens) + 1


def test_compare_predictions_and_future_mass():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(4, 7))
    same = compare_predictions(logits, logits, [0, 1, 2, 3])
    np.testing.assert_allclose(same["kl"], 0, atol=1e-12)
    other = logits.copy()
    other[:, 3] += 5.0
    diff = compare_predictions(logits, other, [3, 3, 3, 3])
    p, q = reference_softmax(logits), reference_softmax(other)
    np.testing.assert_allclose(diff["kl"], (p * np.log(p / q)).sum(-1))
    assert np.all(diff["p_expected_b"] > diff["p_expected_a"])
    assert np.all(diff["argmax_b"] == 3)
    causal = reference_softmax(np.where(np.tril(np.ones((4, 4), dtype=bool)),
                                        logits[:, :4], -np.inf))
    np.testing.assert_array_equal(future_mass(causal), 0.0)
    uniform = np.full((4, 4), 0.25)
    np.testing.assert_allclose(future_mass(uniform), [0.75, 0.5, 0.25, 0.0])


def test_prediction_change_panels_and_visible_near_zero_bars():
    from transformer_viz.plots.decoding import prediction_change_figure

    labels = [f"{t} tok{t}" for t in range(5)]
    fig = prediction_change_figure(labels, [0.9, 0.8, 0.7, 0.6, 0.5], [0.001, 0.0, 0.2, 0.1, 0.3],
                                   [2.0, 3.0, 1.0, 0.5, 0.2])
    kl = traces(fig, "KL(masked ‖ unmasked)")[0]
    assert (kl.xaxis, kl.yaxis) == ("x2", "y2") and fig.layout.yaxis2.overlaying is None
    assert fig.layout.yaxis.domain[0] > fig.layout.yaxis2.domain[1]  # KL in its own panel below
    assert list(fig.layout.yaxis.tickvals) == [0, 0.25, 0.5, 0.75, 1.0]  # round ticks
    for name in ("p(expected) with causal mask", "p(expected) without mask"):
        bars = traces(fig, name)[0]
        # a 0 bar still shows "0.00"
        assert bars.texttemplate == "%{y:.2f}" and bars.textposition == "outside"


def test_tick_labels_are_turned_by_plotly_only_when_they_would_overlap_where_drawn():
    from transformer_viz.plots.common import heatmap

    fig = heatmap(np.zeros((2, 12)), [f"{t} ▁Wörter" for t in range(12)], ["a", "b"])
    assert fig.layout.xaxis.tickangle is None  # "auto": chosen when drawn, at the real width
    assert fig.layout.template.layout.xaxis.autotickangles == (0, -60, -90)


def test_prediction_table_and_the_statement_follow_the_comparison():
    logits = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]]))
    other = np.log(np.array([[0.2, 0.7, 0.1], [0.1, 0.6, 0.3]]))
    compare = compare_predictions(logits, other, [0, 1])
    vocab = ["▁a", "b", "<pad>"]
    table = prediction_table(compare, ["<s>", "▁a"], ["▁a", "b"],
                             lambda ids: [vocab[i] for i in ids])
    # not escaped; the word-start mark as in the figures
    assert table["decoder input"] == ["0 <s>", "1 ␣a"]
    assert table["expected next"] == ["␣a", "b"]
    assert table["argmax (mask)"] == ["␣a", "b"] and table["argmax (no mask)"] == ["b", "b"]
    np.testing.assert_allclose(table["p (mask)"], [0.7, 0.8])
    np.testing.assert_allclose(table["p(expected), no mask"], [0.2, 0.6])
    np.testing.assert_allclose(table["KL(mask ‖ no mask)"], compare["kl"])
    assert list(table) == list(PREDICTION_HEADERS)  # every column has its short header
    text = mask_effect_text(compare)  # mean p(expected): 0.75 with the mask, 0.4 without
    assert "**falls from 0.750 to 0.400**, and 1 of 2 argmax tokens change" in text
    assert ("rises from 0.400 to 0.750"
            in mask_effect_text(compare_predictions(other, logits, [0, 1])))


def test_batch_row_labels_count_the_padding_of_each_row():
    src, tgt = [["a", "b", "</s>"], ["c", "</s>"]], [["<s>", "x"], ["<s>", "y", "z", "w"]]
    assert (batch_row_labels(src, tgt)
            == ["row 0: 3 source tokens + 0 <pad>, 2 target tokens + 2 <pad>",
                "row 1: 2 source tokens + 1 <pad>, 4 target tokens + 0 <pad>"])


def test_beam_tree_down_the_figure_has_a_row_a_step_and_a_column_a_beam():
    """The Lecture's beam tree (down=True): the same tree with step and beam swapped, each token to
    the right of its node; before, a long translation's tokens (one column a step) ran into each
    other."""
    text = [[f"t{tok}" for tok in row] for row in BEAM["tokens"]]
    across = beam_tree_figure(text, BEAM["parents"], BEAM["scores"], BEAM["finished"], best_beam=1)
    down = beam_tree_figure(text, BEAM["parents"], BEAM["scores"], BEAM["finished"],
                            best_beam=1, down=True)
    for name in ("edges", "chosen translation", "beams"):
        a, d = traces(across, name)[0], traces(down, name)[0]
        assert list(d.x) == list(a.y) and list(d.y) == list(a.x)
    assert traces(down, "beams")[0].textposition == "middle right"
    assert (list(down.layout.xaxis.ticktext) == ["beam 0", "beam 1"]
            and down.layout.showlegend is False)
