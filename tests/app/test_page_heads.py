"""The page "What does a head do?" through AppTest: every step, with the numbers of
interpret/explain.py, and heads switched off from the URL."""

from __future__ import annotations

import numpy as np

from tests.support.apptest import SENTENCE, chart, rerun
from tests.support.figures import array
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.ablation import all_heads, parse_heads
from transformer_viz.interpret import explain as X

PAGE = "transformer_viz/app/pages/heads.py"


def test_every_step_shows_the_librarys_numbers(open_app, every_step, tiny_checkpoint):
    at = open_app(PAGE)
    assert at.title[0].value == "What does a head do?"
    found = every_step(at, "heads_step")
    assert {"heads-token-probs", "heads-drops", "heads-lens", "heads-ig", "heads-gxi",
            "heads-cross-head", "heads-cross-mean"} <= set(found)
    run = run_sentence(tiny_checkpoint, SENTENCE)
    model = tiny_checkpoint.model
    numbers = X.heads_run(model, run.src_ids, run.tgt_ids)
    at.session_state["heads_step"] = at.tabs[0].label
    rerun(at)
    bars = chart(at, "heads-drops")["data"][0]
    assert list(bars["x"]) == [str(h) for h in all_heads(model.cfg)]
    np.testing.assert_allclose(array(bars["y"]), numbers.drops, atol=1e-5)
    assert "Choose heads above" in "".join(m.value for m in at.markdown)
    at.session_state["heads_step"] = at.tabs[1].label
    rerun(at)
    lens = chart(at, "heads-lens")["data"][-1]
    np.testing.assert_allclose(array(lens["z"]), np.log10(numbers.lens["rank"]), atol=1e-9)
    at.session_state["heads_step"] = at.tabs[2].label
    rerun(at)
    ig, _ = X.integrated_gradients(model, run.src_ids, run.tgt_ids, X.IG_STEPS)
    shown = chart(at, "heads-ig")["data"][-1]
    np.testing.assert_allclose(array(shown["z"]), ig, rtol=1e-4, atol=1e-6)
    table = at.dataframe[0].value
    assert list(table["most_attributed_ig"]) == [run.src_tokens[i] for i in ig.argmax(-1)]


def test_heads_off_come_from_the_url_and_change_the_translation(make_app, tiny_checkpoint):
    off = "cross.0.0,cross.0.1,cross.1.0,cross.1.1,cross.1.2,cross.1.3"
    at = make_app()
    at.query_params["off"] = off
    at.query_params["step"] = "1"
    rerun(at)
    at.switch_page(PAGE)
    rerun(at)
    assert at.multiselect(key="heads_off").value == off.split(",")
    run = run_sentence(tiny_checkpoint, SENTENCE)
    heads = parse_heads(off, tiny_checkpoint.config)
    _, expected = X.translation_with_heads_off(tiny_checkpoint, run.src_ids, heads)
    texts = [t.value for t in at.text]
    assert texts[-1] == (expected or "(empty)") and texts[-2] == (run.translation or "(empty)")
    numbers = X.heads_run(tiny_checkpoint.model, run.src_ids, run.tgt_ids, heads)
    probs = chart(at, "heads-token-probs")["data"]
    np.testing.assert_allclose(array(probs[1]["y"]), numbers.p_off, atol=1e-6)
    assert not np.allclose(numbers.p_off, numbers.p_base)
    assert at.query_params["off"] == off
    at.multiselect(key="heads_off").set_value([])  # every head on again: the URL forgets them
    rerun(at)
    assert "off" not in at.query_params
    assert at.text[-1].value == (run.translation or "(empty)")


def test_the_coreference_step_offers_the_lecture_sentences(open_app, open_step):
    at = open_step(open_app(PAGE), "heads_step", 3)
    presets = [b for b in at.button if b.key.startswith("heads_preset_")]
    # the tiny checkpoint translates de→en
    assert [b.label for b in presets] == list(X.COREFERENCE["de"])
    presets[2].click()
    rerun(at)
    assert at.text_area(key="sentence").value == list(X.COREFERENCE["de"])[2]
    assert not at.exception
