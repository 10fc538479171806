"""A decoding step's Python work stays small with the one forward pass: without hooks no hook point
is called, no submodule is read through nn.Module.__getattr__ and no module through
nn.Module.__call__, and the products' layouts are checked at a decode call's first step only, again
at the next call and after a weight changes. Reading submodules from the instance dictionary never
hides a replaced one."""

from __future__ import annotations

import torch
from torch import nn

from transformer_viz.core.hooks import Hooks
from transformer_viz.models import products
from transformer_viz.models.transformer import model as T
from transformer_viz.models.transformer.config import preset

V = 40


def _model() -> T.Transformer:
    torch.manual_seed(0)
    return T.Transformer(preset("tiny", vocab_size=V)).eval()


def _source() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randint(4, V, (2, 6))


def _counting(monkeypatch, owner, name: str) -> list:
    """Replace ``owner.name`` by a wrapper that appends each call's arguments to the list returned.
    """
    calls, original = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_step_without_hooks_calls_no_hook_point_and_no_module(monkeypatch):
    model, last = _model(), torch.full((2,), 1)
    with torch.no_grad():
        state = model.start_state(_source())
        model.decode_step(last, state)
        points = _counting(monkeypatch, T, "point")
        module_calls = _counting(monkeypatch, nn.Module, "__call__")
        lookups = _counting(monkeypatch, nn.Module, "__getattr__")
        model.decode_step(last, state)
        assert points == [] and module_calls == []
        assert all(name in ("weight", "pe") for _, name in lookups), lookups  # parameters only
        seen = []
        reader = Hooks({"decoder.1.ffn.out": lambda t, name: seen.append(name)})
        model.decode_step(last, state, hooks=reader)
    assert seen == ["decoder.1.ffn.out"] and len(points) > 50


def test_layouts_are_checked_once_per_decode_call_and_after_a_weight_changes(monkeypatch):
    model, src, last = _model(), _source(), torch.full((2,), 1)
    stamps = _counting(monkeypatch, products, "_stamp")
    with torch.no_grad():
        state = model.start_state(src)
        stamps.clear()
        first = model.decode_step(last, state)
        checked = len(stamps)
        model.decode_step(last, state)
        assert checked > 0 and len(stamps) == checked  # the second step checked nothing
        model.decoder_layers[0].ffn.w_2.weight.mul_(3.0)  # in place, as an optimizer step does
        again = model.decode_step(last, model.start_state(src))
        assert len(stamps) >= 2 * checked  # a new decode call: checked again
    with torch.enable_grad():
        expected = model.decode_step(last, model.start_state(src))  # plain products, no layouts
    assert not torch.allclose(first, again)
    torch.testing.assert_close(again, expected, atol=1e-5, rtol=1e-5)


def test_a_replaced_submodule_is_the_one_that_runs():
    model, src, tgt = _model(), _source(), torch.full((2, 3), 1)
    with torch.no_grad():
        before = model(src, tgt)
        layer = model.decoder_layers[1]
        layer.ffn = T.FeedForward(model.cfg.d_model, model.cfg.d_ff)  # nn.Module.__setattr__
        assert layer.ffn is layer._modules["ffn"]
        after = model(src, tgt)
        rebuilt = T.Transformer(model.cfg).eval()
        rebuilt.load_state_dict(model.state_dict())  # the new FFN's weights, in a model built so
        torch.testing.assert_close(after, rebuilt(src, tgt))
    assert not torch.allclose(before, after)
