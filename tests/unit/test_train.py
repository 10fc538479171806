"""Training: the loss goes down, a resumed run continues exactly, DDP runs on the CPU with gloo."""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.support.corpora import synthetic_pairs
from transformer_viz.text.corpora import DataError, make_batch, read_split, token_batches
from transformer_viz.training.common import TrainState
from transformer_viz.training.translation import (TrainConfig, cooldown_factor,
                                                  learning_rate, rewarmup_factor, train)

ROOT = Path(__file__).resolve().parents[2]


def _config(**kw) -> TrainConfig:
    base = dict(config="tiny", batch_tokens=300, epochs=3, warmup=40, lr_factor=0.3, patience=100,
                average_last=0, amp="off", seed=7, vocab_size=200)
    return TrainConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def pairs():
    return {"train": synthetic_pairs(400, seed=1), "val": synthetic_pairs(20, seed=2)}


def pairs_vocab(run_dir: Path) -> int:
    return json.loads(
        (run_dir / "tokenizer" / "tokenizer.json").read_text())["model"]["vocab"].__len__()


def test_a_few_hundred_steps_drive_the_loss_down(tmp_path, pairs):
    summary = train(_config(epochs=9, batch_tokens=240), tmp_path / "run", pairs=pairs,
                    out_dir=tmp_path / "ckpt", progress=False, log=lambda *_: None)
    history = summary["history"]
    assert summary["steps"] >= 200
    chance = math.log(pairs_vocab(tmp_path / "run"))  # the loss of a uniform guess
    assert history[-1]["train_loss"] < 0.6 * chance
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["val_loss"] < history[0]["val_loss"]
    assert history[-1]["val_bleu"] > history[0]["val_bleu"]
    card = json.loads((tmp_path / "ckpt" / "metadata.json").read_text())
    assert [h["epoch"] for h in card["history"]] == list(range(1, 10))


def resumed_history(tmp_path, pairs, straight: dict, epochs: int, from_epoch: int) -> list:
    """Run b resumed up to ``epochs``: it says where it resumed from and takes the straight run's
    steps. Returns the (straight, resumed) history entries side by side."""
    logs = []
    resumed = train(_config(epochs=epochs), tmp_path / "b", pairs=pairs, progress=False,
                    log=logs.append)
    assert any(f"resuming from epoch {from_epoch}" in line for line in logs)
    assert [h["step"] for h in resumed["history"]] == [h["step"] for h in straight["history"]]
    return list(zip(straight["history"], resumed["history"]))


def assert_same_weights(tmp_path, name: str) -> None:
    wa = load_file(str(tmp_path / "a" / name))
    wb = load_file(str(tmp_path / "b" / name))
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)


def test_a_resumed_run_continues_from_the_saved_step_with_the_same_learning_rate(tmp_path, pairs):
    straight = train(_config(epochs=3), tmp_path / "a", pairs=pairs, progress=False,
                     log=lambda *_: None)
    train(_config(epochs=2), tmp_path / "b", pairs=pairs, progress=False, log=lambda *_: None)
    for a, b in resumed_history(tmp_path, pairs, straight, 3, from_epoch=2):
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-12)
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
    assert_same_weights(tmp_path, "epoch003.safetensors")


class _Stop(Exception):
    """Ends a run in the middle of an epoch, as a killed process would."""


def test_a_run_stopped_in_the_middle_of_an_epoch_resumes_from_its_last_mid_epoch_save(
        tmp_path, pairs, monkeypatch):
    from transformer_viz.training import translation

    straight = train(_config(epochs=2), tmp_path / "a", pairs=pairs, progress=False,
                     log=lambda *_: None)
    saves = []
    real_save = translation.save_train_state

    def save_then_stop(run_dir, model, optimizer, info):
        real_save(run_dir, model, optimizer, info)
        saves.append(info["batches_done"])
        if info["batches_done"] == 5:  # killed right after its fifth mid-epoch save
            raise _Stop

    monkeypatch.setattr(translation, "save_train_state", save_then_stop)
    with pytest.raises(_Stop):
        train(_config(epochs=2, save_every_minutes=1e-9), tmp_path / "b", pairs=pairs,
              progress=False, log=lambda *_: None)
    monkeypatch.setattr(translation, "save_train_state", real_save)
    assert saves == [1, 2, 3, 4, 5]  # a save after every step, within the first epoch
    for a, b in resumed_history(tmp_path, pairs, straight, 2, from_epoch=0):
        # every batch counted once
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
    assert_same_weights(tmp_path, "epoch002.safetensors")


