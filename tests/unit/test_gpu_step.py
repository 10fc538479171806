"""A training update of the GPU run as the device sees it: the host queues it without reading
anything back (so that it can queue the next update while the device still runs this one), and
the fused Adam it uses updates the weights as the multi-tensor Adam does."""

from __future__ import annotations

import inspect
import shutil
import time
from dataclasses import replace

import pytest
import torch

from transformer_viz.core.trace import Trace
from transformer_viz.models.losses import label_smoothed_loss
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.corpora import make_batch, token_batches
from transformer_viz.training.gpu_run import GpuRunConfig
from transformer_viz.training.gpu_run.card import _compiled
from transformer_viz.training.gpu_run.compiling import compile_layers, eager
from transformer_viz.training.gpu_run.train import BudgetedRun, adam
from transformer_viz.training.common import attention_kernel, autocast
from transformer_viz.training.translation import run_epoch

TINY = GpuRunConfig(preset="tiny", batch_tokens=300, warmup=40, lr_factor=0.3, eval_every=0,
                    threads=1, amp="fp32")
META = torch.device("meta")


def _quiet(*_args) -> None:
    pass


def test_an_update_reads_nothing_back_from_the_device(gpu_data):
    """On the meta device a tensor has a shape but no values: any read (``.item()``, ``bool()``,
    ``float()``) raises, so updates that run there read nothing back."""
    run = BudgetedRun(TINY, gpu_data, _quiet)
    run.model.to(META)
    run.device, run.optimizer = META, adam(run.model, META)
    run.window["loss"] = torch.zeros((), device=META)
    batches = token_batches(run.examples, run.tc.batch_tokens, shuffle=True, seed=1)
    assert len(batches) > 3
    run.model.train()
    loss_sum, tokens, _ = run_epoch(run.model, run.model, run.optimizer, run.scaler, batches[:3],
                                    run.examples, run.tc, run.state, META, False, 1,
                                    after_step=run.after_step)
    assert run.state.step == run.window["steps"] == 3
    assert tokens == sum(sum(len(run.examples[i][1]) + 1 for i in idx) for idx in batches[:3])
    assert loss_sum.device == run.window["loss"].device == META
    assert all(p.device == META and p.grad is not None for p in run.model.parameters())
    with pytest.raises(RuntimeError):  # what a read there does
        float(run.window["loss"])


def test_the_forward_pass_reads_no_padding_mask_back_off_the_cpu():
    model = Transformer(preset("tiny", vocab_size=50)).to(META)
    src = torch.tensor([[5, 6, 7, 2], [5, 6, 2, 0]], device=META)  # (B, S), the second padded
    memory, src_mask = model.encode(src)
    assert memory.shape == (2, 4, model.cfg.d_model) and src_mask.shape == (2, 1, 1, 4)


