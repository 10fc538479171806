"""Hook points on the one forward pass (core/hooks.py): reading changes nothing, a replacement
changes exactly what is computed from it, and another run's activation patched in gives that run's
numbers."""

from __future__ import annotations

import pytest
import torch

from transformer_viz.core.hooks import Hooks, Recorder
from transformer_viz.core.trace import Trace
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer

V = 50


@pytest.fixture
def model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=V)).eval()


def _pair():
    torch.manual_seed(1)
    src = torch.randint(4, V, (2, 7))  # (B, S)
    tgt = torch.randint(4, V, (2, 6))  # (B, T)
    tgt[:, 0] = 1
    return src, tgt


def test_hooks_that_only_read_change_nothing(model):
    src, tgt = _pair()
    seen = []
    reader = Hooks({name: lambda x, name: seen.append(name) for name in
                    ("src.embedding", "encoder.0.out", "decoder.1.cross_attn.heads", "logits")})
    with torch.no_grad():
        assert torch.equal(model(src, tgt, hooks=reader), model(src, tgt))
    assert seen == ["src.embedding", "encoder.0.out", "decoder.1.cross_attn.heads", "logits"]


def test_a_hook_on_an_attention_step_writes_attention_out_and_gives_the_same_numbers(model):
    src, tgt = _pair()
    weights = {}
    hooks = Hooks({"decoder.0.cross_attn.weights": lambda w, name: weights.setdefault(name, w)})
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt, hooks=hooks), model(src, tgt),
                                   atol=1e-5, rtol=1e-5)
    w = weights["decoder.0.cross_attn.weights"]  # (B, h, T, S)
    assert w.shape == (2, model.cfg.h, 6, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, model.cfg.h, 6))


def test_replacing_one_decoder_position_changes_only_what_is_computed_from_it(model):
    src, tgt = _pair()
    t, layer = 3, 0

    def bump(y, name):
        y = y.clone()
        y[:, t] += 1.0  # (B, T, d_model): position t of the first layer's output
        return y

    clean, patched = Trace(), Trace()
    with torch.no_grad():
        model(src, tgt, trace=clean)
        model(src, tgt, trace=patched, hooks=Hooks({f"decoder.{layer}.out": bump}))
    for name in clean:
        before, after = clean[name], patched[name]
        if name.startswith(("src.", "encoder.", "tgt.")):
            assert torch.equal(before, after), name  # computed before the hook point
        elif name.startswith(f"decoder.{layer}.") and name != f"decoder.{layer}.out":
            assert torch.equal(before, after), name  # the same layer, before its output
    for name in (f"decoder.{model.cfg.N - 1}.norm3.out", "logits"):
        before, after = clean[name], patched[name]  # (B, T, ·)
        # earlier positions never read position t
        assert torch.equal(before[:, :t], after[:, :t]), name
        assert not torch.allclose(before[:, t:], after[:, t:]), name


def test_patching_the_clean_runs_encoder_output_into_a_corrupted_run_restores_the_clean_logits(
        model):
    src, tgt = _pair()
    corrupted = src.clone()
    corrupted[:, 2] = (corrupted[:, 2] + 7) % (V - 4) + 4  # one source token changed
    recorder = Recorder(["encoder.out"])
    with torch.no_grad():
        clean_logits = model(src, tgt, hooks=recorder.hooks())
        corrupted_logits = model(corrupted, tgt)
        patch = Hooks({"encoder.out": lambda memory, name: recorder["encoder.out"]})
        patched_logits = model(corrupted, tgt, hooks=patch)
    assert not torch.allclose(clean_logits, corrupted_logits)
    torch.testing.assert_close(patched_logits, clean_logits)


def test_hooks_act_on_every_decoding_step_through_the_cache(model):
    src, _ = _pair()
    head_off = Hooks({"decoder.0.cross_attn.heads": lambda heads, name: heads * 0})
    steps = []
    with torch.no_grad():
        state = model.start_state(src, hooks=head_off)
        last = torch.full((2,), model.cfg.bos_id)
        for _ in range(3):
            steps.append(last)
            logits = model.decode_step(last, state, hooks=head_off)  # (B, V)
            last = logits.argmax(-1)
        full = model(src, torch.stack(steps, 1), hooks=head_off)[:, -1]  # (B, V)
    torch.testing.assert_close(logits, full, atol=1e-5, rtol=1e-5)


def test_merged_hooks_run_in_order_and_keep_the_trace():
    trace = Trace()
    first = Hooks({"x": lambda t, name: t + 1}, trace)
    both = first.merged({"x": lambda t, name: t * 10})
    out = both("x", torch.tensor([1.0]))
    assert out.item() == 20.0
    assert trace["x"].item() == 20.0  # the trace records what the pass goes on with