def test_learning_rate_warms_up_linearly_then_decays_with_inverse_sqrt():
    d_model, warmup = 256, 1000
    assert (learning_rate(500, d_model, warmup)
            == pytest.approx(learning_rate(1000, d_model, warmup) / 2))
    peak = max(range(1, 5000), key=lambda s: learning_rate(s, d_model, warmup))
    assert peak == warmup
    assert (learning_rate(4000, d_model, warmup)
            == pytest.approx(learning_rate(1000, d_model, warmup) / 2))


def test_token_batches_respect_the_budget_and_cover_every_example():
    examples = [([5] * (i % 13 + 1) + [2], [6] * (i % 11 + 1)) for i in range(300)]
    batches = token_batches(examples, max_tokens=200, seed=3)
    assert sorted(i for b in batches for i in b) == list(range(300))
    for b in batches:
        batch = make_batch([examples[i] for i in b])
        assert batch.src.numel() + batch.tgt_in.numel() <= 200 or len(b) == 1
        assert (batch.tgt_in[:, 0] == 1).all()
        assert batch.n_tokens == sum(len(examples[i][1]) + 1 for i in b)


def _make_batch_row_by_row(examples, pad_id, bos_id, eos_id):
    """The plain way, one row at a time: the reference for make_batch's masked writes."""
    B = len(examples)
    S = max(len(s) for s, _ in examples)
    T = max(len(t) for _, t in examples) + 1
    src = torch.full((B, S), pad_id, dtype=torch.long)
    tgt_in = torch.full((B, T), pad_id, dtype=torch.long)
    tgt_out = torch.full((B, T), pad_id, dtype=torch.long)
    for b, (s, t) in enumerate(examples):
        src[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        tgt_in[b, : len(t) + 1] = torch.tensor([bos_id] + t)
        tgt_out[b, : len(t) + 1] = torch.tensor(t + [eos_id])
    return src, tgt_in, tgt_out


@pytest.mark.parametrize("pad_id, bos_id, eos_id", [(0, 1, 2), (3, 7, 9)])
def test_make_batch_equals_padding_row_by_row(pad_id, bos_id, eos_id):
    rng = random.Random(5)
    examples = [([rng.randrange(10, 99) for _ in range(rng.randrange(1, 30))],
                 [rng.randrange(10, 99) for _ in range(rng.randrange(0, 25))]) for _ in range(200)]
    for batch_examples in (examples, examples[:1], [([11], [])], [([11, 12], [13]), ([14], [])]):
        batch = make_batch(batch_examples, pad_id, bos_id, eos_id)
        src, tgt_in, tgt_out = _make_batch_row_by_row(batch_examples, pad_id, bos_id, eos_id)
        assert torch.equal(batch.src, src) and torch.equal(batch.tgt_in, tgt_in)
        assert torch.equal(batch.tgt_out, tgt_out)
        assert batch.n_tokens == sum(len(t) + 1 for _, t in batch_examples)


def _write_corpus(directory: Path, pairs_by_split: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for split, pairs in pairs_by_split.items():
        for k, lang in enumerate(("de", "en")):
            with gzip.open(directory / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("".join(p[k] + "\n" for p in pairs))


def test_data_errors_name_the_files_and_catch_misaligned_lines(tmp_path):
    with pytest.raises(DataError, match="train.de.gz"):
        read_split(tmp_path, "train", "de", "en")
    _write_corpus(tmp_path, {"train": synthetic_pairs(5)})
    assert len(read_split(tmp_path, "train", "de", "en")) == 5
    with gzip.open(tmp_path / "train.en.gz", "wt") as f:
        f.write("one\ntwo\n")
    with pytest.raises(DataError, match="5 lines but train.en.gz has 2"):
        read_split(tmp_path, "train", "de", "en")
    (tmp_path / "val.de.gz").write_bytes(b"not gzip")
    (tmp_path / "val.en.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="not a readable gzip"):
        read_split(tmp_path, "val", "de", "en")


def test_distributed_data_parallel_runs_with_gloo_and_two_processes(tmp_path):
    data = tmp_path / "data"
    _write_corpus(data, {"train": synthetic_pairs(200, seed=4), "val": synthetic_pairs(12, seed=5)})
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "transformer_viz", "train", "--data-dir", str(data), "--run-dir",
           str(tmp_path / "run"), "--out", str(tmp_path / "ckpt"), "--config", "tiny",
           "--vocab-size", "200", "--batch-tokens", "300", "--epochs", "2", "--warmup", "20",
           "--average-last", "0", "--amp", "off", "--no-progress"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert len(summary["history"]) == 2
    assert summary["steps"] > 0
    assert all(h["train_loss"] == h["train_loss"] for h in summary["history"])  # not NaN
    assert summary["history"][1]["train_loss"] < summary["history"][0]["train_loss"]
    assert (tmp_path / "ckpt" / "model.safetensors").is_file()


def test_a_warm_start_carries_weights_and_embeddings_across_vocabularies(tmp_path, checkpoint_dir,
                                                                         tiny_checkpoint):
    from transformer_viz.models.transformer.config import preset
    from transformer_viz.models.transformer.model import Transformer
    from transformer_viz.text.tokenizer import train_tokenizer
    from transformer_viz.training.warm_start import warm_start

    # A new vocabulary: the old words plus words the old tokenizer never saw whole.
    texts = [s for s, _ in synthetic_pairs(300)] + ["zebra zebra giraffe ."] * 50
    new_tok = train_tokenizer(texts, vocab_size=220, min_frequency=1)
    model = Transformer(preset("tiny", vocab_size=len(new_tok)))
    warm_start(model, new_tok, checkpoint_dir, log=lambda *_: None)
    old = tiny_checkpoint.model
    assert torch.equal(model.encoder_layers[0].self_attn.w_q.weight,
                       old.encoder_layers[0].self_attn.w_q.weight)
    old_vocab, new_vocab = tiny_checkpoint.tokenizer.get_vocab(), new_tok.get_vocab()
    shared = [t for t in new_vocab if t in old_vocab]
    assert len(shared) > 50
    for token in shared[:20]:
        assert torch.equal(model.src_embed.weight[new_vocab[token]],
                           old.src_embed.weight[old_vocab[token]])
    unseen = next(t for t in new_vocab if t not in old_vocab)
    pieces = tiny_checkpoint.tokenizer(unseen.replace("▁", " "),
                                       add_special_tokens=False)["input_ids"]
    assert torch.allclose(model.src_embed.weight[new_vocab[unseen]],
                          old.src_embed.weight[pieces].mean(dim=0))


def test_continuing_an_exported_checkpoint_keeps_its_tokenizer_step_and_history(tmp_path, pairs):
    first = train(_config(epochs=2), tmp_path / "a", pairs=pairs, out_dir=tmp_path / "ckpt",
                  progress=False, log=lambda *_: None)
    logs = []
    more = train(_config(epochs=3, continue_from=str(tmp_path / "ckpt"), average_last=3),
                 tmp_path / "b", pairs=pairs, out_dir=tmp_path / "ckpt2", progress=False,
                 log=logs.append)
    assert any("continuing from" in line and "epoch 2" in line for line in logs)
    assert (tmp_path / "b" / "tokenizer" / "tokenizer.json").read_text() == \
        (tmp_path / "ckpt" / "tokenizer" / "tokenizer.json").read_text()
    # The schedule goes on: one more epoch of the same batches, counted from the exported step.
    assert [h["epoch"] for h in more["history"]] == [1, 2, 3]
    assert more["history"][:2] == first["history"]
    assert (more["history"][2]["step"]
            == 2 * first["history"][0]["step"] + first["history"][0]["step"])
    # The exported weights stay the ones to beat: the best epoch is 3 only if it scored higher.
    best_before = sum(v for k, v in first["history"][1].items() if k.endswith("_bleu"))
    best_after = sum(v for k, v in more["history"][2].items() if k.endswith("_bleu"))
    assert more["best_epoch"] == (3 if best_after > best_before else 2)
    # The exported weights join the epochs that the final averaging may take in.
    exported = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    start = load_file(str(tmp_path / "b" / "epoch002.safetensors"))
    assert all(torch.allclose(start[k].float(), exported[k].float(), atol=1e-3) for k in exported)


def test_after_continuing_the_learning_rate_ramps_up_again_from_zero():
    tc, state = _config(rewarmup=100), TrainState(step=5000, restart_step=5000)
    factors = []
    for _ in range(150):
        state.step += 1
        factors.append(rewarmup_factor(tc, state))
    assert factors[0] == pytest.approx(0.01) and factors[49] == pytest.approx(0.5)
    assert factors[99:] == [1.0] * 51
    # a run that never continued is not touched
    assert rewarmup_factor(tc, TrainState(step=10)) == 1.0
    assert rewarmup_factor(_config(rewarmup=0), TrainState(step=5001, restart_step=5000)) == 1.0


def test_the_cool_down_brings_the_learning_rate_linearly_to_zero():
    tc = _config(cooldown_start=1000, cooldown_steps=200)
    assert cooldown_factor(tc, 1000) == 1.0
    assert cooldown_factor(tc, 1050) == pytest.approx(0.75)
    assert cooldown_factor(tc, 1100) == pytest.approx(0.5)
    assert cooldown_factor(tc, 1200) == 0.0
    assert cooldown_factor(tc, 1500) == 0.0  # an epoch's last batches past the end change nothing
    # without a cool-down the schedule is untouched
    assert cooldown_factor(_config(), 10**6) == 1.0
    assert cooldown_factor(_config(cooldown_start=1000), 1100) == 1.0


def test_a_run_that_cools_down_stops_moving_its_weights_at_zero(tmp_path, pairs):
    # the rate reaches zero at step 2, so epochs 2 and 3 leave the weights where they were
    tc = _config(epochs=3, average_last=3, cooldown_start=1, cooldown_steps=1)
    summary = train(tc, tmp_path / "run", pairs=pairs, progress=False, log=lambda *_: None)
    assert [h["lr"] for h in summary["history"]] == [0.0, 0.0, 0.0]
    first = load_file(str(tmp_path / "run" / "epoch001.safetensors"))
    last = load_file(str(tmp_path / "run" / "epoch003.safetensors"))
    assert all(torch.equal(first[k], last[k]) for k in first)


def test_train_refuses_half_a_cool_down_in_one_line(tmp_path, capsys):
    from tests.unit.test_cli import run_cli

    run_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, "train", "--run-dir", str(run_dir), "--cooldown-steps", "100")
    assert code == 2 and not out and err.count("\n") == 1
    assert "--cooldown-start and --cooldown-steps go together" in err
    assert not run_dir.exists()  # refused before reading data or writing anything


def test_the_validation_loss_records_no_autograd_graph():
    """validation_loss runs every forward pass without autograd (a graph for the whole val set
    would only cost memory and time), puts the model back in training mode, and returns the
    label-smoothed loss per target token of the batches."""
    from transformer_viz.models.losses import label_smoothed_loss
    from transformer_viz.models.transformer.config import preset
    from transformer_viz.models.transformer.model import Transformer
    from transformer_viz.training.common import validation_loss

    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=40)).train()
    grad_seen: list[bool] = []
    model.register_forward_hook(lambda *_args: grad_seen.append(torch.is_grad_enabled()))
    examples = [([5, 6, 7], [8, 9]), ([10, 11], [12, 13, 14])]
    cfg = model.cfg
    batch = make_batch(examples, cfg.pad_id, cfg.bos_id, cfg.eos_id)
    loss = validation_loss(model, [batch], torch.device("cpu"), 0.1)
    assert grad_seen == [False] and model.training
    model.eval()
    with torch.no_grad():
        total = label_smoothed_loss(model(batch.src, batch.tgt_in), batch.tgt_out, 0.1,
                                    cfg.pad_id, reduction="sum")
    assert loss == pytest.approx(total.item() / batch.n_tokens)
