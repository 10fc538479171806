"""Activation patching (interpret/patching.py) against what it claims: a row with nothing patched is
the corrupted run, the clean encoder output patched whole is the clean run, the causal mask keeps a
decoder patch after t from reaching t, and the batched pass equals one patch at a time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_viz.interpret import ablation as H
from transformer_viz.interpret import patching as P
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

V = 40
CLEAN = [5, 9, 17, 23, 11, 30, 2]  # ends in </s>
CORRUPTED = [5, 9, 17, 31, 11, 30, 2]  # one token changed, position 3
TGT = [1, 8, 14, 21, 33, 6]  # <s> + the clean "translation"
T_POS = 2


def tiny(pre_ln: bool = False, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=V, pre_ln=pre_ln)).eval()


def _tokens(model: Transformer) -> tuple[int, int]:
    """c: the clean run's top token at T_POS; k: the token the corruption raises most there."""
    logits = P.patched_logits(model, CLEAN, CORRUPTED, TGT, T_POS, [])  # (2, V)
    return int(logits[0].argmax()), int((logits[1] - logits[0]).argmax())


@pytest.mark.parametrize("pre_ln", [False, True])
def test_nothing_patched_restores_nothing_and_the_whole_clean_memory_restores_all(pre_ln):
    model = tiny(pre_ln)
    c, k = _tokens(model)
    last = f"encoder.{model.cfg.N - 1}.out"
    logits = P.patched_logits(model, CLEAN, CORRUPTED, TGT, T_POS, [[], [P.Patch(last)]])
    assert (logits[0] - logits[1]).abs().max() > 1e-3  # the corruption changes the logits at t
    torch.testing.assert_close(logits[2], logits[1], rtol=0, atol=1e-6)
    torch.testing.assert_close(logits[3], logits[0], rtol=1e-5, atol=1e-5)
    shares = P.restored_shares(logits, c, k)
    np.testing.assert_allclose(shares, [0.0, 1.0], atol=1e-5)


def test_a_decoder_patch_after_t_changes_nothing_and_the_last_layer_at_t_restores_all():
    model = tiny()
    c, k = _tokens(model)
    grids = P.patch_grids(model, CLEAN, CORRUPTED, TGT, T_POS, c, k)
    N, T = model.cfg.N, len(TGT)
    assert grids.decoder.shape == (N, T) and grids.encoder.shape == (N, len(CLEAN))
    assert grids.ld_clean > grids.ld_corrupted
    np.testing.assert_allclose(grids.decoder[:, T_POS + 1:], 0.0, atol=1e-5)  # the causal mask
    assert np.abs(grids.decoder[:, :T_POS + 1]).max() > 0.05  # earlier positions do matter
    assert grids.decoder[N - 1, T_POS] == pytest.approx(1.0, abs=1e-5)  # the last stream at t: all
    # every position of any encoder layer clean: all the layers above it are clean, the memory too
    np.testing.assert_allclose(grids.encoder_all, 1.0, atol=1e-5)
    assert abs(grids.encoder[0, 3]) > 0.05  # the changed source position matters from layer 0 on


@pytest.mark.parametrize("pre_ln", [False, True])
def test_batched_grids_equal_one_patch_at_a_time(pre_ln):
    """The batched pass runs the decoder-only rows from the first layer their patches change."""
    model = tiny(pre_ln=pre_ln, seed=2)
    c, k = _tokens(model)
    batched = P.patch_grids(model, CLEAN, CORRUPTED, TGT, T_POS, c, k)
    slow = P.grids_one_at_a_time(model, CLEAN, CORRUPTED, TGT, T_POS, c, k)
    for name in ("encoder", "encoder_all", "decoder", "heads"):
        np.testing.assert_allclose(getattr(batched, name), getattr(slow, name), atol=1e-4,
                                   err_msg=name)
    assert np.abs(batched.heads).max() > 0.01  # some head matters: not a grid of zeros
    assert batched.ld_clean == pytest.approx(slow.ld_clean, abs=1e-4)


def test_rows_with_patches_in_both_halves_and_in_any_order():
    model = tiny()
    c, k = _tokens(model)
    enc, dec = P.Patch("encoder.1.out", 3), P.Patch("decoder.0.out", 1)
    head = P.Patch(H.heads_point("cross", 0), 2)  # with a stream of layer 1: the row starts at 0
    rows = [[dec], [enc], [enc, dec], [], [P.Patch("decoder.1.out", 2), head],
            [P.Patch(f"decoder.{model.cfg.N - 1}.out", T_POS)]]
    logits = P.patched_logits(model, CLEAN, CORRUPTED, TGT, T_POS, rows)
    alone = [P.patched_logits(model, CLEAN, CORRUPTED, TGT, T_POS, [row])[2] for row in rows]
    torch.testing.assert_close(logits[2:], torch.stack(alone), rtol=1e-5, atol=1e-5)


def test_first_difference_and_the_summary_names_the_strongest_cells():
    assert P.first_difference([4, 5, 2], [4, 6, 2]) == 1
    assert P.first_difference([4, 2], [4, 5, 2]) == 1  # one ends where the other goes on
    assert P.first_difference([4, 2], [4, 2]) is None
    enc = np.array([[0.1, 0.9, 0.0], [0.8, 0.2, 0.0]])  # (N, S): moves from "spielt" to "Sie"
    heads = np.zeros((3, 2, 2))
    heads[2, 1, 0] = 0.4  # cross-attention, layer 1, head 0
    grids = P.Grids(enc, np.ones(2), np.array([[0.0, 0.1], [0.0, 1.0]]), heads, 3.0, -1.0)
    p = P.Patching(["▁Sie", "▁spielt", "</s>"], ["▁Sie", "▁spielen", "</s>"], [1], ["<s>", "▁She"],
                   "She plays.", "They play.", 1, 7, 8, "▁plays", "▁play", grids)
    text = P.summary_text(p)
    assert "“plays” rather than “play” at position 1 is decided by “spielt” at encoder layer 0" \
        in text
    assert "hands it on to “Sie” by encoder layer 1 (80%)" in text
    assert "cross-attention head 1.0 (restores 40%)" in text
    assert "holds 10%, 100% of it" in text
