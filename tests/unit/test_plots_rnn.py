"""The RNN page's figures (plots/rnn.py): arrays in, the same numbers out."""

from __future__ import annotations

import numpy as np

from tests.support.figures import array, z_of
from transformer_viz.plots.rnn import (bucket_bleu_figure, context_figure, hidden_states_figure,
                                       steps_figure, timing_figure, unrolled_figure)


def test_hidden_states_outline_the_context_row():
    states = np.linspace(-1, 1, 4 * 6).reshape(4, 6)
    fig = hidden_states_figure(states, ["0 a", "1 b", "2 c", "3 </s>"], highlight=3)
    np.testing.assert_allclose(z_of(fig.data[-1]), states)
    (shape,) = fig.layout.shapes
    assert (shape.y0, shape.y1) == (2.5, 3.5) and (shape.x0, shape.x1) == (-0.5, 5.5)
    assert fig.layout.annotations[0].text == "context c"
    assert not hidden_states_figure(states, list("abcd")).layout.shapes


def test_context_is_one_row():
    fig = context_figure(np.arange(5) / 5)
    np.testing.assert_allclose(z_of(fig.data[-1]), [np.arange(5) / 5])


def test_unrolled_bars_are_the_chosen_probabilities():
    fig = unrolled_figure(["▁Come", "▁here", "</s>"], [0.9, 0.5, 0.7])
    assert list(fig.data[0].x) == ["1 ␣Come", "2 ␣here", "3 &lt;/s&gt;"]
    np.testing.assert_allclose(array(fig.data[0].y), [0.9, 0.5, 0.7])


def test_steps_stack_encoder_and_decoder():
    fig = steps_figure(S=7, T=9, N=3)
    assert [list(t.y) for t in fig.data] == [[7, 3], [9, 3]]
    assert [a.text for a in fig.layout.annotations] == ["16", "6"]


def test_timing_in_milliseconds_and_buckets_with_gaps():
    fig = timing_figure([5, 10], {"RNN": [0.001, 0.002], "Transformer": [0.004, 0.005]})
    assert [t.name for t in fig.data] == ["RNN", "Transformer"]
    np.testing.assert_allclose(array(fig.data[1].y), [4.0, 5.0])
    fig = bucket_bleu_figure(["≤ 10", "> 25"], {"RNN": [20.0, None]}, counts=[3, 0])
    # one score: no share
    assert list(fig.data[0].x) == ["≤ 10<br>(3)", "> 25<br>(0)"] and fig.data[0].name == "RNN"
    assert bucket_bleu_figure(["a", "b"], {"X": [20.0, 5.0]}).data[0].name == "X (keeps 25 %)"
    y = array(fig.data[0].y)
    assert y[0] == 20.0 and np.isnan(y[1])
