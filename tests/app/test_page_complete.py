"""The "Complete the sentence" page through AppTest, on the tiny random GPT that tests/conftest.py
saves beside the tiny Transformer: every step, the completion equal to the library's, the settings
in the URL."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import chart, open_page, rerun
from tests.support.figures import array, z_of
from transformer_viz.checkpoints import load_checkpoint
from transformer_viz.engine import run_prompt
from transformer_viz.generation.completion import SamplingSettings

PAGE = "transformer_viz/app/pages/complete.py"
STEP_CHARTS = {"complete-temperature", "complete-kept", "complete-attention", "complete-families"}


@pytest.fixture()
def expected(checkpoint_dir):
    ckpt = load_checkpoint(checkpoint_dir.parent / "gpt-tiny")
    return lambda prompt, settings: run_prompt(ckpt, prompt, settings)


def test_every_step_draws_and_the_completion_is_the_librarys(make_app, every_step,
                                                             open_step, expected):
    at = make_app()
    at.query_params.update({"prompt": "ein mann", "T": "0.8", "k": "5", "seed": "3", "n": "6"})
    at = open_page(at, PAGE)
    assert at.title[0].value == "Complete the sentence: decoder-only models"
    assert set(every_step(at, "complete_step")) == STEP_CHARTS
    want = expected("ein mann", SamplingSettings(0.8, 5, 1.0, 3, 6))
    at = open_step(at, "complete_step", 0)
    shown = [t.value for t in at.text]  # show_user_text draws user text as plain text
    assert any(want.text in value for value in shown), (want.text, shown)
    assert ((at.query_params["T"], at.query_params["k"], at.query_params["seed"])
            == ("0.8", "5", "3"))


def test_temperature_and_cut_figures_hold_the_steps_numbers(make_app, open_step, expected):
    at = make_app()
    at.query_params.update({"prompt": "ein mann", "T": "1.5", "k": "4", "p": "0.9", "n": "3"})
    at = open_page(at, PAGE)
    want = expected("ein mann", SamplingSettings(1.5, 4, 0.9, 0, 3))
    dist = want.completion.distribution(0)
    at = open_step(at, "complete_step", 0)
    fig = chart(at, "complete-temperature")
    order = np.argsort(-dist.model, kind="stable")[:15]
    np.testing.assert_allclose(array(fig["data"][0]["x"]), dist.model[order], rtol=1e-6)
    np.testing.assert_allclose(array(fig["data"][1]["x"]), dist.tempered[order], rtol=1e-6)
    at = open_step(at, "complete_step", 1)
    fig = chart(at, "complete-kept")
    final = array(fig["data"][1]["x"])
    assert np.isclose(final.sum(), 1.0)  # the kept tokens, renormalised
    assert (final > 0).sum() <= 4  # top-k 4
    at.button(key="complete_next").click()
    at = rerun(at)
    assert any("Token 2 of" in m.value for m in at.markdown)


def test_attention_step_shows_the_causal_mask_and_greedy_at_zero_temperature(
        make_app, open_step, expected):
    at = make_app()
    at.query_params.update({"prompt": "zwei kinder", "T": "0", "n": "4"})
    at = open_page(at, PAGE)
    want = expected("zwei kinder", SamplingSettings(0.0, 0, 1.0, 0, 4))
    at = open_step(at, "complete_step", 2)
    fig = chart(at, "complete-attention")
    weights = z_of(fig["data"][-1])  # masked cells are NaN in the colour trace
    L = len(want.ids)
    assert weights.shape == (L, L)
    assert np.all(np.isnan(weights[np.triu_indices(L, 1)]))
    np.testing.assert_allclose(np.nan_to_num(weights),
                               want.trace["decoder.1.self_attn.weights"][0, 0].numpy(), atol=1e-6)
    at = open_step(at, "complete_step", 0)
    assert any("greedy (T = 0)" in c.value for c in at.caption)


def test_changing_the_prompt_reruns_and_writes_the_url(make_app):
    at = open_page(make_app(), PAGE)
    assert at.text_input(key="complete_prompt").value == "Where there is a will, there"
    at.text_input(key="complete_prompt").set_value("ein hund")
    at = rerun(at)
    assert at.query_params["prompt"] == "ein hund"
    at.text_input(key="complete_prompt").set_value("   ")
    at = rerun(at)
    assert any("Please type" in w.value for w in at.warning)
