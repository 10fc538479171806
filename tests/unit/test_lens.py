"""The sub-layer lens and the tuned lens (interpret/lens.py, interpret/tuned_lens.py): the last
sublayer's reading is the model's output; an untrained tuned lens is the plain lens; a trained one
reads held-out sentences closer to the output, without touching the model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_viz.interpret.lens import sublayer_lens
from transformer_viz.interpret.tuned_lens import (TunedLens, load_tuned_lens, mean_kl,
                                                  save_tuned_lens, sentence_lens, train_tuned_lens)
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

V = 40


def tiny(pre_ln: bool = False) -> Transformer:
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=V, pre_ln=pre_ln, N=3)).eval()


def pairs(n: int, seed: int) -> list[tuple[list[int], list[int]]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        S, T = (int(x) for x in torch.randint(3, 9, (2,), generator=g))
        src = torch.randint(4, V, (S,), generator=g).tolist() + [2]
        out.append((src, torch.randint(4, V, (T,), generator=g).tolist()))
    return out


@pytest.mark.parametrize("pre_ln", [False, True])
def test_the_last_sublayers_reading_is_the_models_output(pre_ln):
    model = tiny(pre_ln)
    src, tgt = torch.tensor([[5, 9, 17, 23, 2]]), torch.tensor([[1, 8, 14, 21]])
    predicted = torch.tensor([8, 14, 21, 2])
    lens = sublayer_lens(model, src, tgt, predicted)
    assert lens["p"].shape == (model.cfg.N, 3, 4)
    with torch.no_grad():
        out = torch.softmax(model(src, tgt)[0], -1)  # (T, V)
    np.testing.assert_allclose(lens["p"][-1, -1],
                               out[torch.arange(4), predicted].numpy(), atol=1e-5)
    np.testing.assert_allclose(lens["kl"][-1, -1], 0.0, atol=1e-5)
    assert (lens["kl"][:-1] > 1e-4).any()  # earlier readings differ: the test is not vacuous


def test_an_untrained_tuned_lens_is_the_plain_lens():
    model = tiny()
    held_out = pairs(20, seed=2)
    identity = TunedLens(model.cfg.d_model, model.cfg.N)
    np.testing.assert_allclose(mean_kl(model, identity, held_out), mean_kl(model, None, held_out),
                               rtol=1e-6, atol=1e-7)


def test_a_trained_tuned_lens_reads_held_out_sentences_closer_to_the_output(tmp_path):
    model = tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    lens = train_tuned_lens(model, pairs(200, seed=1), steps=60, batch_size=16, lr=3e-3,
                            log=lambda *_: None)
    held_out = pairs(40, seed=3)
    plain, tuned = mean_kl(model, None, held_out), mean_kl(model, lens, held_out)
    assert all(t < p for t, p in zip(tuned[:-1], plain[:-1])), (plain, tuned)
    assert tuned[-1] == pytest.approx(plain[-1], abs=1e-7) == pytest.approx(0.0, abs=1e-5)
    # the model untouched
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    save_tuned_lens(lens, tmp_path, {"kl_plain": plain, "kl_tuned": tuned})
    loaded = load_tuned_lens(tmp_path, model.cfg)
    assert mean_kl(model, loaded, held_out) == pytest.approx(tuned, rel=1e-6)
    assert load_tuned_lens(tmp_path / "none", model.cfg) is None


def test_one_sentences_lens_reading_is_the_logit_lens_and_its_kl_is_layer_kls():
    from transformer_viz.interpret.explain import logit_lens

    model = tiny()
    src, tgt = [5, 9, 17, 9, 2], [1, 8, 14, 8]
    plain = sentence_lens(model, None, src, tgt)
    expected = logit_lens(model, src, tgt)
    np.testing.assert_array_equal(plain["rank"], expected["rank"])
    np.testing.assert_allclose(plain["p"], expected["p"], atol=1e-6)
    # the identity lens reads as the plain one; the last layer is the output itself
    identity = sentence_lens(model, TunedLens(model.cfg.d_model, model.cfg.N), src, tgt)
    np.testing.assert_allclose(identity["kl"], plain["kl"], atol=1e-6)
    assert plain["kl"][-1] == pytest.approx(0.0, abs=1e-5) and (plain["kl"][:-1] > 1e-4).all()
    assert mean_kl(model, None, [(src, tgt[1:])]) == pytest.approx(list(plain["kl"]), rel=1e-5)


@pytest.mark.parametrize("name", ["de-en", "en-de"])
def test_the_shipped_tuned_lenses_read_a_sentence_closer_to_the_output(name):
    from pathlib import Path

    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.engine import run_sentence

    ckpt = load_checkpoint(Path(__file__).resolve().parents[2] / "checkpoints" / name)
    sentence = "Ein Mann spielt im Park." if name == "de-en" else "A man plays in the park."
    run = run_sentence(ckpt, sentence)
    lens = load_tuned_lens(ckpt.path, ckpt.config)
    plain = sentence_lens(ckpt.model, None, run.src_ids, run.tgt_ids)["kl"]
    tuned = sentence_lens(ckpt.model, lens, run.src_ids, run.tgt_ids)["kl"]
    assert (tuned[:-1] < plain[:-1]).all(), (plain, tuned)


def test_a_position_is_decided_where_the_written_token_becomes_and_stays_the_top_guess():
    from transformer_viz.interpret.lens import decided_at

    rank = np.array([[[3, 1, 2, 5], [1, 1, 1, 4]], [[1, 1, 1, 2], [1, 1, 1, 3]]])  # (N=2, 2, T=4)
    rank = np.concatenate([rank, np.ones((2, 1, 4), int)], 1)  # (2, 3, 4): the FFN rows rank 1
    rank[1, 2, 3] = 2  # the last reading of position 3 is not the written token
    assert decided_at(rank).tolist() == [1, 0, 1, -1]
