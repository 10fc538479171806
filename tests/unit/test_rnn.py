"""The recurrent encoder–decoders (rnn.py): shapes and trace names, attention over real positions
only, the bottleneck, greedy decoding against a step-by-step loop, training, and checkpoints."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.conftest import synthetic_pairs
from transformer_viz.checkpoints import (CheckpointError, checkpoint_arch, load_checkpoint,
                                         save_checkpoint)
from transformer_viz.core.trace import Trace
from transformer_viz.models.rnn.config import preset
from transformer_viz.models.rnn.model import RNNSeq2Seq
from transformer_viz.models.rnn.names import trace_names
from transformer_viz.generation.decoding import beam_search, greedy_decode

V = 40


def make_model(attention: bool, seed: int = 0, vocab: int = V) -> RNNSeq2Seq:
    torch.manual_seed(seed)
    model = RNNSeq2Seq(preset("tiny", vocab_size=vocab, attention=attention)).eval()
    with torch.no_grad():  # larger weights than the initialisation, so that every difference shows
        for p in model.parameters():
            p.mul_(3.0)
    return model


def padded_batch():
    """Two sources (5 and 3 real tokens, the second padded), targets of 4 positions."""
    src = torch.tensor([[5, 9, 14, 20, 2], [7, 11, 2, 0, 0]])  # (B, S)
    tgt = torch.tensor([[1, 6, 8, 10], [1, 12, 13, 0]])  # (B, T)
    return src, tgt


@pytest.mark.parametrize("attention", [False, True])
def test_shapes_and_trace_names(attention):
    model = make_model(attention)
    src, tgt = padded_batch()
    trace = Trace()
    logits = model(src, tgt, trace=trace)
    d, B, S, T = model.cfg.d_hidden, 2, 5, 4
    assert logits.shape == (B, T, V)
    assert trace.names() == [name for name, _, _ in trace_names(attention)]
    expected = {"src.token_ids": (B, S), "rnn.encoder.hidden": (B, S, d), "rnn.context": (B, d),
                "tgt.token_ids": (B, T), "rnn.decoder.hidden": (B, T, d),
                "rnn.output": (B, T, model.cfg.d_emb), "logits": (B, T, V), "probs": (B, T, V)}
    if attention:
        expected |= {"rnn.attn.weights": (B, T, S), "rnn.attn.context": (B, T, d)}
    assert trace.shapes() == expected
    # The context is the state at each sentence's last real position; states past the end are 0.
    hidden = trace["rnn.encoder.hidden"]
    assert torch.equal(trace["rnn.context"], torch.stack([hidden[0, 4], hidden[1, 2]]))
    assert float(hidden[1, 3:].abs().max()) == 0.0


def test_padding_does_not_change_a_sentence():
    """A sentence alone and padded in a batch gives the same encoder states and logits at its real
    positions."""
    model = make_model(True)
    src, tgt = padded_batch()
    alone = Trace()
    model(src[1:, :3], tgt[1:, :3], trace=alone)
    batch = Trace()
    model(src, tgt, trace=batch)
    torch.testing.assert_close(batch["rnn.encoder.hidden"][1, :3], alone["rnn.encoder.hidden"][0])
    torch.testing.assert_close(batch["logits"][1, :3], alone["logits"][0])


def test_attention_weights_sum_to_one_over_real_positions():
    model = make_model(True)
    src, tgt = padded_batch()
    trace = Trace()
    model(src, tgt, trace=trace)
    weights = trace["rnn.attn.weights"]  # (B, T, S)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4))
    assert float(weights[1, :, 3:].abs().max()) == 0.0  # <pad> positions get exactly 0
    assert float(weights[1, :, :3].min()) > 0.0
    # c_t = Σ_s α_ts H_s
    torch.testing.assert_close(trace["rnn.attn.context"], weights @ trace["rnn.encoder.hidden"])


@pytest.mark.parametrize("attention", [False, True])
def test_the_bottleneck(attention):
    """Without attention, perturbing every encoder state but the last real one changes nothing
    downstream; with attention it changes the output."""
    model = make_model(attention)
    src, tgt = padded_batch()
    with torch.no_grad():
        states, src_mask, _ = model.encode(src)
        before = model.decode(tgt, states, src_mask)
        perturbed = states.clone()
        perturbed[0, :4] += torch.randn(4, states.size(-1))  # all but position 4, the last real one
        perturbed[1, :2] += torch.randn(2, states.size(-1))  # all but position 2
        after = model.decode(tgt, perturbed, src_mask)
        changed_last = states.clone()
        changed_last[0, 4] += 1.0
        last = model.decode(tgt, changed_last, src_mask)
    assert float((last[0] - before[0]).abs().max()) > 1e-3  # the last state does reach the decoder
    if attention:
        assert float((after - before).abs().max()) > 1e-3
    else:
        assert torch.equal(after, before)


def reference_greedy(model: RNNSeq2Seq, src_row: list[int], max_len: int) -> list[int]:
    """One sentence, one step at a time, by teacher-forced forwards over the growing output (no
    state kept)."""
    out = [model.cfg.bos_id]
    for _ in range(max_len):
        logits = model(torch.tensor([src_row]), torch.tensor([out]))  # (1, t, V)
        nxt = int(logits[0, -1].argmax())
        if nxt == model.cfg.eos_id:
            break
        out.append(nxt)
    return out[1:]


@pytest.mark.parametrize("attention", [False, True])
def test_greedy_equals_a_step_by_step_loop(attention):
    model = make_model(attention, seed=3)
    src, _ = padded_batch()
    with torch.no_grad():
        result = greedy_decode(model, src, max_len=12)
        for b, length in enumerate((5, 3)):
            assert result.tokens[b] == reference_greedy(model, src[b, :length].tolist(), 12)
    assert result.steps and len(result.steps[0].chosen) == 2
    assert all(0.0 < p <= 1.0 for step in result.steps for p in step.chosen_prob)


def test_beam_of_one_is_greedy():
    model = make_model(True, seed=4)
    src, _ = padded_batch()
    greedy = greedy_decode(model, src, max_len=10, record=False)
    beam = beam_search(model, src, beam_size=1, max_len=10, alpha=0.0, record=False)
    assert beam.tokens == greedy.tokens
    assert beam_search(model, src, beam_size=3, max_len=10, record=False).tokens  # runs with K > 1


def test_sequential_steps():
    assert make_model(False).sequential_steps(7, 9) == 16


# --- training and checkpoints ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory, tokenizer):
    """A tiny attention model trained for a few seconds on the synthetic pairs, exported as a
    checkpoint."""
    from transformer_viz.training.rnn import RNNTrainConfig, train_rnn

    root = tmp_path_factory.mktemp("rnn")
    pairs = {"train": synthetic_pairs(400), "val": synthetic_pairs(40, seed=1)}
    tc = RNNTrainConfig(config="tiny",
                        model_overrides={"attention": True, "d_hidden": 48, "d_emb": 32}, epochs=3,
                        batch_tokens=600, tatoeba_copies=0, max_minutes=0, lr=3e-3, amp="off")
    summary = train_rnn(tc, root / "run", out_dir=root / "ckpt", pairs=pairs, tokenizer=tokenizer,
                        progress=False, log=lambda *_: None)
    return root, summary


def test_training_lowers_the_loss_and_exports(trained):
    root, summary = trained
    losses = [row["train_loss"] for row in summary["history"]]
    assert len(losses) == 3 and losses[-1] < losses[0]
    ckpt = load_checkpoint(root / "ckpt")
    assert isinstance(ckpt.model, RNNSeq2Seq) and ckpt.config.attention
    assert checkpoint_arch(root / "ckpt") == "rnn"
    meta = json.loads((root / "ckpt" / "metadata.json").read_text())
    assert meta["history"] == summary["history"] and meta["weights_dtype"] == "float16"
    assert "additive attention" in (root / "ckpt" / "README.md").read_text()


def test_training_resumes(trained, tokenizer):
    from transformer_viz.training.rnn import RNNTrainConfig, train_rnn

    root, summary = trained
    run = root / "resumed"
    shutil.copytree(root / "run", run)
    pairs = {"train": synthetic_pairs(400), "val": synthetic_pairs(40, seed=1)}
    tc = RNNTrainConfig(config="tiny",
                        model_overrides={"attention": True, "d_hidden": 48, "d_emb": 32}, epochs=4,
                        batch_tokens=600, tatoeba_copies=0, max_minutes=0, lr=3e-3, amp="off")
    more = train_rnn(tc, run, pairs=pairs, tokenizer=tokenizer, progress=False, log=lambda *_: None)
    assert [row["epoch"] for row in more["history"]] == [1, 2, 3, 4]
    assert more["history"][:3] == summary["history"]


def test_checkpoint_round_trip(tmp_path, tokenizer):
    model = make_model(False, vocab=len(tokenizer))
    save_checkpoint(tmp_path / "c", model, tokenizer, {"name": "t"})
    loaded = load_checkpoint(tmp_path / "c")
    assert loaded.config == model.cfg
    src, tgt = padded_batch()
    torch.testing.assert_close(loaded.model(src, tgt), model(src, tgt))


def test_bad_rnn_checkpoints_are_refused(tmp_path, tokenizer):
    good = tmp_path / "good"
    save_checkpoint(good, make_model(True, vocab=len(tokenizer)), tokenizer, {"name": "t"})

    def variant(name, edit):
        path = tmp_path / name
        shutil.copytree(good, path)
        edit(path)
        return path

    def set_config(**changes):
        def edit(path):
            data = json.loads((path / "config.json").read_text())
            (path / "config.json").write_text(json.dumps({**data, **changes}))
        return edit

    cases = {
        "shape": (set_config(d_hidden=30), "shape"),
        "attention flag": (set_config(attention=False), "unexpected tensor"),
        "not a bool": (set_config(attention="yes"), "attention must be true or false"),
        "huge": (set_config(d_hidden=10**6), "outside"),
        "unknown field": (set_config(layers=2), "unknown config fields"),
        "vocab": (set_config(vocab_size=len(tokenizer) + 1), "shape"),
    }
    for name, (edit, message) in cases.items():
        with pytest.raises(CheckpointError, match=message):
            load_checkpoint(variant(name.replace(" ", "_"), edit))
    pickled = variant("pickle",
                      lambda p: ((p / "model.safetensors").unlink(),
                                 (p / "model.pt").write_bytes(b"x")))
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(pickled)


def test_cli_translate_and_trace(trained, capsys):
    from transformer_viz.cli import main

    root, _ = trained
    assert main(["translate", "--checkpoint", str(root / "ckpt"), "ein mann im park ."]) == 0
    # one line, the (barely trained) model's translation
    assert capsys.readouterr().out.endswith("\n")
    assert main(["trace", "--checkpoint", str(root / "ckpt"), "ein hund ."]) == 0
    out = json.loads(capsys.readouterr().out)
    shapes, S, T = out["shapes"], len(out["source_tokens"]), len(out["target_tokens"])
    assert shapes["rnn.attn.weights"] == [1, T, S] and shapes["rnn.context"] == [1, 48]


def test_the_time_budget_is_a_hard_limit(tmp_path, tokenizer):
    """A run never starts a batch that would leave too little of the budget to validate (at first a
    validation is assumed to take 2 minutes): with a 3-second budget nothing is trained and nothing
    is exported."""
    from transformer_viz.training.rnn import RNNTrainConfig, train_rnn

    pairs = {"train": synthetic_pairs(100), "val": synthetic_pairs(10, seed=1)}
    tc = RNNTrainConfig(config="tiny", epochs=2, batch_tokens=600, tatoeba_copies=0,
                        max_minutes=0.05, amp="off")
    summary = train_rnn(tc, tmp_path / "run", out_dir=tmp_path / "ckpt", pairs=pairs,
                        tokenizer=tokenizer, progress=False, log=lambda *_: None)
    assert (summary["history"] == [] and summary["steps"] == 0
            and "time budget" in summary["stop_reason"])
    assert not (tmp_path / "ckpt").exists()


def test_the_sidebar_lists_transformers_and_the_rnn_page_its_own(checkpoint_dir, monkeypatch):
    from transformer_viz.app import about, catalogue

    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(checkpoint_dir.parent))
    assert list(catalogue.list_checkpoints()) == ["tiny"]
    assert sorted(catalogue.list_checkpoints("rnn")) == ["rnn-attn-de-en", "rnn-de-en"]
    assert (about.rnn_checkpoints("de", "en")
            == {"plain": "rnn-de-en", "attention": "rnn-attn-de-en"})
    assert about.rnn_checkpoints("en", "de") == {}
