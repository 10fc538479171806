"""plots/attention.py: one head step by step (the worked score against the trace, masked cells), and
the soft lookup."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.figures import z_of
from transformer_viz.plots import attention as att
from transformer_viz.text.analysis import softmax


def test_worked_score_equals_the_traced_score_for_every_cell(sentence_trace, tiny_model):
    _, _, trace = sentence_trace
    d_k = tiny_model.cfg.d_k
    for prefix in ("encoder.1.self_attn", "decoder.0.self_attn", "decoder.1.cross_attn"):
        for head in range(tiny_model.cfg.h):
            q = att.head_slice(trace[f"{prefix}.q"], head)
            k = att.head_slice(trace[f"{prefix}.k"], head)
            scores = att.head_slice(trace[f"{prefix}.scores"], head)
            for i in range(q.shape[0]):
                for j in range(k.shape[0]):
                    worked = att.worked_score(q[i], k[j], d_k)
                    assert worked["sqrt_d_k"] == pytest.approx(math.sqrt(d_k))
                    assert worked["scaled"] == pytest.approx(scores[i, j], abs=1e-5)
                    assert worked["dot"] == pytest.approx(scores[i, j] * math.sqrt(d_k), abs=1e-4)


def test_score_terms_sum_to_the_dot_product():
    q, k = np.array([1.0, -2.0, 0.5]), np.array([3.0, 1.0, 4.0])
    fig = att.score_terms_figure(q, k, "<q>", "k")
    np.testing.assert_allclose(np.asarray(fig.data[0].y), [3.0, -2.0, 2.0])
    assert "= 3" in fig.layout.title.text and "&lt;q&gt;" in fig.layout.title.text


def test_mask_for_head_broadcasts_padding_and_causal_masks(sentence_trace):
    src_ids, tgt_ids, trace = sentence_trace
    S, T = len(src_ids), len(tgt_ids)
    enc = att.mask_for_head(trace["encoder.0.self_attn.mask"].numpy(), S, S, head=3)
    assert enc.shape == (S, S) and enc.all()
    dec = att.mask_for_head(trace["decoder.0.self_attn.mask"].numpy(), T, T, head=2)
    np.testing.assert_array_equal(dec, np.tril(np.ones((T, T), dtype=bool)))
    cross = att.mask_for_head(trace["decoder.0.cross_attn.mask"].numpy(), T, S, head=0)
    assert cross.shape == (T, S) and cross.all()


def test_masked_cells_are_grey_never_coloured(sentence_trace):
    _, tgt_ids, trace = sentence_trace
    T = len(tgt_ids)
    masked = att.head_slice(trace["decoder.0.self_attn.masked_scores"], 1)
    future = ~np.tril(np.ones((T, T), dtype=bool))
    assert np.isneginf(masked[future]).all()
    tokens = ["<s>", "a", "<b>", "c", "d"]
    for fig in (att.scores_heatmap(masked, tokens, tokens, "masked"),
                att.mask_heatmap(~future, tokens, tokens)):
        grey, coloured = fig.data
        assert grey.name == "masked"
        # grey exactly on the masked cells
        np.testing.assert_array_equal(~np.isnan(z_of(grey)), future)
        np.testing.assert_array_equal(np.isnan(z_of(coloured)), future)  # no colour there
        assert list(coloured.x)[2] == "2 &lt;b&gt;"
    weights = att.head_slice(trace["decoder.0.self_attn.weights"], 1)
    wfig = att.weights_heatmap(weights, tokens, tokens, masked=future)
    # the masked weights (exactly 0) in the masks' grey, not the scale's 0
    grey, coloured = wfig.data
    assert coloured.zmin == 0 and coloured.zmax == 1
    np.testing.assert_array_equal(~np.isnan(z_of(grey)), future)
    np.testing.assert_array_equal(np.isnan(z_of(coloured)), future)
    assert grey.colorscale == att.mask_heatmap(~future, tokens, tokens).data[0].colorscale
    np.testing.assert_array_equal(weights[future], 0.0)


def test_vectors_heatmap_shape_is_tokens_by_d_k(sentence_trace, tiny_model):
    src_ids, _, trace = sentence_trace
    q = att.head_slice(trace["encoder.0.self_attn.q"], 0)
    fig = att.vectors_heatmap(q, ["t"] * len(src_ids), "Q", "query token")
    assert z_of(fig.data[-1]).shape == (len(src_ids), tiny_model.cfg.d_k)


def test_lookup_scores_three_similarities():
    rng = np.random.default_rng(1)
    d_k = 16
    q, K = rng.normal(size=d_k), rng.normal(size=(5, d_k))
    W = att.random_bilinear(d_k, seed=0)
    # fixed seed: same W every rerun
    np.testing.assert_array_equal(W, att.random_bilinear(d_k, seed=0))
    scores = att.lookup_scores(q, K, W)
    dot, scaled, general = scores.values()
    np.testing.assert_allclose(dot, K @ q)
    np.testing.assert_allclose(scaled, K @ q / 4.0)
    np.testing.assert_allclose(general, [q @ W @ k for k in K])
    identity = att.lookup_scores(q, K)  # W = I: the general form is the plain dot product
    np.testing.assert_allclose(list(identity.values())[2], dot)
    w_dot, w_scaled = softmax(dot), softmax(scaled)
    assert w_dot.sum() == pytest.approx(1) and w_scaled.sum() == pytest.approx(1)
    assert w_scaled.max() < w_dot.max()  # 1/√d_k flattens the softmax
    fig = att.lookup_figure({n: softmax(s) for n, s in scores.items()},
                            ["<k0>", "b", "c", "d", "e"])
    assert len(fig.data) == 3 and fig.layout.barmode == "group"
    assert list(fig.data[0].x)[0] == "0 &lt;k0&gt;"


def test_worked_score_latex_shows_the_sum_the_traced_value_and_the_weight():
    # q·k = 3 − 2 + 2 + 1 = 4, d_k = 4
    q, k = np.array([1.0, -2.0, 0.5, 2.0]), np.array([3.0, 1.0, 4.0, 0.5])
    dot, scaled = 4.0, 2.0
    lines = att.worked_score_latex(q, k, 2, 0, scaled + 3e-7, "encoder.0.self_attn.scores",
                                   1, True, 0.25)
    assert len(lines) == 4
    assert (r"q_{2} \cdot k_{0}" in lines[0]
            and "(1.000)(3.000) + (-2.000)(1.000) + (0.500)(4.000)" in lines[0])
    assert lines[0].endswith(f"= {dot:.6f}")
    assert r"\frac{4.000000}{2.000000} = 2.000000" in lines[1]
    assert r"\texttt{encoder.0.self\_attn.scores}[0, 1, 2, 0] = 2.000000" in lines[2]
    assert r"|\Delta| = 3.0 \times 10^{-7}" in lines[2]
    assert lines[3].startswith("w_{2,0}") and lines[3].endswith("= 0.250000")
    masked = att.worked_score_latex(q, k, 0, 3, scaled, "decoder.0.self_attn.scores", 0, False, 0.0)
    assert (r"|\Delta| = 0)" in masked[2] and masked[3].startswith(r"M_{0,3} = -\infty")
            and "w_{0,3} = 0" in masked[3])


def test_latex_number():
    assert att.latex_number(0) == "0"
    assert att.latex_number(3.24e-7) == r"3.2 \times 10^{-7}"
    assert att.latex_number(12.0) == r"1.2 \times 10^{1}"
