"""Training the decoder-only model (training/gpt.py) for a few seconds on synthetic sentences:
held-out perplexity falls, the state resumes, the exported checkpoint loads and its card names the
held-out sets."""

from __future__ import annotations

import math

from tests.support.corpora import synthetic_pairs
from transformer_viz.checkpoints import load_checkpoint
from transformer_viz.training.gpt import (GPTTrainConfig, batches, learning_rate, read_sentences,
                                          train_gpt)


def pairs() -> dict:
    data = synthetic_pairs(400)
    return {"train": data[:300], "val": data[300:340], "test_2016_flickr": data[340:360],
            "tatoeba_train": data[360:380], "tatoeba_dev": data[380:400] + data[:5]}


def test_held_out_sentences_never_reach_training():
    sentences = read_sentences("en", pairs=pairs())
    held = {s for group in sentences.held_out.values() for s in group}
    assert held and not held & set(sentences.train)
    assert len(set(sentences.train)) == len(sentences.train)


def test_batches_cover_every_sentence_once_within_the_token_budget():
    examples = [[1] + [5] * n + [2] for n in range(1, 40)] * 3
    out = batches(examples, 64, seed=0)
    assert sorted(i for b in out for i in b) == list(range(len(examples)))
    assert all(max(len(examples[i]) for i in b) * len(b) <= 64 for b in out)


def test_learning_rate_warms_up_then_decays_to_its_floor():
    tc = GPTTrainConfig(lr=1e-3, warmup=10, min_lr_fraction=0.1)
    assert math.isclose(learning_rate(tc, 0, 0.0), 1e-4)
    assert math.isclose(learning_rate(tc, 9, 0.0), 1e-3)
    assert math.isclose(learning_rate(tc, 500, 0.5), 1e-3 * (0.1 + 0.9 * 0.5))
    assert math.isclose(learning_rate(tc, 500, 1.0), 1e-4)


def test_a_short_run_learns_resumes_and_exports(tmp_path):
    tc = GPTTrainConfig(model={"d_model": 32, "d_ff": 64, "h": 4, "N": 2, "max_len": 32,
                               "dropout": 0.0},
                        vocab_size=120, batch_tokens=512, epochs=3, max_minutes=0, lr=3e-3,
                        warmup=5, amp="off")
    logged = []
    summary = train_gpt(tc, tmp_path / "run", out_dir=tmp_path / "gpt", pairs=pairs(),
                        log=logged.append)
    history = summary["history"]
    assert len(history) == 3
    # below a uniform guess
    assert history[-1]["multi30k_val_ppl"] < history[0]["multi30k_val_ppl"] < 120
    ckpt = load_checkpoint(tmp_path / "gpt")
    assert (ckpt.config.arch == "gpt"
            and ckpt.metadata["held_out"]["multi30k_val"]["sentences"] == 40)
    card = (tmp_path / "gpt" / "README.md").read_text()
    assert "Held-out perplexity" in card and "| multi30k_test_2016 | 20 |" in card
    again = train_gpt(GPTTrainConfig(**{**tc.__dict__, "epochs": 4}), tmp_path / "run",
                      pairs=pairs(), log=logged.append)
    assert [h["epoch"] for h in again["history"]] == [1, 2, 3, 4]  # resumed after epoch 3
    assert any("resuming after epoch 3" in line for line in logged)
