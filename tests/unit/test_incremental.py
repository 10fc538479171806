"""The fast decoding path (incremental.py) computes what the model's own start_state/decode_step compute:
the same logits (torch.allclose) step after step, on every configuration the model supports, with few rows
(transposed weights) and many, padded and not; decoding writes the same tokens either way."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from transformer_viz.models import incremental
from transformer_viz.models.config import preset
from transformer_viz.models.transformer import Transformer
from transformer_viz.text.decoding import beam_search, beam_search_hf, greedy_decode

VARIANTS = {
    "post-LN": {},
    "pre-LN": {"pre_ln": True},
    "untied, logits bias, swish, unscaled": {"tie_embeddings": False, "logits_bias": True, "activation": "swish",
                                             "scale_embedding": False},
    "gelu": {"activation": "gelu"},
}


def _model(**changes) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(dataclasses.replace(preset("tiny", vocab_size=60), **changes)).eval()
    with torch.no_grad():  # random LayerNorms and logits bias: the defaults (1, 0) would hide a mix-up
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
        if model.cfg.logits_bias:
            model.logits_bias.copy_(torch.randn(model.cfg.vocab_size))
    return model


def _source(rows: int, length: int, padded: bool) -> torch.Tensor:
    torch.manual_seed(1)
    src = torch.randint(4, 60, (rows, length))
    if padded:
        for i in range(rows):
            src[i, length - i % length:] = 0  # row i ends in i pads (mod length): lengths differ
            src[i, 0] = 5  # never all padding
    return src


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("rows, padded", [(1, False), (3, True), (incremental.FEW_ROWS + 5, True)])
def test_steps_give_the_models_logits(variant, rows, padded):
    model = _model(**VARIANTS[variant])
    src = _source(rows, 7, padded)
    decoder = incremental.decoder_for(model)
    with torch.no_grad():
        ours, reference = decoder.start(src), model.start_state(src)
        assert (ours.src_mask is None) == (reference.src_mask is None)
        if padded:
            assert torch.equal(ours.src_mask, reference.src_mask)
        real = src != model.cfg.pad_id  # (B, S): padded positions' memory is never read
        assert torch.allclose(ours.memory[real], reference.memory[real], atol=1e-5)
        tokens = torch.randint(4, 60, (rows, 6))
        for t in range(6):
            fast, slow = decoder.step(tokens[:, t], ours), model.decode_step(tokens[:, t], reference)
            assert fast.shape == slow.shape == (rows, model.cfg.vocab_size)
            assert torch.allclose(fast, slow, atol=1e-5), (t, (fast - slow).abs().max())
            assert ours.length == reference.length == t + 1
        for mine, theirs in zip(ours.caches, reference.caches):
            assert torch.allclose(mine["self"]["k"], theirs["self"]["k"], atol=1e-5)
            assert mine["self"]["v"].shape == theirs["self"]["v"].shape == (rows, model.cfg.h, 6, model.cfg.d_k)


@pytest.mark.parametrize("variant", ["post-LN", "pre-LN"])
def test_decoding_writes_the_same_tokens_as_the_models_own_steps(variant, monkeypatch):
    model = _model(**VARIANTS[variant])
    src = _source(4, 8, padded=True)
    runs = {}
    for fast in (True, False):
        monkeypatch.setattr(incremental, "usable", lambda m, fast=fast: fast)
        runs[fast] = [greedy_decode(model, src, max_len=12, record=False).tokens,
                      beam_search(model, src, beam_size=3, max_len=12, record=False).tokens,
                      beam_search_hf(model, src, beam_size=3, max_len=12, record=False).tokens]
    assert runs[True] == runs[False]


def test_weights_are_built_once_and_again_after_a_weight_changes():
    model = _model()
    first = incremental.fast_weights(model)
    assert incremental.fast_weights(model) is first
    src, last = _source(1, 5, False), torch.tensor([1])
    with torch.no_grad():
        before = incremental.decoder_for(model).step(last, incremental.decoder_for(model).start(src))
        model.decoder_layers[0].ffn.w_1.weight.mul_(2.0)  # in place, as an optimizer step does
        rebuilt = incremental.fast_weights(model)
        after = incremental.decoder_for(model).step(last, incremental.decoder_for(model).start(src))
        expected = model.decode_step(last, model.start_state(src))
    assert rebuilt is not first
    assert torch.allclose(rebuilt.decoder[0].ffn_1.weight_t, model.decoder_layers[0].ffn.w_1.weight.t())
    assert not torch.allclose(before, after)
    assert torch.allclose(after, expected, atol=1e-5)


def test_models_in_training_mode_and_recurrent_ones_use_their_own_steps():
    from transformer_viz.models.rnn import RNNSeq2Seq
    from transformer_viz.models.rnn import preset as rnn_preset

    training = _model().train()
    assert incremental.decoder_for(training) == (training.start_state, training.decode_step)
    rnn = RNNSeq2Seq(rnn_preset("tiny", vocab_size=60))
    assert incremental.decoder_for(rnn).step == rnn.decode_step
    assert incremental.usable(_model())


def test_the_position_limit_is_enforced_as_by_the_model():
    model = _model()
    decoder = incremental.decoder_for(model)
    state = decoder.start(_source(1, 4, False))
    state.length = model.cfg.max_len
    with pytest.raises(ValueError, match="exceeds the model's maximum"):
        decoder.step(torch.tensor([1]), state)


def test_transposed_copies_only_for_weights_at_least_as_tall_as_wide():
    """A wide weight (the feed-forward's W_2, (d_model, d_ff)) ran slower transposed: it keeps one layout,
    and its product gives the same numbers with any number of rows."""
    tall, wide = torch.randn(12, 4), torch.randn(4, 12)
    assert incremental.Linear.of(tall, None).weight_t.shape == (4, 12)
    assert incremental.Linear.of(tall, None, transposed=False).weight_t is None
    product = incremental.Linear.of(wide, torch.randn(4))
    assert product.weight_t is None
    for rows in (1, incremental.FEW_ROWS + 1):
        x = torch.randn(rows, 12)
        assert torch.allclose(product(x), x @ wide.t() + product.bias, atol=1e-6)
    assert torch.allclose(incremental.Linear.of(tall, None)(torch.ones(1, 4)), tall.sum(1)[None], atol=1e-5)
