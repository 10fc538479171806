"""Head identity cards: pattern scores as TransformerLens's head detector computes them ("mul"), the
entropy share, the types, and the cards of a real traced sentence in the order of the drops."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_viz.core.trace import Trace
from transformer_viz.interpret import explain as X
from transformer_viz.interpret.head_cards import entropy_share, head_cards, head_type, pattern_score
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer


def test_a_head_on_the_previous_token_scores_1_and_a_uniform_one_is_broad():
    T = 5
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1.0  # the first row has no previous token: it looks at itself
    pattern = np.eye(T, k=-1, dtype=bool)
    assert pattern_score(previous, pattern) == pytest.approx(1.0)
    causal = np.tril(np.ones((T, T), dtype=bool))
    uniform = causal / causal.sum(-1, keepdims=True)
    assert (pattern_score(uniform, pattern)
            == pytest.approx(np.mean([1 / (t + 1) for t in range(1, T)])))
    assert entropy_share(uniform, causal) == pytest.approx(1.0)
    assert entropy_share(previous, causal) == pytest.approx(0.0, abs=1e-6)
    assert head_type({"previous": 1.0, "self": 0.0}, 0.0) == "previous token"
    assert head_type({"previous": 0.3, "self": 0.2}, 0.95) == "broad"
    assert head_type({"previous": 0.3, "self": 0.2}, 0.4) == "mixed"
    assert np.isnan(pattern_score(uniform, np.zeros((T, T), dtype=bool)))


def test_cards_of_a_traced_sentence_follow_the_drops_order():
    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=40)).eval()
    src, tgt = [5, 9, 17, 9, 2], [1, 8, 14, 8]
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([src]), torch.tensor([tgt]), trace=trace)
    run = X.heads_run(model, src, tgt)
    cards = head_cards(trace, src, tgt, model.cfg, run.drops, attribution=np.eye(4, 5))
    cfg = model.cfg
    assert [c.name for c in cards] == [str(h) for h in run.heads]
    assert len(cards) == 3 * cfg.N * cfg.h
    np.testing.assert_allclose([c.drop for c in cards], run.drops)
    first = cards[0]  # enc.0.0: compare with the scores computed here by hand
    w = trace["encoder.0.self_attn.weights"][0, 0].numpy()
    assert first.scores["previous"] == pytest.approx(np.diag(w, k=-1).sum() / w[1:].sum())
    assert first.scores["duplicate"] == pytest.approx(w[3, 1] / w[3].sum())  # token 9 seen at 1
    assert np.isnan(first.scores["end"]) and np.isnan(first.attribution_agreement)
    cross = [c for c in cards if c.name.startswith("cross")]
    assert all(0.0 <= c.attribution_agreement <= 1.0 for c in cross)
    assert all(not np.isnan(c.scores["end"]) and np.isnan(c.scores["previous"]) for c in cross)
    assert all(0.0 <= c.entropy <= 1.0 + 1e-6 for c in cards)
