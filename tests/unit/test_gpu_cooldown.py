"""The budgeted run's cool-down (gpu_run train --cooldown-from): over the last part of the
wall-clock budget the learning rate falls linearly to zero at the deadline, measured in seconds
because the run does not know its step count in advance."""

from __future__ import annotations

import types
from dataclasses import replace

import pytest
import torch

from transformer_viz.text.corpora import token_batches
from transformer_viz.training import translation
from transformer_viz.training.gpu_run import GpuRunConfig, main
from transformer_viz.training.gpu_run.card import _training
from transformer_viz.training.gpu_run.train import BudgetedRun
from transformer_viz.training.schedule import learning_rate
from transformer_viz.training.translation import deadline_cooldown_factor

TINY = GpuRunConfig(preset="tiny", batch_tokens=300, warmup=40, lr_factor=0.3, eval_every=0,
                    threads=1, amp="fp32")


def _quiet(*_args) -> None:
    pass


def test_the_factor_is_one_until_the_last_seconds_then_falls_linearly_to_zero():
    lefts = (500.0, 100.0, 75.0, 10.0, 0.0, -1.0)
    assert [deadline_cooldown_factor(left, 100.0) for left in lefts] \
        == pytest.approx([1.0, 1.0, 0.75, 0.1, 0.0, 0.0])
    assert deadline_cooldown_factor(None, 100.0) == 1.0  # no deadline: no cool-down
    assert deadline_cooldown_factor(5.0, 0.0) == 1.0  # none asked for


def test_the_budget_fraction_becomes_the_last_seconds_of_the_budget():
    assert replace(TINY, minutes=8.5, cooldown_from=0.7).cooldown_seconds == pytest.approx(153.0)
    assert TINY.cooldown_seconds == 0.0


def test_the_run_s_learning_rate_falls_to_zero_at_its_deadline(gpu_data, monkeypatch):
    """run_epoch under a clock that moves one second at each reading: the schedule's rate until
    the last 10 of 30 seconds, then that rate times the seconds left over 10, down to near 0."""
    run = BudgetedRun(replace(TINY, minutes=0.5, cooldown_from=2 / 3), gpu_data, _quiet)
    assert run.rc.cooldown_seconds == pytest.approx(10.0)
    clock = {"now": 1000.0}

    def tick() -> float:
        clock["now"] += 1.0
        return clock["now"]

    lrs: list[float] = []

    def after(state, loss, n_tokens) -> bool:
        lrs.append(run.optimizer.param_groups[0]["lr"])
        return False

    batches = token_batches(run.examples, run.tc.batch_tokens, shuffle=True, seed=1) * 20
    monkeypatch.setattr(translation, "time", types.SimpleNamespace(time=tick))
    run.model.train()
    translation.run_epoch(run.model, run.model, run.optimizer, run.scaler, batches, run.examples,
                          run.tc, run.state, run.device, False, 1, deadline=1000.0 + 30,
                          after_step=after, cooldown_seconds=run.rc.cooldown_seconds)
    d_model = run.model.cfg.d_model
    ratios = [lr / learning_rate(step, d_model, 40, 0.3) for step, lr in enumerate(lrs, 1)]
    # The pass reads the clock once as it starts (t = 1001), then twice a step: at the deadline
    # check (t = 1002, 1004, ...) and for its rate (t = 1003, 1005, ...), so step k's rate sees
    # 29 - 2k seconds left, and the check at t = 1030 ends the pass before step 15.
    assert len(lrs) == 14
    expected = [min(1.0, (29 - 2 * k) / 10) for k in range(1, 15)]
    assert ratios == pytest.approx(expected, rel=1e-9)
    assert ratios[:9] == pytest.approx([1.0] * 9) and ratios[-1] == pytest.approx(0.1)
    assert all(torch.isfinite(p).all() for p in run.model.parameters())


@pytest.mark.parametrize("flag,value", [("--cooldown-from", "1.0"), ("--cooldown-from", "-0.1"),
                                        ("--average-from", "1.5"),
                                        ("--rollback-above", "-0.5"),
                                        ("--late-dropout", "1.0"),
                                        ("--late-dropout-from", "1.0")])
