"""The Decoding page through AppTest: greedy decoding step by step (Next/Previous) and the beam
tree."""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.support.apptest import OTHER_SENTENCE, SENTENCE, change_sentence, chart, rerun
from tests.support.figures import array, traces, z_of
from transformer_viz.engine import run_sentence


def step_text(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Step "))


def allowed_cells(at: AppTest) -> np.ndarray:
    return z_of(traces(chart(at, "decoding-mask"), "may attend")[0])


def test_decoding_next_and_previous(open_app, tiny_checkpoint, open_step):
    at = open_app("transformer_viz/app/pages/decoding.py")
    assert at.title[0].value == "Decoding"
    run = run_sentence(tiny_checkpoint, SENTENCE)
    n = min(len(run.decoding.steps), len(run.tgt_ids))
    assert n >= 2
    assert step_text(at) == f"**Step 1 of {n}**"
    first_topk = chart(at, "decoding-topk")["data"]
    assert allowed_cells(at).shape == (1, 1)
    assert any("a single cell, <s> attending to itself" in c.value for c in at.caption)
    # the top bar's label is not cut
    assert chart(at, "decoding-topk")["data"][0]["cliponaxis"] is False
    at.button(key="decoding_next").click()
    rerun(at)
    assert step_text(at) == f"**Step 2 of {n}**"
    assert allowed_cells(at).shape == (2, 2)
    bars = chart(at, "decoding-topk")["data"][0]
    np.testing.assert_allclose(array(bars["x"]), run.decoding.steps[1].top_probs[0], atol=1e-6)
    at.button(key="decoding_prev").click()
    rerun(at)
    assert step_text(at) == f"**Step 1 of {n}**"
    assert chart(at, "decoding-topk")["data"] == first_topk
    assert at.button(key="decoding_prev").disabled
    # beam search: a tree with K beams per step (a column each: the steps run down the figure, so
    # that a phone's tokens stay apart), and another width gives another tree
    tree = chart(open_step(at, "decoding_step", 1), "decoding-beam-tree")
    assert tree["layout"]["xaxis"]["ticktext"] == ["beam 0", "beam 1", "beam 2"]
    assert tree["layout"]["meta"]["min_width"] > 3 * 50
    # α is stated, the checkpoint's own, and the text says the penalty ranks only the finished
    # hypotheses
    alpha = tiny_checkpoint.generation.length_penalty
    beam_text = next(m.value for m in at.markdown if "no length normalisation" in m.value)
    assert f"**α = {alpha:g}**" in beam_text and "Only the final choice" in beam_text
    at.slider(key="decoding_beam").set_value(2)
    assert chart(rerun(at), "decoding-beam-tree")["layout"]["xaxis"]["ticktext"] == ["beam 0",
                                                                                      "beam 1"]
    # a different sentence: its own step counter and its own figures
    open_step(at, "decoding_step", 0)
    at.button(key="decoding_next").click()
    change_sentence(rerun(at), OTHER_SENTENCE)
    assert step_text(at).startswith("**Step 1 of ")
    assert chart(at, "decoding-topk")["data"] != first_topk


def test_beam_equal_to_greedy_shows_a_neutral_same_not_a_red_minus_zero(open_app, open_step,
                                                                        monkeypatch):
    from transformer_viz.app import loaders as webapp

    at = open_step(open_app("transformer_viz/app/pages/decoding.py"), "decoding_step", 1)
    greedy, beam = at.metric[0], at.metric[1]
    # The page rounds the true difference; the two values shown are each rounded, so their
    # difference may be off by up to 1e-4 from it (how far depends on the machine's last float
    # bits).
    difference = float(beam.value) - float(greedy.value)
    shown = 0.0 if beam.delta == "same" else float(beam.delta)
    assert abs(shown - difference) < 1.5e-4 and beam.delta not in ("+0.0000", "-0.0000")
    # a beam whose score is greedy's less 3e-6 (as when both find the same translation and the sums
    # differ in the last float bits): before, "-0.0000" in red; now a neutral "same"
    from dataclasses import replace

    get_run = webapp.get_run

    def nearly_greedy(name, sentence, beam_size=1, causal=True):
        run = get_run(name, sentence, beam_size, causal)
        if beam_size == 1:
            return run
        greedy_score = get_run(name, sentence, 1, causal).decoding.scores[0]
        return replace(run, decoding=replace(run.decoding, scores=[greedy_score - 3e-6]))

    monkeypatch.setattr(webapp, "get_run", nearly_greedy)
    rerun(at)
    assert at.metric[1].value == at.metric[0].value and at.metric[1].delta == "same"
    assert at.metric[1].proto.color == at.metric[1].proto.GRAY  # grey, not red
    assert at.metric[1].proto.direction == at.metric[1].proto.NONE  # and no arrow


def test_forcing_another_word_decodes_the_rest_greedily_and_the_link_keeps_it(
        open_app, make_app, tiny_checkpoint):
    from transformer_viz.app.sections import format_forced

    at = open_app("transformer_viz/app/pages/decoding.py")
    run = run_sentence(tiny_checkpoint, SENTENCE)
    at.selectbox(key="decoding_what_if_candidate").set_value(2)  # position 1, its third candidate
    rerun(at)
    at.button(key="decoding_what_if_force").click()
    rerun(at)
    forced = (run.decoding.steps[0].top_ids[0][2],)
    assert at.query_params["force"] == format_forced(forced)
    other = run_sentence(tiny_checkpoint, SENTENCE, forced_prefix=list(forced), trace=False)
    assert other.translation in [t.value for t in at.text]
    bars = chart(at, "decoding_what_if-forced")["data"]
    np.testing.assert_allclose(array(bars[1]["y"])[0],
                               run.decoding.steps[0].top_probs[0][2], atol=1e-6)
    np.testing.assert_allclose(array(bars[0]["y"]),
                               [s.chosen_prob[0] for s in run.decoding.steps], atol=1e-6)
    # a new session from the link, straight onto the page
    link = make_app()
    for k in ("s", "ckpt", "force"):
        link.query_params[k] = at.query_params[k]
    link.switch_page("transformer_viz/app/pages/decoding.py")
    assert other.translation in [t.value for t in rerun(link).text]
    # another sentence: nothing forced any more
    change_sentence(link, OTHER_SENTENCE)
    assert "force" not in link.query_params


def test_the_key_value_cache_step_shows_the_cache_decoding_used(open_app,
                                                                tiny_checkpoint, open_step):
    from transformer_viz.generation.kv_cache import multiply_adds, record_cache

    at = open_step(open_app("transformer_viz/app/pages/decoding.py"), "decoding_step", 2)
    run = run_sentence(tiny_checkpoint, SENTENCE, trace=False)
    record = record_cache(tiny_checkpoint.model, run.src_ids, run.tgt_ids)
    T = len(run.tgt_ids)
    assert step_text(at) == f"**Step 1 of {T}**"
    # (T, d_k): later rows not computed yet
    keys = z_of(traces(chart(at, "kv-cache-self"), "key")[0])
    # layer 0, head 0, position 0
    np.testing.assert_allclose(keys[0], record.self_k[0, 0, 0], atol=1e-6)
    assert np.isnan(keys[1:]).all()
    assert traces(chart(at, "kv-cache-self"), "masked")  # drawn grey, "not computed yet"
    cross = z_of(traces(chart(at, "kv-cache-cross"), "key")[0])
    np.testing.assert_allclose(cross, record.cross_k[0, 0], atol=1e-6)
    at.button(key="kv_cache_next").click()
    keys = z_of(traces(chart(rerun(at), "kv-cache-self"), "key")[0])
    np.testing.assert_allclose(keys[:2], record.self_k[0, 0, :2], atol=1e-6)
    counts = multiply_adds(tiny_checkpoint.config, len(run.src_ids), T)
    lines = chart(at, "kv-cache-multiply-adds")["data"]
    np.testing.assert_array_equal(array(lines[0]["y"]), counts.without_cache)
    np.testing.assert_array_equal(array(lines[1]["y"]), counts.with_cache)
    assert any(f"{counts.with_cache[1]:,} multiply–adds with the cache" in c.value
               for c in at.caption)
