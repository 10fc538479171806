"""The engine (transformer_viz.engine) against the model and independent references: LayerNorm
statistics, the heads, teacher forcing and its loss, and a padded batch against its sentences run
alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_viz.engine import (batch_differences, batch_trace, retraced, run_sentence,
                                    teacher_forced_logits, teacher_forcing_losses, traced_forward)
from transformer_viz.text.tokenizer import BOS, EOS, PAD


def test_encoder_trace_layernorm_stats_match_the_model(tiny_checkpoint):
    run = run_sentence(tiny_checkpoint, "ein mann spielt im park .")
    norm = tiny_checkpoint.model.encoder_layers[0].norm1.norm
    mean, var = run.trace["encoder.0.norm1.mean"][0], run.trace["encoder.0.norm1.var"][0]
    residual = run.trace["encoder.0.norm1.residual"][0]
    expected = ((residual - mean[:, None]) / torch.sqrt(var[:, None] + norm.eps) * norm.weight
                + norm.bias)
    torch.testing.assert_close(run.trace["encoder.0.norm1.out"][0], expected.detach(),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_run_retraced_without_the_causal_mask_is_the_run_without_it(tiny_checkpoint, beam_size):
    sentence = "zwei kinder sitzen am strand mit einem ball ."
    run = run_sentence(tiny_checkpoint, sentence, beam_size=beam_size)
    expected = run_sentence(tiny_checkpoint, sentence, beam_size=beam_size, causal=False)
    got = retraced(tiny_checkpoint, run, causal=False)
    assert ((got.tgt_ids, got.translation, got.decoding)
            == (expected.tgt_ids, expected.translation, expected.decoding))
    assert got.trace.names() == expected.trace.names()
    for name in expected.trace:
        torch.testing.assert_close(got.trace[name], expected.trace[name], rtol=0, atol=0)
    # Without the mask, a decoder query sees later positions: the weights differ from the run's own.
    assert not torch.equal(got.trace["decoder.0.self_attn.weights"],
                           run.trace["decoder.0.self_attn.weights"])
    assert (run.trace is not got.trace
            and retraced(tiny_checkpoint, got).trace["decoder.0.self_attn.weights"].equal(
        run.trace["decoder.0.self_attn.weights"]))


def test_traced_heads_are_the_weights_times_the_values(sentence_trace):
    _, _, trace = sentence_trace
    for prefix in ("encoder.0.self_attn", "decoder.1.self_attn", "decoder.1.cross_attn"):
        # (B, h, L_q, L_k), (B, h, L_k, d_k)
        weights, v = trace[f"{prefix}.weights"], trace[f"{prefix}.v"]
        torch.testing.assert_close(trace[f"{prefix}.heads"], weights @ v, atol=1e-5, rtol=1e-5)


def reference_losses(logits: np.ndarray, expected: list[int], smoothing: float) -> dict:
    """The paper's loss by hand: −log p of each expected token, and with label smoothing ε the
    target (1 − ε)·one-hot + ε/V (as torch's cross_entropy defines it)."""
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    nll = -logp[np.arange(len(expected)), expected]
    return {"nll": nll,
            "smoothed": float(((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean())}


def test_teacher_forcing_losses_are_the_training_loss():
    torch.manual_seed(0)
    logits = torch.randn(6, 11, dtype=torch.float64)
    target = [1, 4, 4, 5, 10, 2]
    losses = teacher_forcing_losses(logits, target, smoothing=0.1, pad_id=PAD)
    by_hand = reference_losses(logits.numpy(), target, 0.1)
    np.testing.assert_allclose(losses["nll"], by_hand["nll"], rtol=1e-12)
    assert losses["ce"] == pytest.approx(by_hand["nll"].mean(), rel=1e-12)
    # training's loss runs in float32
    assert losses["smoothed"] == pytest.approx(by_hand["smoothed"], rel=1e-6)
    np.testing.assert_allclose(losses["p"], np.exp(-by_hand["nll"]), rtol=1e-12)
    # a <pad> target does not count in training's loss, so not here either
    padded = teacher_forcing_losses(torch.cat([logits, logits[:1]]), target + [PAD],
                                    smoothing=0.1, pad_id=PAD)
    assert padded["smoothed"] == pytest.approx(losses["smoothed"], rel=1e-6)


def test_teacher_forced_logits_shift_the_target(tiny_checkpoint):
    decoder_input, expected, logits = teacher_forced_logits(tiny_checkpoint,
                                                            "ein mann .", "a man .")
    assert decoder_input[0] == BOS and expected[-1] == EOS
    assert decoder_input[1:] == expected[:-1]
    assert logits.shape == (len(expected), tiny_checkpoint.config.vocab_size)
    src = run_sentence(tiny_checkpoint, "ein mann .", trace=False).src_ids
    trace = traced_forward(tiny_checkpoint.model, src, decoder_input)
    torch.testing.assert_close(logits, trace["logits"][0], atol=1e-5, rtol=1e-5)


def test_batch_trace_padding_changes_nothing_for_real_tokens(tiny_checkpoint):
    sentences = ["ein mann spielt im park mit einem ball .", "zwei kinder .",
                 "eine frau läuft auf der straße ."]
    trace, src_tokens, tgt_tokens = batch_trace(tiny_checkpoint, sentences)
    cfg = tiny_checkpoint.config
    B, S_max = trace["src.token_ids"].shape
    T_max = trace["tgt.token_ids"].shape[1]
    assert B == 3 and S_max == max(map(len, src_tokens)) and T_max == max(map(len, tgt_tokens))
    assert len({len(t) for t in src_tokens}) == 3  # really different lengths, so rows are padded
    pad_src = trace["src.token_ids"] == cfg.pad_id  # (B, S_max)
    pad_tgt = trace["tgt.token_ids"] == cfg.pad_id  # (B, T_max)
    assert pad_src.any()
    for b, sentence in enumerate(sentences):
        single = run_sentence(tiny_checkpoint, sentence)
        S_b, T_b = len(src_tokens[b]), len(tgt_tokens[b])
        assert trace["src.token_ids"][b, :S_b].tolist() == single.src_ids
        # the same greedy translation
        assert trace["tgt.token_ids"][b, :T_b].tolist() == single.tgt_ids
        assert not pad_src[b, :S_b].any() and pad_src[b, S_b:].all()
        for name in ("encoder.out", "encoder.0.self_attn.out", "encoder.1.norm2.out"):
            torch.testing.assert_close(trace[name][b, :S_b], single.trace[name][0],
                                       atol=1e-5, rtol=0)
        for name in ("decoder.out", "decoder.0.cross_attn.out", "probs"):
            torch.testing.assert_close(trace[name][b, :T_b], single.trace[name][0],
                                       atol=1e-5, rtol=0)
        # real queries' weights over real keys are those of the single run
        torch.testing.assert_close(trace["encoder.1.self_attn.weights"][b, :, :S_b, :S_b],
                                   single.trace["encoder.1.self_attn.weights"][0],
                                   atol=1e-5, rtol=0)
    for n in range(cfg.N):
        for name, pad in ((f"encoder.{n}.self_attn.weights", pad_src),
                          (f"decoder.{n}.cross_attn.weights", pad_src),
                          (f"decoder.{n}.self_attn.weights", pad_tgt)):
            weights = trace[name]  # (B, h, L_q, L_k)
            on_pad = weights.permute(0, 2, 3, 1)[pad[:, None, :].expand(-1, weights.size(2), -1)]
            assert on_pad.numel() > 0 or name.startswith("decoder") and "self" in name
            assert torch.all(on_pad == 0.0), name  # exactly 0, not merely small
            assert torch.isneginf(trace[name.replace("weights",
                                                     "masked_scores")].permute(0, 2, 3, 1)[
                pad[:, None, :].expand(-1, weights.size(2), -1)]).all()


def test_batch_differences_find_nothing_when_padding_is_masked(tiny_checkpoint):
    sentences = ["ein mann spielt im park mit einem ball .", "zwei kinder ."]
    trace, src_tokens, tgt_tokens = batch_trace(tiny_checkpoint, sentences)
    singles = [run_sentence(tiny_checkpoint, s) for s in sentences]
    checks = batch_differences(trace, src_tokens, tgt_tokens, singles)
    assert [c["same_target"] for c in checks] == [True, True]
    assert all(c["pad_weight"] == 0.0 and c["encoder_diff"] < 1e-5 and c["decoder_diff"] < 1e-5
               for c in checks)
    assert all(c["matches"] for c in checks)
    # and they do find a difference: the second row compared with another sentence's run
    other = batch_differences(trace, src_tokens, tgt_tokens,
                              [singles[0], run_sentence(tiny_checkpoint, "zwei hund .")])
    assert other[1]["encoder_diff"] > 1e-3 or not other[1]["same_target"]
    assert other[0]["matches"] and not other[1]["matches"]
