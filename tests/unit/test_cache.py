"""Decoding runs the model's one forward pass with a key/value cache: every step's logits equal the
full recomputation of the prefix (torch.allclose), on every configuration the model supports, with
few rows (the products' transposed layouts) and many, padded and not; greedy and both beam searches
write the same tokens as decoding that recomputes the whole prefix at every step; the products'
layouts (models/products.py) change no token and are rebuilt when a weight changes in place."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from transformer_viz.generation.decoding import beam_search, beam_search_hf, greedy_decode
from transformer_viz.models import products
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

VARIANTS = {
    "post-LN": {},
    "pre-LN": {"pre_ln": True},
    "untied, logits bias, swish, unscaled": {"tie_embeddings": False, "logits_bias": True,
                                             "activation": "swish", "scale_embedding": False},
    "gelu": {"activation": "gelu"},
}


def _model(**changes) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(dataclasses.replace(preset("tiny", vocab_size=60), **changes)).eval()
    # random LayerNorms and logits bias: the defaults (1, 0) would hide a mix-up
    with torch.no_grad():
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
@pytest.mark.parametrize("rows, padded", [(1, False), (3, True), (products.FEW_ROWS + 5, True)])
def test_cached_steps_equal_the_full_recomputation(variant, rows, padded):
    model = _model(**VARIANTS[variant])
    src = _source(rows, 7, padded)
    tokens = torch.randint(4, 60, (rows, 6))
    tokens[:, 0] = model.cfg.bos_id
    with torch.no_grad():
        state = model.start_state(src)
        for t in range(6):
            step = model.decode_step(tokens[:, t], state)  # (rows, V)
            full = model(src, tokens[:, : t + 1])[:, -1]  # (rows, V)
            assert step.shape == full.shape == (rows, model.cfg.vocab_size)
            assert torch.allclose(step, full, atol=1e-5), (t, (step - full).abs().max())
            assert state.length == t + 1
        for cache in state.caches:
            assert cache["self"]["v"].shape == (rows, model.cfg.h, 6, model.cfg.d_k)


def _recomputing_greedy(model: Transformer, src: torch.Tensor, max_len: int) -> list[list[int]]:
    """Greedy decoding with no cache: the whole prefix through the forward pass at every step."""
    cfg = model.cfg
    tokens = torch.full((src.size(0), 1), cfg.bos_id)
    with torch.no_grad():
        for _ in range(max_len):
            nxt = model(src, tokens)[:, -1].argmax(-1)  # (B,)
            tokens = torch.cat([tokens, nxt[:, None]], 1)
    out = []
    for row in tokens[:, 1:].tolist():
        out.append(row[: row.index(cfg.eos_id)] if cfg.eos_id in row else row)
    return out


@pytest.mark.parametrize("variant", ["post-LN", "pre-LN"])
def test_greedy_decoding_with_the_cache_writes_what_recomputation_writes(variant):
    model = _model(**VARIANTS[variant])
    src = _source(4, 8, padded=True)
    assert (greedy_decode(model, src, max_len=12, record=False).tokens
            == _recomputing_greedy(model, src, 12))


class _Recomputing:
    """A model whose decode_step runs the whole prefix through the forward pass (no cache): beam
    search on it is the reference for beam search on the cached steps."""

    def __init__(self, model: Transformer) -> None:
        self.model, self.cfg = model, model.cfg

    def start_state(self, src):
        return _PrefixState(src, torch.zeros(src.size(0), 0, dtype=torch.long))

    def decode_step(self, last, state):
        state.prefix = torch.cat([state.prefix, last[:, None]], 1)  # (N, t + 1)
        return self.model(state.src, state.prefix)[:, -1]  # (N, V)


@dataclasses.dataclass
class _PrefixState:
    src: torch.Tensor
    prefix: torch.Tensor

    def select(self, index):
        return _PrefixState(self.src.index_select(0, index), self.prefix.index_select(0, index))

    select_beams = select


@pytest.mark.parametrize("variant", ["post-LN", "pre-LN"])
def test_beam_searches_with_the_cache_write_what_recomputation_writes(variant):
    model = _model(**VARIANTS[variant])
    src = _source(4, 8, padded=True)
    slow = _Recomputing(model)
    for search in (beam_search, beam_search_hf):
        cached = search(model, src, beam_size=3, max_len=12, record=False)
        recomputed = search(slow, src, beam_size=3, max_len=12, record=False)
        assert cached.tokens == recomputed.tokens
        assert cached.scores == pytest.approx(recomputed.scores, abs=1e-4)


def test_layouts_are_built_once_and_again_after_a_weight_changes():
    model = _model()
    src, last = _source(1, 5, False), torch.tensor([1])
    w_1 = model.decoder_layers[0].ffn.w_1
    row = torch.randn(1, w_1.in_features)  # one row: the transposed layout

    def layout():
        products.linear(row, w_1)
        return products._layouts[(id(w_1.weight), 1, True)][1]

    with torch.no_grad():
        before = model.decode_step(last, model.start_state(src))
        first = layout()
        assert layout() is first
        w_1.weight.mul_(2.0)  # in place, as an optimizer step does
        rebuilt = layout()
        after = model.decode_step(last, model.start_state(src))
    with torch.enable_grad():  # the plain products on the parameters themselves
        expected = model.decode_step(last, model.start_state(src))
    assert rebuilt is not first
    assert torch.equal(rebuilt, w_1.weight)
    assert rebuilt.t().is_contiguous()  # stored transposed
    assert not torch.allclose(before, after)
    assert torch.allclose(after, expected, atol=1e-5)


def test_the_position_limit_is_enforced():
    model = _model()
    state = model.start_state(_source(1, 4, False))
    state.length = model.cfg.max_len
    with pytest.raises(ValueError, match="exceeds the model's maximum"):
        model.decode_step(torch.tensor([1]), state)



def test_layouts_follow_the_model_to_another_dtype():
    model = _model()
    src, last = _source(1, 5, False), torch.tensor([1])
    with torch.no_grad():
        model.decode_step(last, model.start_state(src))  # layouts built in float32
        model.double()
        step = model.decode_step(last, model.start_state(src))
        full = model(src, last[:, None])[:, -1]
    assert step.dtype == torch.float64
    assert torch.allclose(step, full, atol=1e-10)
