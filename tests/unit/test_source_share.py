"""Source or prefix (interpret/source_share.py): a token's source share lies in (0, 1); a model with
every cross-attention head off takes nothing from the source; the flags follow their definitions."""

from __future__ import annotations

import numpy as np
import torch

from transformer_viz.interpret import ablation as H
from transformer_viz.interpret.source_share import LOW_SOURCE_SHARE, SourceShares, source_shares
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

SRC = [5, 9, 17, 23, 11, 2]
TGT = [1, 8, 14, 21, 33]


def tiny(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=40, activation="gelu")).eval()


def test_shares_lie_in_0_1_and_the_prefix_after_t_takes_nothing():
    shares = source_shares(tiny(), SRC, TGT, steps=8)
    assert shares.source_share.shape == (len(TGT),)
    assert ((shares.source_share > 0) & (shares.source_share < 1)).all()
    assert shares.source_attribution.shape == (len(TGT), len(SRC))


def test_a_model_whose_cross_attention_is_all_off_takes_nothing_from_the_source(monkeypatch):
    model = tiny(1)
    cfg = model.cfg
    off = [h for h in H.all_heads(cfg) if h.kind == "cross"]
    forward = model.forward
    monkeypatch.setattr(model, "forward", lambda src, tgt, trace=None, causal=True, hooks=None:
                        forward(src, tgt, trace, causal, hooks.merged(H.heads_off_hooks(cfg, off))))
    shares = source_shares(model, SRC, TGT, steps=8)
    np.testing.assert_allclose(shares.source_share, 0.0, atol=1e-6)
    assert shares.low_source.all()


def test_unused_source_tokens_are_those_no_output_gives_a_share():
    a = np.array([[0.9, 0.1, 0.0, 0.0], [0.5, 0.45, 0.04, 0.01]])  # (T, S)
    flags = SourceShares(np.array([0.7, 0.3]), a)
    np.testing.assert_array_equal(flags.unused_sources(), [False, False, True, True])
    np.testing.assert_array_equal(flags.unused_sources(np.array([True, True, True, False])),
                                  [False, False, True, False])
    np.testing.assert_array_equal(flags.low_source, [False, 0.3 < LOW_SOURCE_SHARE])
