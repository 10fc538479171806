"""Contrastive integrated gradients (interpret/contrast.py): complete within 1 % on a smooth model
at the stated steps, the prefix's share is real, and the attribution is the contrast's, not either
token's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_viz.interpret import contrast as C
from transformer_viz.interpret import explain as X
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

V = 40
SRC = [5, 9, 17, 23, 11, 30, 2]
TGT = [1, 8, 14, 21, 33, 6]
T_POS, X_ID, Y_ID = 3, 12, 25


def gelu_model(seed: int) -> Transformer:
    # GELU: the model is smooth along the path, as the quadrature assumes (ReLU's kinks: IG_STEPS)
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=V, activation="gelu")).eval()


@pytest.mark.parametrize("seed", [3, 6])
def test_contrastive_ig_is_complete_within_one_percent(seed):
    model = gelu_model(seed)
    c = C.contrastive_ig(model, SRC, TGT, T_POS, X_ID, Y_ID, steps=X.IG_STEPS)
    assert c.source.shape == (len(SRC),) and c.target.shape == (T_POS + 1,)
    delta = c.g_input - c.g_baseline
    assert abs(delta) > 0.05  # the baseline really changes the contrast
    assert c.gap < 0.01
    assert np.abs(c.target).max() > 0.01 * abs(delta)  # the prefix takes a real part of it
    few = C.contrastive_ig(model, SRC, TGT, T_POS, X_ID, Y_ID, steps=2)
    assert few.gap > c.gap


def test_the_contrast_is_the_difference_of_the_two_log_probabilities_and_antisymmetric():
    model = gelu_model(3)
    c = C.contrastive_ig(model, SRC, TGT, T_POS, X_ID, Y_ID, steps=8)
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([SRC]), torch.tensor([TGT]))[0, T_POS], -1)
    assert c.g_input == pytest.approx(float(logp[X_ID] - logp[Y_ID]), abs=1e-4)
    swapped = C.contrastive_ig(model, SRC, TGT, T_POS, Y_ID, X_ID, steps=8)
    np.testing.assert_allclose(swapped.source, -c.source, atol=1e-5)
    np.testing.assert_allclose(swapped.target, -c.target, atol=1e-5)
