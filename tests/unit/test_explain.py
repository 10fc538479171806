"""Heads switched off, the logit lens and the attributions (interpret/ablation.py,
interpret/explain.py) against what they claim: the model itself with no head off, a model whose W_O
slice is zeroed by hand, one head at a time, the model's own output distribution, completeness, and
finite differences."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from transformer_viz.generation.decoding import greedy_decode
from transformer_viz.interpret import ablation as H
from transformer_viz.interpret import explain as X
from transformer_viz.interpret.lens import forward_with_streams
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

V = 40


def tiny(pre_ln: bool = False, seed: int = 0, dtype=torch.float32) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=V, pre_ln=pre_ln)).eval().to(dtype)


SRC = [5, 9, 17, 23, 11, 30, 2]  # ends in </s>
TGT = [1, 8, 14, 21, 33, 6]  # <s> + a "translation"


@pytest.mark.parametrize("pre_ln", [False, True])
def test_no_head_off_reproduces_the_models_logits_exactly(pre_ln):
    model = tiny(pre_ln)
    src = torch.tensor([SRC, SRC[:4] + [0, 0, 0]])  # the second row padded
    tgt = torch.tensor([TGT, TGT[:3] + [0, 0, 0]])
    expected = model(src, tgt)
    assert torch.equal(forward_with_streams(model, src, tgt)[0], expected)
    no_head_off = H.ablation_hooks(H.keep_mask(model.cfg, [[], []]))
    assert torch.equal(forward_with_streams(model, src, tgt, no_head_off)[0], expected)


def _zero_w_o_slice(model: Transformer, head: H.Head) -> Transformer:
    """A copy of the model whose W_O input columns for ``head`` are zeroed by hand."""
    edited = copy.deepcopy(model)
    layers = edited.encoder_layers if head.kind == "enc" else edited.decoder_layers
    attention = (layers[head.layer].cross_attn if head.kind == "cross"
                 else layers[head.layer].self_attn)
    d_k = attention.d_k
    with torch.no_grad():
        # (d_model, h·d_k): head's columns
        attention.w_o.weight[:, head.head * d_k:(head.head + 1) * d_k] = 0.0
    return edited


@pytest.mark.parametrize("head", [H.Head("enc", 1, 2), H.Head("dec", 0, 3), H.Head("cross", 1, 0)])
def test_one_head_off_equals_a_model_with_that_heads_w_o_slice_zeroed(head):
    model = tiny()
    src, tgt = torch.tensor([SRC]), torch.tensor([TGT])
    off = model(src, tgt, hooks=H.ablation_hooks(H.keep_mask(model.cfg, [[head]])))
    by_hand = _zero_w_o_slice(model, head)(src, tgt)
    torch.testing.assert_close(off, by_hand, rtol=1e-5, atol=1e-5)
    # the head did something: the test is not vacuous
    assert (off - model(src, tgt)).abs().max() > 1e-3


def test_batched_drops_equal_one_head_at_a_time_and_the_off_row_is_its_own():
    model = tiny(seed=1)
    heads = [H.Head("enc", 0, 1), H.Head("cross", 1, 3)]
    run = X.heads_run(model, SRC, TGT, heads)
    one_by_one = X.head_drops_one_at_a_time(model, SRC, TGT)
    assert run.drops.shape == (3 * model.cfg.N * model.cfg.h,)
    np.testing.assert_allclose(run.drops, one_by_one, atol=2e-5)
    assert np.abs(one_by_one).max() > 1e-2
    # row 1 (heads off together) against the model with both W_O slices zeroed by hand
    edited = _zero_w_o_slice(_zero_w_o_slice(model, heads[0]), heads[1])
    p = torch.softmax(edited(torch.tensor([SRC]), torch.tensor([TGT]))[0], -1)  # (T, V)
    expected = p[torch.arange(len(TGT)), torch.tensor(TGT[1:] + [2])].detach().numpy()
    np.testing.assert_allclose(run.p_off, expected, rtol=1e-5)
    assert not np.allclose(run.p_off, run.p_base)


def test_drop_grid_is_kind_layer_head():
    model = tiny(seed=1)
    run = X.heads_run(model, SRC, TGT)
    grid = X.drop_grid(run, model.cfg)
    i = run.heads.index(H.Head("cross", 1, 2))
    assert grid[2, 1, 2] == run.drops[i]


@pytest.mark.parametrize("pre_ln", [False, True])
def test_logit_lens_at_the_last_layer_is_the_models_output_distribution(pre_ln):
    model = tiny(pre_ln, seed=2)
    lens = X.logit_lens(model, SRC, TGT)
    # (T, V)
    p = torch.softmax(model(torch.tensor([SRC]), torch.tensor([TGT]))[0], -1).detach().numpy()
    np.testing.assert_allclose(lens["probs"][-1], p, rtol=1e-5, atol=1e-7)
    assert lens["probs"].shape == (model.cfg.N, len(TGT), V)
    chosen = TGT[1:] + [2]
    ranks = 1 + (p > p[np.arange(len(TGT)), chosen][:, None]).sum(-1)
    np.testing.assert_array_equal(lens["rank"][-1], ranks)
    np.testing.assert_array_equal(lens["top_ids"][-1][:, 0], p.argmax(-1))
    raw = X.logit_lens(model, SRC, TGT, final_norm=False)["probs"][-1]
    # Post-LN has no final LayerNorm: skipping it changes nothing; Pre-LN's changes the distribution
    assert np.allclose(raw, p, atol=1e-6) != pre_ln


@pytest.mark.parametrize("seed", [3, 6])
def test_integrated_gradients_are_complete_within_one_percent(seed):
    # GELU: the model is smooth along the path, as the quadrature assumes (ReLU's kinks: see
    # IG_STEPS)
    torch.manual_seed(seed)
    model = Transformer(preset("tiny", vocab_size=V, activation="gelu")).eval()
    ig, delta = X.integrated_gradients(model, SRC, TGT, steps=X.IG_STEPS)
    assert ig.shape == (len(TGT), len(SRC))
    assert np.abs(delta).min() > 0.05  # the baseline really changes every f_t
    np.testing.assert_array_less(np.abs(ig.sum(-1) - delta), 0.01 * np.abs(delta))
    few, _ = X.integrated_gradients(model, SRC, TGT, steps=2)  # too few nodes: visibly incomplete
    assert np.abs(few.sum(-1) - delta).max() > 0.01 * np.abs(delta).min()


def test_integrated_gradients_at_one_position_are_that_row_of_all_of_them():
    model = tiny(seed=5)
    ig, delta = X.integrated_gradients(model, SRC, TGT, steps=8)
    for t in (0, 3, len(TGT) - 1):
        row, delta_t = X.integrated_gradients_at(model, SRC, TGT, t, steps=8)
        np.testing.assert_allclose(row, ig[t], rtol=1e-4, atol=1e-6)
        assert delta_t == pytest.approx(float(delta[t]), abs=1e-5)


def test_integrated_gradients_of_a_relu_model_close_the_gap_with_more_steps():
    model = tiny(seed=3)
    _, delta = X.integrated_gradients(model, SRC, TGT, steps=2)
    gaps = [np.abs(X.integrated_gradients(model, SRC, TGT, steps=n)[0].sum(-1) - delta).sum()
            for n in (4, 64)]
    assert gaps[1] < 0.01 * np.abs(delta).sum() < gaps[0]


def test_gradient_times_input_matches_finite_differences():
    model = tiny(seed=4, dtype=torch.float64)
    gxi = X.gradient_x_input(model, SRC, TGT)  # (T, S)
    e = X.source_embedding(model, SRC)
    src, tgt, predicted = X._pair(model, SRC, TGT)
    eps = 1e-5
    for s in (0, 3, 6):
        direction = torch.zeros_like(e)
        direction[s] = e[s]  # scale token s's embedding: d/dε f(e + ε e_s) = Σ_d e_sd ∂f/∂e_sd
        f = [X._token_logp(model(src, tgt,
                                 hooks=X._embedding_hooks((e + sign * eps * direction)[None])),
                           predicted)[0] for sign in (1, -1)]
        estimate = ((f[0] - f[1]) / (2 * eps)).detach().numpy()
        np.testing.assert_allclose(gxi[:, s], estimate, rtol=1e-5, atol=1e-7)
    assert np.abs(gxi).max() > 1e-2


def test_translating_with_no_head_off_is_greedy_decoding_and_heads_off_change_it():
    model = tiny(seed=5)
    greedy = greedy_decode(model, torch.tensor([SRC]), max_len=12, record=False).tokens[0]
    assert X.translate_with_heads(model, SRC, [], max_len=12) == greedy
    everything_off = H.all_heads(model.cfg)
    assert X.translate_with_heads(model, SRC, everything_off, max_len=12) != greedy


def test_parse_heads():
    cfg = preset("tiny")
    assert ([str(h) for h in H.parse_heads("cross.1.3, enc.0.0,enc.0.0", cfg)]
            == ["cross.1.3", "enc.0.0"])
    for wrong in ("enc.2.0", "dec.0.4", "self.0.0", "enc.0", "enc.a.1"):
        with pytest.raises(ValueError):
            H.parse_heads(wrong, cfg)


def test_argmax_agreement_counts_positions():
    weights = np.zeros((2, 2, 3, 4))  # (N, h, T, S)
    # argmax 1, 2, 0
    attribution = np.array([[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]], dtype=float)
    weights[0, 0, :, 1] = 1  # always source 1: right at t = 0 only
    weights[0, 1, [0, 1, 2], [1, 2, 0]] = 1  # always right
    weights[1, :, :, 3] = 1  # never right
    out = X.argmax_agreement(weights, attribution)
    np.testing.assert_allclose(out["per_head"], [[1 / 3, 1], [0, 0]])
    np.testing.assert_allclose(out["per_layer"], [2 / 3, 0])
    # the heads' mean: t = 0 both on 1 (right); t = 1 a tie of 1 and 2, argmax takes the first
    # (wrong); t = 2 a tie of 0 and 1 (right)
    np.testing.assert_allclose(out["mean_heads"], [2 / 3, 0])


def test_pronoun_attention_finds_the_head_linking_the_pronoun_to_its_noun():
    tokens = ["▁The", "▁animal", "▁didn", "'", "t", "▁cross", "▁the", "▁street", "▁because",
              "▁it", "</s>"]
    weights = np.full((2, 3, 11, 11), 1 / 11)
    weights[1, 2, 9, 1] = 0.6  # layer 1, head 2: "it" -> "animal"
    weights[0, 0, 9, 7] = 0.7  # layer 0, head 0: "it" -> "street"
    out = X.pronoun_attention(weights, tokens, "it", ("animal", "street"))
    assert out["pronoun"] == 9 and out["positions"] == [1, 7] and out["best"] == (1, 2)
    assert out["weights"].shape == (2, 2, 3) and out["weights"][1, 0, 0] == 0.7
    assert X.pronoun_attention(weights, tokens, "they", ("animal", "street")) is None
