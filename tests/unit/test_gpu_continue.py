"""Going on from a direction's returned weights in a later GPU session (gpu_run train --init-from,
tools/gpu/train_base.sh --directions): the exact weights loaded, the step count and the schedule
going on with the learning rate ramped up again, the hashes refused, the compressed corpora, and
the whole way on the CPU to a checkpoint whose card lists both sessions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from tests.support.corpora import synthetic_pairs
from transformer_viz.checkpoints.compact import dequantise, read_shards
from transformer_viz.text.corpora import token_batches
from transformer_viz.training.gpu_run import GpuRunConfig, Prepared, join, main, prepare
from transformer_viz.training.gpu_run.resume import load_init
from transformer_viz.training.gpu_run.train import BudgetedRun
from transformer_viz.training.schedule import learning_rate

REPO = Path(__file__).resolve().parents[2]
TINY = GpuRunConfig(preset="tiny", batch_tokens=300, warmup=40, lr_factor=0.3, eval_limit=5,
                    final_limit=5, threads=1)


def _quiet(*_args) -> None:
    pass


def _pairs() -> dict[str, list[tuple[str, str]]]:
    return {"train": synthetic_pairs(300, seed=1), "val": synthetic_pairs(30, seed=2),
            "tatoeba_train": synthetic_pairs(200, seed=3),
            "tatoeba_dev": synthetic_pairs(25, seed=4)}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prepared") / "data"
    prepare(out, pairs=_pairs(), vocab_size=120, log=_quiet, compress=True)
    return out


def _steps(run: BudgetedRun, n: int) -> list[float]:
    """n updates of the run's own loop, each counted by the run's own after_step; the learning
    rate of each."""
    from transformer_viz.training.translation import run_epoch

    lrs: list[float] = []

    def after(state, loss, n_tokens) -> bool:
        run.after_step(state, loss, n_tokens)
        lrs.append(run.optimizer.param_groups[0]["lr"])
        return len(lrs) == n

    batches = token_batches(run.examples, run.tc.batch_tokens, shuffle=True, seed=1)
    run.model.train()
    run_epoch(run.model, run.model, run.optimizer, run.scaler, batches, run.examples, run.tc,
              run.state, run.device, False, 1, after_step=after)
    return lrs


def test_compressed_corpora_read_back_the_same_ids_under_the_same_hash(data, tmp_path):
    plain = tmp_path / "plain"
    prepare(plain, pairs=_pairs(), vocab_size=120, log=_quiet)
    xz = data / "corpora.safetensors.xz"
    assert xz.is_file() and not (data / "corpora.safetensors").exists()
    packed, unpacked = Prepared.load(data), Prepared.load(plain)
    assert packed.ids == unpacked.ids and packed.manifest["sha256"] == unpacked.manifest["sha256"]
    assert xz.stat().st_size < (plain / "corpora.safetensors").stat().st_size


def test_init_from_loads_the_returned_weights_and_goes_on_with_the_schedule(data, tmp_path):
    torch.manual_seed(0)
    first = BudgetedRun(TINY, data, _quiet)
    _steps(first, 7)
    previous = first.send(tmp_path / "first", "command 1", time.time(), 1.0)
    assert previous["steps"] == previous["steps_total"] == 7

    rc = replace(TINY, init_from=str(tmp_path / "first"), rewarmup=4)
    run = BudgetedRun(rc, data, _quiet, load_init(rc.init_from, "de-en"))
    returned = dequantise(read_shards(tmp_path / "first", previous["files"]))
    state = run.model.state_dict()
    assert all(torch.equal(state[name], tensor) for name, tensor in returned.items())
    assert run.state.step == run.state.restart_step == 7 and run.state.epoch == previous["epochs"]
    lrs = _steps(run, 6)
    # Ramped up linearly over 4 steps to the schedule's value at step 7 + 4, then the schedule.
    expected = [learning_rate(7 + k, run.model.cfg.d_model, 40, 0.3) * min(1.0, k / 4)
                for k in range(1, 7)]
    assert lrs == pytest.approx(expected, rel=1e-12)

    manifest = run.send(tmp_path / "second", "command 2", time.time(), 1.0)
    assert (manifest["steps"], manifest["steps_total"]) == (6, 13)
    assert manifest["init_from"]["steps"] == 7
    assert manifest["init_from"]["files"] == previous["files"]
    assert [s["command"] for s in manifest["sessions"]] == ["command 1", "command 2"]
    assert [s["steps_total"] for s in manifest["sessions"]] == [7, 13]


def test_init_from_refuses_a_changed_shard_in_one_line(data, tmp_path, capsys):
    run = BudgetedRun(TINY, data, _quiet)
    run.send(tmp_path / "init", "command 1", time.time(), 1.0)
    shard = next((tmp_path / "init").glob("*.safetensors"))
    content = bytearray(shard.read_bytes())
    content[-1] ^= 1
    shard.write_bytes(bytes(content))
    code = main(["train", "--direction", "de-en", "--preset", "tiny", "--init-from",
                 str(tmp_path / "init"), "--data", str(data), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "SHA-256" in err
    assert not (tmp_path / "out").exists()  # refused before anything was trained or written


def test_init_from_may_change_dropout_but_not_a_shape(data, tmp_path, capsys):
    first = BudgetedRun(TINY, data, _quiet)
    first.send(tmp_path / "init", "command 1", time.time(), 1.0)
    init = str(tmp_path / "init")
    rc = replace(TINY, init_from=init, model_overrides={"dropout": 0.3, "attn_dropout": 0.1})
    run = BudgetedRun(rc, data, _quiet, load_init(init, "de-en"))
    assert (run.model.cfg.dropout, run.model.cfg.attn_dropout) == (0.3, 0.1)
    state = first.model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in run.model.state_dict().items())
    code = main(["train", "--direction", "de-en", "--preset", "tiny", "--init-from", init,
                 "--model-overrides", '{"d_ff": 72}', "--minutes", "0.01", "--data", str(data),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "['d_ff']" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_average_of_the_last_evaluations_is_scored_and_the_better_is_sent(data, tmp_path):
    from transformer_viz.checkpoints import state_dict_for_saving
    from transformer_viz.checkpoints.compact import quantise

    torch.manual_seed(0)
    run = BudgetedRun(replace(TINY, average_from=0.5, minutes=1.0), data, _quiet)

    def steps_then_evaluate(n: int) -> dict[str, torch.Tensor]:
        _steps(run, n)
        run.evaluate()
        return {k: v.detach().float().clone() for k, v in state_dict_for_saving(run.model).items()}

    run.t_train = time.time() - 20  # 20 s of a 60 s budget: before the averaging starts at 30 s
    steps_then_evaluate(5)
    assert run.average_steps == []
    run.t_train = time.time() - 40
    snapshots = [steps_then_evaluate(5) for _ in range(3)]
    assert run.average_steps == [10, 15, 20]

    manifest = run.send(tmp_path / "out", "command", time.time(), 1.0)
    selection = manifest["selection"]
    bleu = selection["mean_dev_bleu"]
    assert set(bleu) == {"last", "average"} and bleu[selection["sent"]] == max(bleu.values())
    as_sent = manifest["dev_scores_as_sent"]
    assert sum(v["bleu"] for v in as_sent.values()) / 2 == pytest.approx(bleu[selection["sent"]])
    expected = (snapshots[-1] if selection["sent"] == "last" else
                {k: sum(s[k] for s in snapshots) / 3 for k in snapshots[0]})
    returned = dequantise(read_shards(tmp_path / "out", manifest["files"]))
    assert all(torch.equal(returned[k], v) for k, v in dequantise(quantise(expected)).items())
    # The average is not the last weights: the run did move between its points.
    average = {k: sum(s[k] for s in snapshots) / 3 for k in snapshots[0]}
    assert any(not torch.equal(average[k], snapshots[-1][k]) for k in average)


def test_the_card_says_which_weights_were_sent():
    from transformer_viz.training.gpu_run.card import _history_note, _selected_weights

    run = {"final_limit": 1000, "eval_every": 500, "eval_limit": 300}
    average = {"run": run, "selection": {"sent": "average", "average_steps": [4000, 4500, 4600],
                                         "mean_dev_bleu": {"last": 30.5, "average": 31.25}}}
    text = _selected_weights(average)
    assert text.startswith("the average of the weights at steps 4000, 4500, 4600: ")
    assert "(mean greedy dev BLEU 30.50)" in text and "(31.25)" in text
    assert "selected_weights" in _history_note(average)
    for manifest in ({"run": run}, {"run": run, "selection": {
            "sent": "last", "average_steps": [4600], "mean_dev_bleu": {"last": 30.5}}}):
        assert _selected_weights(manifest) == "the last (no selection: one fixed budget)"
        assert "the last (no selection)" in _history_note(manifest)


def test_the_card_shows_a_dash_for_the_loaded_weights_training_loss():
    from transformer_viz.checkpoints.cards import model_card
    from transformer_viz.models.transformer.config import ModelConfig

    history = [{"epoch": 22, "step": 4109, "train_loss": 2.23, "val_loss": 3.275, "val_bleu": 22.36,
                "tatoeba_dev_bleu": 48.7, "elapsed_s": 451.0},
               {"epoch": 22, "step": 4109, "val_loss": 3.275, "val_bleu": 22.13,
                "tatoeba_dev_bleu": 48.52, "elapsed_s": 451.0, "before_update": True}]
    card = model_card(ModelConfig(), {"name": "x", "history": history})
    assert "| 22 | 4109 | 2.230 | 3.275 | 22.36 | 48.70 | 7.5 |" in card
    assert "| 22 | 4109 | — | 3.275 | 22.13 | 48.52 | 7.5 |" in card
    assert "nan" not in card


@pytest.mark.slow
def test_one_direction_then_going_on_from_it_then_join(data, tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    script = [str(REPO / "tools/gpu/train_base.sh"), "--directions", "de-en", "--preset", "tiny",
              "--data", str(data), "--batch-tokens", "300", "--minutes", "0.1"]
    flags = ["--", "--eval-every", "20", "--eval-limit", "5", "--final-limit", "10", "--warmup",
             "40", "--lr-factor", "0.3", "--threads", "1"]

    def train(name: str, *extra: str) -> dict:
        done = subprocess.run(script + ["--work", str(tmp_path / f"work-{name}"), *extra] + flags,
                              env={**env, "OUT": str(tmp_path / name)}, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return json.loads((tmp_path / name / "de-en.manifest.json").read_text())

    first = train("out1")
    assert sorted(p.name for p in (tmp_path / "out1").iterdir()) == [
        "de-en.manifest.json", "de-en.weights-1-of-1.safetensors", "train.log"]
    assert first["run"]["memory_fraction"] == 0.9 and first["steps"] > 0
    log = (tmp_path / "out1" / "train.log").read_text()
    logged = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    # The learning rate is logged to three significant digits (about 3e-4 on the GPU), not rounded
    # to three decimals.
    assert [row["lr"] for row in logged] == [float(f"{row['lr']:.3g}") for row in first["history"]]
    assert join(tmp_path / "out1", data, tmp_path / "ckpt1", log=_quiet)["de-en"]["written"]
    losses = subprocess.run([sys.executable, "-m", "transformer_viz.training.gpu_run", "losses",
                             str(tmp_path / "ckpt1" / "base-de-en"), "--data", str(data)],
                            env=env, capture_output=True, text=True, timeout=120)
    assert losses.returncode == 0, losses.stderr[-3000:]
    measured = dict(item.rsplit(" ", 1) for item in losses.stdout.split(": ", 1)[1].split(", "))
    assert list(measured) == ["multi30k_train", "val", "tatoeba_train", "tatoeba_dev"]
    # The whole val set (30 pairs) as the run measured it at its end, before the int8 rounding.
    assert float(measured["val"]) == pytest.approx(first["history"][-1]["val_loss"], abs=0.05)
    shutil.copytree(tmp_path / "out1", tmp_path / "gpu-init" / "de-en")
    second = train("out2", "--init-from", str(tmp_path / "gpu-init" / "de-en"))
    start = first["steps"]
    assert second["init_from"]["steps"] == start
    assert second["steps_total"] == start + second["steps"]
    loaded = second["history"][0]  # the returned weights scored as loaded, before any update
    assert loaded["step"] == start and loaded["before_update"]
    assert all(row["step"] > start for row in second["history"][1:])
    reports = join(tmp_path / "out2", data, tmp_path / "ckpts", log=_quiet,
                   commands=["train_base.sh --directions de-en --init-from gpu-init/de-en"])
    assert reports["de-en"]["written"]
    card = (tmp_path / "ckpts" / "base-de-en" / "README.md").read_text()
    assert "session 1:" in card and "session 2:" in card
    assert f"steps_total: {start + second['steps']}" in card
    meta = json.loads((tmp_path / "ckpts" / "base-de-en" / "metadata.json").read_text())
    assert [row["step"] for row in meta["history"]] == (
        [row["step"] for row in first["history"]] + [row["step"] for row in second["history"]])