def test_fused_adam_gives_the_weights_of_the_multi_tensor_adam(gpu_data):
    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=120, dropout=0.0, attn_dropout=0.0)
    fused_model, foreach_model = Transformer(cfg), Transformer(cfg)
    start = {k: v.clone() for k, v in fused_model.state_dict().items()}
    foreach_model.load_state_dict(start)
    fused = adam(fused_model, torch.device("cpu"))
    assert fused.defaults["fused"]
    foreach = torch.optim.Adam(foreach_model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9,
                               foreach=True)
    run = BudgetedRun(replace(TINY, preset="tiny"), gpu_data, _quiet)
    batches = token_batches(run.examples, 300, shuffle=True, seed=2)[:5]
    for step, idx in enumerate(batches, start=1):
        batch = make_batch([run.examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
        for model, optimizer in ((fused_model, fused), (foreach_model, foreach)):
            optimizer.param_groups[0]["lr"] = 1e-3 * step
            loss = label_smoothed_loss(model(batch.src, batch.tgt_in), batch.tgt_out, 0.1,
                                       cfg.pad_id)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    after, reference = fused_model.state_dict(), foreach_model.state_dict()
    assert min((after[k] - start[k]).abs().max().item() for k in start) > 1e-4  # all moved
    # A key bias adds the same amount to all of a query's scores, which softmax ignores: its
    # gradient is rounding noise (~1e-11) that Adam scales up to ±lr, and the two ways round
    # differently. Every other weight must agree.
    compared = [name for name in after if not name.endswith("w_k.bias")]
    assert len(compared) > 0.8 * len(after)
    for name in compared:
        torch.testing.assert_close(after[name], reference[name], rtol=1e-5, atol=1e-6)



def test_after_a_fused_update_a_forward_without_gradients_reads_the_new_weights():
    """models/products.py keeps its layouts of the weights for gradient-free products until a
    weight's version counter changes; the fused kernel alone does not change it."""
    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=50, dropout=0.0, attn_dropout=0.0)
    model = Transformer(cfg)
    optimizer = adam(model, torch.device("cpu"))
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]])  # (B, S)
    tgt = torch.tensor([[1, 5, 6], [1, 7, 8]])  # (B, T)
    with torch.no_grad():
        before = model(src, tgt)  # builds the layouts
    optimizer.param_groups[0]["lr"] = 1e-2
    model(src, tgt).float().pow(2).mean().backward()
    optimizer.step()
    fresh = Transformer(cfg)
    fresh.load_state_dict(model.state_dict())
    with torch.no_grad():
        after, expected = model(src, tgt), fresh(src, tgt)
    assert (after - before).abs().max() > 1e-3
    torch.testing.assert_close(after, expected)


def test_the_training_forward_traces_as_one_graph_on_the_cpu_too():
    """torch.compile sees one graph, as on a GPU: the padding test reads no mask while it traces
    (a read splits the graph, and the CPU's compile test would compile other graphs than a GPU's).
    fullgraph=True raises at a split; the "eager" backend traces without compiling."""
    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=50, dropout=0.0, attn_dropout=0.0)
    model = Transformer(cfg).train()
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0], [5, 5, 2, 0]])  # (B, S), padded
    tgt = torch.tensor([[1, 5, 6, 7, 8], [1, 7, 8, 0, 0], [1, 9, 0, 0, 0]])  # (B, T)
    traced = torch.compile(model, dynamic=True, fullgraph=True, backend="eager")
    torch.testing.assert_close(traced(src, tgt), model(src, tgt))
    cpu = torch.device("cpu")  # and under the run's bf16 autocast, as the GPU run compiles it
    with autocast(cpu, "bf16"), attention_kernel(cpu):
        torch.testing.assert_close(traced(src, tgt), model(src, tgt))


