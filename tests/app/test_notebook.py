"""transformer_viz.notebook against the app: every figure the notebook gives is the one its page draws (the
same traces with the same data arrays), on the tiny checkpoint and the same sentence; and the traced
tensors by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.apptest import SENTENCE, chart, charts, rerun
from tests.support.figures import array
from transformer_viz import notebook as tv
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.plots.payload import browser_figure


def _plain(value):
    """A figure's JSON with every array as a float numpy array ({bdata} or a list of numbers), for comparing."""
    if isinstance(value, dict) and "bdata" in value:
        return array(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(v is None or isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in value):
        return array(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _untitled(layout: dict) -> dict:
    # The revision is a hash of the whole figure, title included.
    return {**{k: v for k, v in layout.items() if k != "datarevision"},
            "title": {k: v for k, v in layout.get("title", {}).items() if k != "text"}}


def assert_same_data(page: dict | str, fig) -> None:
    """The page's figure (its JSON) and the notebook's, as the browser is sent it (plots.payload), have the
    same traces, with the same data, and the same layout but for the title's text (which may name the page's
    choices differently)."""
    page = json.loads(page) if isinstance(page, str) else page
    mine = json.loads(browser_figure(fig).to_json())
    assert len(page["data"]) == len(mine["data"])
    for theirs, ours in zip(page["data"], mine["data"]):
        np.testing.assert_equal(_plain(ours), _plain(theirs))
    np.testing.assert_equal(_plain(_untitled(mine["layout"])), _plain(_untitled(page["layout"])))


@pytest.fixture(scope="module")
def run(checkpoint_dir):
    return tv.load(checkpoint_dir).run(SENTENCE)


def test_attention_every_kind_and_part_is_the_attention_pages(open_app, every_step, run):
    at = open_app("transformer_viz/app/pages/attention.py")
    names = {"q": "attention-q", "k": "attention-k", "v": "attention-v", "scores": "attention-scores",
             "mask": "attention-mask", "masked_scores": "attention-masked-scores", "weights": "attention-weights",
             "heads": "attention-heads"}
    for kind, label in tv.KINDS.items():
        at.radio[0].set_value(label)
        rerun(at)
        shown = every_step(at, "attention_step")
        for part, name in names.items():
            figure = run.figure("attention", layer=0, head=0, kind=kind, part=part)
            assert_same_data(shown[name], figure)


def test_heads_are_the_encoder_and_decoder_pages(open_app, open_step, run):
    at = open_app("transformer_viz/app/pages/encoder.py")
    figure = run.figure("heads", layer=0, kind="encoder", selected=0)
    assert_same_data(chart(at, "encoder-head-grid"), figure)
    at = open_step(open_app("transformer_viz/app/pages/decoder.py"), "decoder_step", 1)
    figure = run.figure("heads", layer=0, kind="cross", selected=0)
    assert_same_data(chart(at, "decoder-cross-grid"), figure)


def test_positional_and_embeddings_are_their_pages(open_app, every_step, open_step, run):
    at = open_app("transformer_viz/app/pages/positional.py")
    shown = every_step(at, "positional_step")
    assert_same_data(shown["positional-matrix"], run.figure("positional"))
    assert_same_data(shown["positional-curves"], run.figure("positional", part="curves"))
    assert_same_data(shown["positional-similarity"], run.figure("positional", part="similarity"))
    assert_same_data(shown["positional-sum"], run.figure("positional", part="sum"))
    at = open_step(at, "positional_step", 0)
    at.radio(key="positional_columns").set_value("interleaved, as the model stores them")
    assert_same_data(chart(rerun(at), "positional-matrix"), run.figure("positional", interleaved=True))
    shown = every_step(open_app("transformer_viz/app/pages/tokens.py"), "tokens_step")
    assert_same_data(shown["tokens-embedding"], run.figure("embeddings"))
    assert_same_data(shown["tokens-cosine"], run.figure("embeddings", part="cosine"))


def test_shapes_is_the_shapes_pages(open_app, run):
    at = open_app("transformer_viz/app/pages/shapes.py")
    assert_same_data(chart(at, "shapes-flow-loaded"), run.figure("shapes"))


def test_decoding_steps_and_beam_tree_are_the_decoding_pages(open_app, open_step, run):
    at = open_app("transformer_viz/app/pages/decoding.py")
    for step in (1, 2):
        for part, name in (("topk", "decoding-topk"), ("mask", "decoding-mask"), ("cross", "decoding-cross-row")):
            assert_same_data(chart(at, name), run.figure("decoding_step", step=step, part=part))
        at.button(key="decoding_next").click()
        rerun(at)
    at = open_step(at, "decoding_step", 1)
    assert_same_data(chart(at, "decoding-beam-tree"), run.figure("beam_tree", beam=3))
    assert "decoding-beam-tree" in charts(at)


def test_tensors_by_their_documented_names(run):
    cfg = run.result.config
    S, T = len(run.src_tokens), len(run.tgt_tokens)
    assert run.tensor("src.embedding").shape == (1, S, cfg.d_model)
    assert run.tensor("encoder.0.self_attn.weights").shape == (1, cfg.h, S, S)
    assert run.tensor("decoder.0.cross_attn.weights").shape == (1, cfg.h, T, S)
    assert run.tensor("logits").shape == (1, T, cfg.vocab_size)
    assert isinstance(run.tensor("src.positional"), np.ndarray)
    assert run.tensor_names()[0] == "src.token_ids" and set(run.shapes()) == set(run.tensor_names())
    with pytest.raises(KeyError, match="trace_names.md"):
        run.tensor("encoder.99.out")


def test_figures_by_name_and_plain_errors(run, tmp_path, checkpoint_dir):
    assert set(tv.FIGURES) == {"attention", "heads", "positional", "embeddings", "shapes", "decoding_step",
                               "beam_tree"}
    assert run.figure("attention", layer=0, head=1, kind="cross").data[-1].z.shape == (len(run.tgt_tokens),
                                                                                       len(run.src_tokens))
    for bad, message in ((lambda: run.figure("nope"), "no figure"),
                         (lambda: run.figure("attention", kind="x"), "kinds"),
                         (lambda: run.figure("attention", layer=99), "does not exist"),
                         (lambda: run.figure("heads", layer=0, kind="z"), "kinds")):
        with pytest.raises(ValueError, match=message):
            bad()
    with pytest.raises(CheckpointError, match="no checkpoint"):
        tv.load(tmp_path / "missing")
    for other in ("rnn-de-en", "vit-tiny"):  # the figures are the Transformer's
        with pytest.raises(CheckpointError, match="not an encoder–decoder Transformer"):
            tv.load(checkpoint_dir.parent / other)
    beam_run = run.model.run(SENTENCE, beam=3)  # its own beam tree is the one a greedy run draws for K = 3
    own = beam_run.figure("beam_tree", beam=3)
    assert_same_data(json.loads(browser_figure(own).to_json()), run.figure("beam_tree", beam=3))
    with pytest.raises(ValueError, match="beam=1"):
        beam_run.figure("decoding_step", step=1)
