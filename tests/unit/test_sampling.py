"""Temperature, top-k, top-p and seeded draws (generation/sampling.py), and completing a prompt
(generation/completion.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from transformer_viz.generation.completion import SamplingSettings, complete_ids, suppressed_ids
from transformer_viz.generation.sampling import (draw, next_token_distribution, softmax,
                                           top_k_mask, top_p_mask, with_temperature)

LOGITS = np.array([2.0, 1.0, 0.5, 0.5, -1.0, 3.0, 0.0])


def test_temperature_one_leaves_the_distribution_unchanged():
    assert np.allclose(with_temperature(LOGITS, 1.0), softmax(LOGITS), atol=0, rtol=1e-15)
    e = np.exp(LOGITS)
    assert np.allclose(softmax(LOGITS), e / e.sum())


def test_temperature_towards_zero_becomes_greedy_and_above_one_flattens():
    for T in (0.5, 0.1, 0.02):
        assert with_temperature(LOGITS, T)[5] > with_temperature(LOGITS, 2 * T)[5]
    # e^(−1/0.01) = e^(−100) at most
    assert np.delete(with_temperature(LOGITS, 0.01), 5).sum() < 1e-40
    # T = 0: exactly greedy
    assert np.array_equal(with_temperature(LOGITS, 0.0), np.eye(len(LOGITS))[5])
    tied = np.array([1.0, 4.0, 4.0])
    # equal maxima: the lower ID
    assert np.array_equal(with_temperature(tied, 0.0), [0.0, 1.0, 0.0])
    hot = with_temperature(LOGITS, 100.0)
    assert hot.max() - hot.min() < 0.01  # nearly uniform
    with pytest.raises(ValueError):
        with_temperature(LOGITS, -1.0)


def test_top_k_keeps_exactly_k_tokens_and_breaks_ties_by_id():
    probs = softmax(LOGITS)
    for k in range(1, len(LOGITS)):
        keep = top_k_mask(probs, k)
        assert keep.sum() == k
        assert probs[keep].min() >= probs[~keep].max()
    assert np.array_equal(np.flatnonzero(top_k_mask(probs, 2)), [0, 5])
    assert np.array_equal(np.flatnonzero(top_k_mask(probs, 3)), [0, 1, 5])
    # 2 and 3 tie: the lower ID, 2
    assert np.array_equal(np.flatnonzero(top_k_mask(probs, 4)), [0, 1, 2, 5])
    assert top_k_mask(probs, 0).all() and top_k_mask(probs, 99).all()


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    probs = np.array([0.1, 0.4, 0.3, 0.2])
    assert np.flatnonzero(top_p_mask(probs, 0.4)).tolist() == [1]
    assert np.flatnonzero(top_p_mask(probs, 0.41)).tolist() == [1, 2]
    assert np.flatnonzero(top_p_mask(probs, 0.7)).tolist() == [1, 2]
    assert np.flatnonzero(top_p_mask(probs, 0.75)).tolist() == [1, 2, 3]
    assert np.flatnonzero(top_p_mask(probs, 0.01)).tolist() == [1]  # never empty
    assert top_p_mask(probs, 1.0).all()
    rng = np.random.default_rng(0)
    for _ in range(200):  # against brute force: no smaller set of top tokens reaches p
        probs = rng.dirichlet(np.ones(12))
        p = rng.uniform(0.05, 0.99)
        keep = top_p_mask(probs, p)
        assert probs[keep].sum() >= p - 1e-12
        assert np.sort(probs)[::-1][: keep.sum() - 1].sum() < p
        assert probs[keep].min() >= probs[~keep].max(initial=0)


def test_the_final_distribution_is_the_kept_set_renormalised():
    step = next_token_distribution(LOGITS, temperature=0.7, top_k=4, top_p=0.9)
    assert np.allclose(step.model, softmax(LOGITS))
    assert np.allclose(step.tempered, softmax(LOGITS / 0.7))
    assert step.kept.sum() <= 4
    assert np.isclose(step.final.sum(), 1.0)
    assert np.all(step.final[~step.kept] == 0)
    kept = step.tempered * step.kept
    assert np.allclose(step.final, kept / kept.sum())


def test_seeded_sampling_is_reproducible():
    probs = softmax(LOGITS)
    first = [draw(probs, np.random.default_rng(7)) for _ in range(5)]
    rng_a, rng_b = np.random.default_rng(11), np.random.default_rng(11)
    assert [draw(probs, rng_a) for _ in range(50)] == [draw(probs, rng_b) for _ in range(50)]
    assert len(set(first)) == 1


def test_twenty_thousand_draws_match_the_distribution():
    """Chi-square goodness of fit at the 1 % level (a correct sampler fails it 1 time in 100:
    seeded, so it either always passes or never)."""
    probs = next_token_distribution(LOGITS, temperature=1.3, top_k=5).final
    rng = np.random.default_rng(2026)
    counts = np.bincount([draw(probs, rng) for _ in range(20_000)], minlength=len(probs))
    assert np.all(counts[probs == 0] == 0)  # nothing outside the kept set
    kept = probs > 0
    _, p_value = chisquare(counts[kept], 20_000 * probs[kept])
    assert p_value > 0.01
    # And a sampler that ignored the temperature fails the same test.
    _, wrong = chisquare(counts[kept],
                         20_000 * next_token_distribution(LOGITS, top_k=5).final[kept])
    assert wrong < 0.01


def _tiny_model():
    from transformer_viz.models.gpt.config import GPTConfig
    from transformer_viz.models.gpt.model import GPT

    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=30, d_model=16, d_ff=32, h=2, N=2, max_len=12,
                         dropout=0.0)).eval()


def test_greedy_completion_takes_the_most_probable_token_every_step():
    model = _tiny_model()
    done = complete_ids(model, [1, 7, 9], SamplingSettings(temperature=0.0, max_new_tokens=6))
    ids = [1, 7, 9]
    for token, logits in zip(done.new_ids, done.step_logits):
        expected = model(torch.tensor([ids]))[0, -1].detach().numpy().astype(np.float64)
        expected[suppressed_ids(model.cfg)] = -np.inf
        assert token == int(np.argmax(expected))
        assert np.allclose(logits, expected, atol=1e-5)
        ids.append(token)
    assert done.stop_reason in ("</s>", "max_new_tokens")
    # A temperature near 0 samples what greedy picks.
    near = complete_ids(model, [1, 7, 9],
                        SamplingSettings(temperature=1e-4, max_new_tokens=6, seed=5))
    assert near.new_ids == done.new_ids


def test_sampled_completion_is_reproducible_with_its_seed_and_respects_max_len():
    model = _tiny_model()
    a = complete_ids(model, [1, 4],
                     SamplingSettings(temperature=1.5, top_p=0.9, seed=3, max_new_tokens=30))
    b = complete_ids(model, [1, 4],
                     SamplingSettings(temperature=1.5, top_p=0.9, seed=3, max_new_tokens=30))
    assert a.new_ids == b.new_ids
    assert len(a.ids) <= model.cfg.max_len
    assert 0 not in a.new_ids and 1 not in a.new_ids  # <pad> and <s> are never generated
    for step in range(len(a.new_ids)):
        assert a.distribution(step).kept[a.new_ids[step]]