def test_a_fraction_outside_the_budget_is_refused_in_one_line(gpu_data, tmp_path, capsys, flag,
                                                              value):
    code = main(["train", "--direction", "de-en", "--preset", "tiny", flag, value, "--data",
                 str(gpu_data), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and flag in err
    assert not (tmp_path / "out").exists()


def test_the_card_names_the_cool_down_only_where_there_was_one():
    run = {"lr_factor": 0.447, "warmup": 800, "label_smoothing": 0.1, "amp": "bf16",
           "minutes": 8.5, "cooldown_from": 0.7}
    manifest = {"run": run, "batch_tokens_used": 25000, "steps": 4000, "epochs": 3,
                "command": "train_base.sh"}
    cfg = types.SimpleNamespace(dropout=0.3)
    cooled = _training(manifest, cfg, ["join"])["recipe"]
    assert "from 70% of the 8.5-minute budget on, the learning rate falling linearly" in cooled
    del run["cooldown_from"]  # a manifest written before the flag existed
    assert "falling linearly" not in _training(manifest, cfg, ["join"])["recipe"]


def test_the_card_names_each_rollback():
    run = {"lr_factor": 0.447, "warmup": 800, "label_smoothing": 0.1, "amp": "bf16",
           "minutes": 8.5, "rollback_above": 0.5}
    manifest = {"run": run, "batch_tokens_used": 25000, "steps": 4000, "epochs": 3,
                "command": "train_base.sh",
                "history": [{"step": 500}, {"step": 1000, "rolled_back_to": 500}]}
    cfg = types.SimpleNamespace(dropout=0.3)
    recipe = _training(manifest, cfg, ["join"])["recipe"]
    assert "by more than 0.5" in recipe and "(at step 1000 to step 500)" in recipe
    manifest["history"].pop()
    assert "(never needed)" in _training(manifest, cfg, ["join"])["recipe"]
    del run["rollback_above"]  # a manifest written before the flag existed
    assert "put back" not in _training(manifest, cfg, ["join"])["recipe"]


def test_the_run_s_own_loop_cools_down_to_its_deadline(gpu_data):
    """BudgetedRun.train hands its cool-down to the loop: a 3-second run cooling from half-time
    starts at the schedule's rate and ends far below it, never rising again once it fell."""
    run = BudgetedRun(replace(TINY, minutes=0.05, cooldown_from=0.5), gpu_data, _quiet)
    ratios: list[float] = []
    after_step = run.after_step

    def after(state, loss, n_tokens) -> bool:
        schedule = learning_rate(state.step, run.model.cfg.d_model, 40, 0.3)
        ratios.append(run.optimizer.param_groups[0]["lr"] / schedule)
        return after_step(state, loss, n_tokens)

    run.after_step = after
    run.train()
    assert len(ratios) >= 5 and ratios[0] == pytest.approx(1.0) and ratios[-1] < 0.5
    falling = ratios[next(i for i, r in enumerate(ratios) if r < 1):]
    assert all(b <= a for a, b in zip(falling, falling[1:]))


def test_the_card_names_the_late_dropout_where_there_was_one():
    run = {"lr_factor": 0.447, "warmup": 800, "label_smoothing": 0.1, "amp": "bf16",
           "minutes": 8.5, "late_dropout_from": 0.25}
    manifest = {"run": run, "batch_tokens_used": 25000, "steps": 4000, "epochs": 3,
                "command": "train_base.sh",
                "late_dropout": {"rate": 0.3, "from_step": 1234, "after_s": 127.5}}
    cfg = types.SimpleNamespace(dropout=0.1)
    recipe = _training(manifest, cfg, ["join"])["recipe"]
    assert "dropout 0.1," in recipe
    assert "; dropout 0.3 from step 1234 on (25% of the budget)" in recipe
    manifest["late_dropout"] = None  # off
    assert "from step" not in _training(manifest, cfg, ["join"])["recipe"]
    del manifest["late_dropout"]  # a manifest written before the flag existed
    assert "from step" not in _training(manifest, cfg, ["join"])["recipe"]
