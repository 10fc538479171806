"""The cache shown is the cache decoding uses: its keys and values equal a full recomputation's, it
only grows, cross-attention's are computed once; the multiply–add counts equal what torch counts."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_viz.core.hooks import Hooks
from transformer_viz.core.trace import Trace
from transformer_viz.generation.kv_cache import multiply_adds, record_cache
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

V = 50
SRC = [5, 9, 17, 23, 2]  # S = 5, ends in </s>
TGT = [1, 8, 14, 21, 33, 6]  # <s> + a translation: T = 6 steps


@pytest.fixture
def model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=V)).eval()


def test_the_cached_keys_and_values_equal_a_full_recomputation(model):
    record = record_cache(model, SRC, TGT)
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([SRC]), torch.tensor([TGT]), trace=trace)
    for i in range(model.cfg.N):
        for name, cached in (("self_attn.k", record.self_k), ("self_attn.v", record.self_v),
                             ("cross_attn.k", record.cross_k), ("cross_attn.v", record.cross_v)):
            full = trace[f"decoder.{i}.{name}"][0].numpy()  # (h, L, d_k)
            assert cached[i].shape == full.shape
            assert abs(cached[i] - full).max() < 1e-5, (i, name)
    assert record.self_k.shape == (model.cfg.N, model.cfg.h, len(TGT), model.cfg.d_k)
    assert record.appended_only and record.cross_reused


def _explicit(cfg) -> Hooks:
    """Hooks that read every attention's weights: attention is then written out as matrix products,
    which torch's counter sees (the fused kernel it does not)."""
    names = [f"decoder.{i}.{kind}.weights" for i in range(cfg.N)
             for kind in ("self_attn", "cross_attn")]
    return Hooks({name: lambda w, name: None for name in names})


def _multiply_adds(work) -> int:
    with FlopCounterMode(display=False) as counter:
        work()
    return counter.get_total_flops() // 2


def test_multiply_adds_with_and_without_the_cache_are_what_torch_counts(model):
    cfg, hooks = model.cfg, _explicit(model.cfg)
    counted = multiply_adds(cfg, len(SRC), len(TGT))
    src, tgt = torch.tensor([SRC]), torch.tensor([TGT])
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        once = _multiply_adds(lambda: [layer.cross_attn.keys_values(memory)
                                       for layer in model.decoder_layers])
        assert once == counted.once
        state = model.start_state(src)
        for t in range(1, len(TGT) + 1):
            step = _multiply_adds(lambda: model.decode_step(tgt[:, t - 1], state, hooks=hooks))
            assert step == counted.with_cache[t - 1], t

            def recompute():  # the whole prefix again; only the newest position is scored
                y = model.decode(tgt[:, :t], memory, src_mask, hooks=hooks)
                model.project(y[:, -1:])

            assert _multiply_adds(recompute) == counted.without_cache[t - 1], t
    assert counted.without_cache[-1] > counted.with_cache[-1]
