"""transformer_viz.notebook: each figure is its view's (transformer_viz.views, which the pages draw
through too), on the tiny checkpoint; the figures by name and their errors; the traced tensors by
name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.apptest import SENTENCE
from tests.support.figures import array
from transformer_viz import notebook as tv
from transformer_viz import views
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.plots.payload import browser_figure


def _plain(value):
    """A figure's JSON with every array as a float numpy array ({bdata} or a list of numbers), for
    comparing."""
    if isinstance(value, dict) and "bdata" in value:
        return array(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(v is None or isinstance(v, (int, float))
                                                 and not isinstance(v, bool)
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
    """A figure's JSON (``page``) and a figure as the browser is sent it (plots.payload) have the
    same traces, with the same data, and the same layout but for the title's text."""
    page = json.loads(page) if isinstance(page, str) else page
    mine = json.loads(browser_figure(fig).to_json())
    assert len(page["data"]) == len(mine["data"])
    for theirs, ours in zip(page["data"], mine["data"]):
        np.testing.assert_equal(_plain(ours), _plain(theirs))
    np.testing.assert_equal(_plain(_untitled(mine["layout"])), _plain(_untitled(page["layout"])))


@pytest.fixture(scope="module")
def run(checkpoint_dir):
    return tv.load(checkpoint_dir).run(SENTENCE)


def test_each_figure_is_its_views_figure(run):
    """Run.figure(name, **options) draws views.VIEWS[name] on the run with those options: the
    notebook adds the tokenizer and the beam search, and no figure of its own."""
    to_tokens = run.model.tokens
    beam_run = run.model.run(SENTENCE, beam=3).result
    calls = (("attention", {"layer": 1, "head": 1, "kind": "cross", "part": "q"}, {}),
             ("attention", {"kind": "decoder", "part": "weights"}, {}),
             ("heads", {"layer": 0, "kind": "encoder", "selected": 1}, {}),
             ("positional", {"part": "curves", "dims": [0, 3]}, {}),
             ("embeddings", {"part": "cosine"}, {}),
             ("shapes", {}, {}),
             ("decoding_step", {"step": 2, "part": "topk"}, {"id_to_tokens": to_tokens}),
             ("beam_tree", {"beam": 3}, {"id_to_tokens": to_tokens, "search": lambda k: beam_run}))
    for name, options, supplied in calls:
        spec = views.VIEWS[name](run.result, **options, **supplied)
        assert run.figure(name, **options).to_json() == spec.figure().to_json(), name


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
    assert set(tv.FIGURES) == {"attention", "heads", "positional", "embeddings", "shapes",
                               "decoding_step", "beam_tree"}
    assert (run.figure("attention", layer=0, head=1, kind="cross").data[-1].z.shape
            == (len(run.tgt_tokens),
                len(run.src_tokens)))
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
    # its own beam tree is the one a greedy run draws for K = 3
    beam_run = run.model.run(SENTENCE, beam=3)
    own = beam_run.figure("beam_tree", beam=3)
    assert_same_data(json.loads(browser_figure(own).to_json()), run.figure("beam_tree", beam=3))
    with pytest.raises(ValueError, match="beam=1"):
        beam_run.figure("decoding_step", step=1)