class _CountingBackend:
    """A torch.compile backend that runs each graph as traced (no code generated) and counts the
    graphs it is given."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, graph_module, example_inputs):
        self.graphs += 1
        return graph_module.forward


def test_each_stack_s_layers_share_one_compiled_graph():
    """compile_scope "layers": N = 3 layers a stack, batches of three shapes (one without
    padding), float32 and bf16 autocast, forward and backward: two graphs (the encoder layer's
    and the decoder layer's), and the model's own numbers. The evaluations' eval mode, decoding
    steps and hooks, under eager(), compile nothing (eval mode and no_grad would be new graphs,
    and the gradient-free products of models/products.py do not trace)."""
    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=50, N=3, dropout=0.0, attn_dropout=0.0)
    model, reference = Transformer(cfg).train(), Transformer(cfg).train()
    reference.load_state_dict(model.state_dict())
    backend = _CountingBackend()
    uncompile = compile_layers(model, dynamic=True, fullgraph=True, backend=backend)
    cpu = torch.device("cpu")
    shapes = [(3, 4, 5), (2, 6, 3), (4, 5, 7)]  # B, S, T: all differ, as the run compiles on
    for amp in ("fp32", "bf16"):
        for B, S, T in shapes:
            src = torch.randint(4, 50, (B, S))
            if B != 2:  # padded; the batch of two is not (training passes its all-True mask)
                src[-1, -1] = cfg.pad_id
            tgt = torch.randint(4, 50, (B, T))
            with autocast(cpu, amp), attention_kernel(cpu):
                got, expected = model(src, tgt), reference(src, tgt)
            torch.testing.assert_close(got, expected)
            got.float().pow(2).mean().backward()
            expected.float().pow(2).mean().backward()
            for (name, p), q in zip(model.named_parameters(), reference.parameters()):
                torch.testing.assert_close(p.grad, q.grad, msg=name)
    assert backend.graphs == 2 * 2  # one a stack, in float32 and again under autocast
    model.eval()
    with eager(), torch.no_grad():
        model(src, tgt)
        model.decode_step(tgt[:, 0], model.start_state(src))  # a decoding step, cached keys
        trace = Trace()
        model(src, tgt, trace=trace)
    assert backend.graphs == 4 and "encoder.2.self_attn.q" in trace
    uncompile()
    assert all("forward" not in layer.__dict__
               for layer in (*model.encoder_layers, *model.decoder_layers))
    model.train()
    model(src, tgt)
    assert backend.graphs == 4


def test_every_layer_hands_the_compiled_forward_the_same_name(monkeypatch):
    """compile_scope "layers": the compiled forwards are called with the name "" and no hooks by
    every layer, so a torch that guards on the name (2.11 did, recompiling the base model's layers
    one by one) still compiles one graph a stack; a call with hooks runs the plain forward, whose
    hook points have their names. Outputs as the uncompiled model's."""
    calls: list[tuple[str, str, object]] = []

    def recording_compile(forward, **options):
        def compiled(layer, *args, **kwargs):
            bound = inspect.signature(forward).bind(layer, *args, **kwargs)
            calls.append((type(layer).__name__, bound.arguments["name"], bound.arguments["hooks"]))
            return forward(layer, *args, **kwargs)
        return compiled

    monkeypatch.setattr(torch, "compile", recording_compile)
    torch.manual_seed(0)
    cfg = preset("tiny", vocab_size=50, N=3, dropout=0.0, attn_dropout=0.0)
    model, reference = Transformer(cfg).train(), Transformer(cfg).train()
    reference.load_state_dict(model.state_dict())
    compile_layers(model)
    src, tgt = torch.randint(4, 50, (2, 5)), torch.randint(4, 50, (2, 4))  # (B, S), (B, T)
    torch.testing.assert_close(model(src, tgt), reference(src, tgt))
    assert sorted(calls) == sorted([("EncoderLayer", "", None)] * 3
                                   + [("DecoderLayer", "", None)] * 3)
    trace = Trace()
    model(src, tgt, trace=trace)
    assert len(calls) == 6 and "decoder.2.cross_attn.weights" in trace


def test_a_run_whose_val_loss_climbs_goes_back_to_its_lowest(gpu_data, monkeypatch):
    """--rollback-above 0.5, val losses 5.0, 4.0, 4.4, 4.7 at four evaluations, one update
    before each: at the fourth, the weights and Adam's moments of the second evaluation are back,
    the learning rate is halved from then on, and the kept copy stays as it was while training
    goes on (Adam would otherwise update it in place)."""
    from transformer_viz.training import common
    from transformer_viz.training.translation import learning_rate

    losses = iter([5.0, 4.0, 4.4, 4.7])
    monkeypatch.setattr(common, "validation_loss", lambda *_args: next(losses))
    torch.manual_seed(0)
    rc = replace(TINY, rollback_above=0.5, eval_limit=2)
    logs: list[str] = []
    run = BudgetedRun(rc, gpu_data, logs.append)
    run.model.train()
    batches = token_batches(run.examples, rc.batch_tokens, shuffle=True, seed=3)

    def update(i: int) -> None:
        run_epoch(run.model, run.model, run.optimizer, run.scaler, batches[i:i + 1], run.examples,
                  run.tc, run.state, run.device, False, 1, after_step=run.after_step)

    def adam_moments() -> list[torch.Tensor]:
        return [run.optimizer.state[p]["exp_avg"].clone() for p in run.model.parameters()]

    for i in range(4):
        update(i)
        run.evaluate()
        run.model.train()
        if i == 1:  # the lowest val loss
            weights = {k: v.clone() for k, v in run.model.state_dict().items()}
            moments = adam_moments()
    assert [row.get("rolled_back_to") for row in run.history] == [None, None, None, 2]
    for name, tensor in run.model.state_dict().items():
        torch.testing.assert_close(tensor, weights[name], rtol=0, atol=0, msg=name)
    for got, expected in zip(adam_moments(), moments):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert run.tc.lr_factor == rc.lr_factor / 2 == run.history[-1]["lr_factor"]
    assert any("put back" in line and "step 2" in line for line in logs)
    update(4)
    cfg = run.model.cfg
    assert run.optimizer.param_groups[0]["lr"] == pytest.approx(
        learning_rate(run.state.step, cfg.d_model, rc.warmup, rc.lr_factor / 2))
    kept = run.lowest.kept["optimizer"]["state"][0]["exp_avg"]
    torch.testing.assert_close(kept, moments[0], rtol=0, atol=0)
    assert not torch.equal(run.optimizer.state[next(run.model.parameters())]["exp_avg"], kept)


def test_late_dropout_switches_every_dropout_when_its_time_comes(gpu_data, monkeypatch):
    """--late-dropout 0.5: the tiny preset's dropout (0) holds until the clock reaches the switch,
    then every dropout of the model is 0.5 from the next step on: two training passes on the same
    batch, equal before, differ after. The record says from which step."""
    import types

    from transformer_viz.training.gpu_run import train as train_module

    now = [99.0]
    monkeypatch.setattr(train_module, "time", types.SimpleNamespace(time=lambda: now[0]))
    rc = replace(TINY, late_dropout=0.5)
    logs: list[str] = []
    run = BudgetedRun(rc, gpu_data, logs.append)
    run.t_train, run.late_dropout_at = 0.0, 100.0
    run.model.train()
    batches = token_batches(run.examples, rc.batch_tokens, shuffle=True, seed=3)
    cfg = run.model.cfg
    batch = make_batch([run.examples[i] for i in batches[0]], cfg.pad_id, cfg.bos_id, cfg.eos_id)

    def update(i: int) -> None:
        run_epoch(run.model, run.model, run.optimizer, run.scaler, batches[i:i + 1], run.examples,
                  run.tc, run.state, run.device, False, 1, after_step=run.after_step)

    def two_passes_agree() -> bool:
        with torch.no_grad():
            return torch.equal(run.model(batch.src, batch.tgt_in),
                               run.model(batch.src, batch.tgt_in))

    dropouts = [m for m in run.model.modules() if isinstance(m, torch.nn.Dropout)]
    update(0)
    update(1)
    assert run.late_dropout_record is None and two_passes_agree()
    assert {m.p for m in dropouts} == {0.0}
    now[0] = 100.0
    update(2)
    assert run.late_dropout_record == {"rate": 0.5, "from_step": 4, "after_s": 100.0}
    # the embeddings' (one for both sides), two a layer in the encoder, three in the decoder
    assert len(dropouts) == 1 + 2 * cfg.N + 3 * cfg.N and {m.p for m in dropouts} == {0.5}
    assert not two_passes_agree()
    assert any("dropout 0.5 from step 4 on" in line for line in logs)
    now[0] = 200.0
    update(3)  # once only
    assert run.late_dropout_record["from_step"] == 4


needs_compiler = pytest.mark.skipif(not (shutil.which("g++") or shutil.which("clang++")),
                                    reason="torch.compile on the CPU needs a C++ compiler")


@needs_compiler
@pytest.mark.parametrize("scope", ["layers", "model"])
def test_a_compiled_update_computes_what_the_model_does(gpu_data, scope):
    """--compile: the compiled passes give the model's loss and gradients on batches of other
    shapes than the one it was compiled on (dynamic shapes), dropout off, float32."""
    torch.manual_seed(0)
    rc = replace(TINY, compile=True, compile_scope=scope,
                 model_overrides={"dropout": 0.0, "attn_dropout": 0.0})
    logs: list[str] = []
    run = BudgetedRun(rc, gpu_data, logs.append)
    run.model.train()
    compiled = run.compiled()
    assert (compiled is run.model) == (scope == "layers")
    assert any(" compiled in " in line and f"(scope {scope})" in line for line in logs)
    reference = Transformer(run.model.cfg)
    reference.load_state_dict(run.model.state_dict())
    cfg = reference.cfg
    shapes = set()
    for idx in token_batches(run.examples, 300, shuffle=True, seed=3)[:3]:
        batch = make_batch([run.examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
        shapes.add((*batch.src.shape, batch.tgt_in.size(1)))
        results = []
        for forward, weights in ((compiled, run.model), (reference, reference)):
            weights.zero_grad(set_to_none=True)
            loss = label_smoothed_loss(forward(batch.src, batch.tgt_in), batch.tgt_out, 0.1,
                                       cfg.pad_id)
            loss.backward()
            results.append((loss.detach(), [p.grad for p in weights.parameters()]))
        torch.testing.assert_close(results[0][0], results[1][0], rtol=1e-5, atol=1e-5)
        for got, expected in zip(results[0][1], results[1][1]):
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert len(shapes) == 3


class _Failing:
    """Stands in for torch.compile's result: the model's (or a layer's) own forward for ``works``
    calls, then a compiler's error."""

    def __init__(self, model, works: int) -> None:
        self.model, self.works = model, works

    def __call__(self, *args, **kwargs):
        if self.works <= 0:
            raise RuntimeError("the compiler gave up\n(and said more)")
        self.works -= 1
        return self.model(*args, **kwargs)


@pytest.mark.parametrize("scope", ["layers", "model"])
@pytest.mark.parametrize("works", [0, 3])
def test_a_failed_compile_leaves_the_run_training_uncompiled(gpu_data, monkeypatch, tmp_path,
                                                             works, scope):
    # A forward pass calls each compiled layer forward N times (tiny: N = 2), the model's once.
    calls = works * (preset("tiny").N if scope == "layers" else 1)
    monkeypatch.setattr(torch, "compile", lambda model, **_: _Failing(model, calls))
    logs: list[str] = []
    run = BudgetedRun(replace(TINY, compile=True, compile_scope=scope, minutes=0.03,
                              eval_limit=5), gpu_data, logs.append)
    updates: list[int] = []
    after_step = run.after_step
    run.after_step = lambda state, loss, n: updates.append(state.step) or after_step(state, loss, n)
    run.train()
    assert run.train_model is run.model and run.state.step > works
    assert all("forward" not in layer.__dict__
               for layer in (*run.model.encoder_layers, *run.model.decoder_layers))
    assert updates == list(range(1, run.state.step + 1))  # the failed one not counted
    # Each evaluation row gives the loop's own pace since the one before (TINY: after each epoch).
    paces = [row["updates_per_s"] for row in run.history]
    assert len(paces) >= 2 and all(pace > 0 for pace in paces)
    failed = [line for line in logs if "the compiler gave up" in line]
    assert len(failed) == 1 and "(and said more)" not in failed[0]
    if works:  # the warm-up and two updates compiled, then the failure
        assert "a compiled update failed at step 3" in failed[0]
    else:
        assert "compiling failed" in failed[0]
    assert run.compile_record["compiled"] == bool(works)
    assert run.compile_record["failed"] == "RuntimeError: the compiler gave up"
    manifest = run.send(tmp_path, "command", time.time(), 1.0)
    assert manifest["compile"] == run.compile_record
    said = _compiled(manifest)  # the model card's line
    assert said.startswith("torch.compile" if works else "compiling failed")
    assert "the compiler gave up" in said
    assert _compiled({**manifest, "compile": None}) == "no (eager PyTorch)"
