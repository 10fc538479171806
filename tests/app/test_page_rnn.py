"""The "Before the Transformer: RNNs" page through AppTest, on tiny recurrent checkpoints and the
tiny Transformer, all built in a temporary directory (no data)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from tests.support.apptest import (OTHER_SENTENCE, SENTENCE, change_sentence, chart, charts,
                                   open_page)
from tests.support.figures import array, z_of
from transformer_viz.checkpoints import load_checkpoint, save_checkpoint
from transformer_viz.engine import run_sentence
from transformer_viz.models.rnn.config import preset
from transformer_viz.models.rnn.model import RNNSeq2Seq

STEP_CHARTS = [{"rnn-encoder-states", "rnn-context"},
               {"rnn-unrolled", "rnn-attn-unrolled", "rnn-decoder-states"},
               {"rnn-alignment", "rnn-transformer-cross"}, {"rnn-steps", "rnn-timing"},
               {"rnn-bleu-by-length"}]


def buckets(values: list[float]) -> dict:
    labels = ["≤ 10", "11–15", "16–20", "21–25", "> 25"]
    return {"split": "test_2016_flickr", "decoding": "greedy", "bleu": values[0],
            "buckets": [{"bucket": b, "sentences": 10 * (i + 1), "bleu": v}
                        for i, (b, v) in enumerate(zip(labels, values))]}


@pytest.fixture(scope="module")
def rnn_root(tmp_path_factory, checkpoint_dir, tokenizer):
    """A checkpoint root: the tiny Transformer (de→en) and two tiny RNNs, without and with
    attention."""
    root = tmp_path_factory.mktemp("rnn-root")
    # Names of their own: the app caches checkpoints and metadata by name, and the other tests'
    # "tiny", "rnn-de-en" and "rnn-attn-de-en" have no BLEU by length.
    shutil.copytree(checkpoint_dir, root / "tiny-buckets")
    for name, attention, seed, values in (("rnn-b-de-en", False, 5, [20.0, 15.0, 10.0, 8.0, 5.0]),
                                          ("rnn-attn-b-de-en", True, 6,
                                           [25.0, 24.0, 23.0, 22.0, 21.0])):
        torch.manual_seed(seed)
        model = RNNSeq2Seq(preset("tiny", vocab_size=len(tokenizer), attention=attention)).eval()
        save_checkpoint(root / name, model, tokenizer,
                        {"name": name, "src_lang": "de", "tgt_lang": "en",
                         "bleu_by_length": buckets(values)})
    meta = json.loads((root / "tiny-buckets" / "metadata.json").read_text())
    meta["bleu_by_length"] = buckets([30.0, 31.0, 29.0, 30.0, 28.0])
    (root / "tiny-buckets" / "metadata.json").write_text(json.dumps(meta))
    return root


@pytest.fixture()
def rnn_app(make_app, rnn_root, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(rnn_root))

    def open_(sentence: str = SENTENCE):
        return open_page(make_app(sentence), "transformer_viz/app/pages/rnn.py")

    return open_


def test_rnn_page(rnn_app, rnn_root, every_step, open_step):
    at = rnn_app()
    assert at.title[0].value == "Before the Transformer: RNNs"
    assert set(every_step(at, "rnn_step")) == set().union(*STEP_CHARTS)
    # The sidebar offers the Transformer only: the recurrent checkpoints are the page's own.
    # one model: the tiny Transformer
    assert at.selectbox(key="checkpoint").options == ["German → English"]
    plain = run_sentence(load_checkpoint(rnn_root / "rnn-b-de-en"), SENTENCE)
    attn = run_sentence(load_checkpoint(rnn_root / "rnn-attn-b-de-en"), SENTENCE)
    shown = [t.value for t in at.text]  # the three translations, as plain text
    assert plain.translation in shown and attn.translation in shown

    at = open_step(at, "rnn_step", 0)
    states = z_of([t for t in chart(at, "rnn-encoder-states")["data"]
                   if t["type"] == "heatmap"][-1])
    np.testing.assert_allclose(states, plain.trace["rnn.encoder.hidden"][0].numpy(), atol=1e-6)
    context = z_of(chart(at, "rnn-context")["data"][-1])[0]
    np.testing.assert_allclose(context, states[-1], atol=1e-6)  # c is the last encoder state

    at = open_step(at, "rnn_step", 2)
    alignment = z_of([t for t in chart(at, "rnn-alignment")["data"] if t["type"] == "heatmap"][-1])
    np.testing.assert_allclose(alignment, attn.trace["rnn.attn.weights"][0].numpy(), atol=1e-6)
    np.testing.assert_allclose(alignment.sum(-1), 1.0, atol=1e-6)

    at = open_step(at, "rnn_step", 3)
    steps = chart(at, "rnn-steps")
    S, T = len(plain.src_ids), len(plain.tgt_ids)
    # the tiny Transformer has N = 2
    assert [list(array(t["y"])) for t in steps["data"]] == [[S, 2], [T, 2]]
    timing = chart(at, "rnn-timing")
    assert [t["name"] for t in timing["data"]] == ["RNN", "RNN + attention", "Transformer"]
    for line in timing["data"]:  # the lengths below the tiny models' max_len of 64
        assert list(array(line["x"])) == [5, 10, 20, 40] and array(line["y"]).min() > 0

    at = open_step(at, "rnn_step", 4)
    lines = {t["name"]: list(array(t["y"])) for t in chart(at, "rnn-bleu-by-length")["data"]}
    assert lines == {"RNN (keeps 25 %)": [20.0, 15.0, 10.0, 8.0, 5.0],
                     "RNN + attention (keeps 84 %)": [25.0, 24.0, 23.0, 22.0, 21.0],
                     "Transformer (keeps 93 %)": [30.0, 31.0, 29.0, 30.0, 28.0]}


def test_another_sentence_gives_other_data(rnn_app, open_step):
    at = open_step(rnn_app(), "rnn_step", 0)
    before = z_of(chart(at, "rnn-encoder-states")["data"][-1])
    after = z_of(chart(change_sentence(at, OTHER_SENTENCE), "rnn-encoder-states")["data"][-1])
    assert before.shape != after.shape or not np.allclose(before, after)
    at = open_step(at, "rnn_step", 2)
    assert "rnn-alignment" in charts(at)


def test_a_recurrent_run_is_traced_only_for_the_steps_that_show_its_trace(rnn_app, open_step,
                                                                          monkeypatch):
    # The teacher-forced pass costs about as much as decoding: the first step shows the plain
    # model's encoder states only, so the attention model's run, and the Transformer's, are traced
    # only once the Attention step is opened.
    from transformer_viz import engine
    from transformer_viz.app import loaders

    traced = []
    real = engine.retraced
    kind = {False: "plain", True: "attention"}
    monkeypatch.setattr(engine, "retraced", lambda ckpt, run, causal=True: traced.append(
        kind[ckpt.model.attn is not None] if hasattr(ckpt.model, "attn") else "transformer")
        or real(ckpt, run, causal))
    for cached in (loaders.get_rnn_run, loaders.get_run, loaders.get_translation):
        cached.clear()
    # opened on the first step, then steps and time: no trace shown
    at = open_step(rnn_app(), "rnn_step", 3)
    assert traced == ["plain"]
    assert loaders.get_rnn_run("rnn-attn-b-de-en", SENTENCE).trace is None
    at = open_step(at, "rnn_step", 2)
    assert traced == ["plain", "attention", "transformer"]
    assert "rnn-alignment" in charts(at)
    loaders.get_rnn_run.clear()


def test_without_rnn_checkpoints_the_page_says_so(make_app, checkpoint_dir, monkeypatch, tmp_path):
    shutil.copytree(checkpoint_dir, tmp_path / "tiny")  # the Transformer alone
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(tmp_path))
    at = open_page(make_app(), "transformer_viz/app/pages/rnn.py")
    assert any("recurrent de→en checkpoints" in w.value for w in at.warning)


def test_english_to_german_runs_the_german_example(make_app, rnn_root, monkeypatch,
                                                   tmp_path, open_step):
    """The RNNs translate German → English only: with the sidebar on English → German the page says
    so and runs "Komm her bitte." instead of the (English) sentence."""
    root = tmp_path / "root"
    shutil.copytree(rnn_root, root)
    shutil.copytree(rnn_root / "tiny-buckets", root / "tiny-en-de")
    meta = json.loads((root / "tiny-en-de" / "metadata.json").read_text())
    (root / "tiny-en-de" / "metadata.json").write_text(json.dumps({**meta, "src_lang": "en",
                                                                   "tgt_lang": "de"}))
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(root))
    at = open_page(make_app("a man plays in the park ."), "transformer_viz/app/pages/rnn.py")
    at.sidebar.selectbox(key="checkpoint").set_value("tiny-en-de")
    at = open_step(at, "rnn_step", 0)
    assert any("German → English only" in info.value and "Komm her bitte." in info.value
               for info in at.info)
    example = run_sentence(load_checkpoint(rnn_root / "rnn-b-de-en"), "Komm her bitte.")
    states = z_of([t for t in chart(at, "rnn-encoder-states")["data"]
                   if t["type"] == "heatmap"][-1])
    np.testing.assert_allclose(states, example.trace["rnn.encoder.hidden"][0].numpy(), atol=1e-6)
