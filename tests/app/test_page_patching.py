"""The page "Why this word?" through AppTest: its grids are interpret/patching.py's (every preset
on the shipped checkpoints, two typed sentences on the tiny one), its bars interpret/contrast.py's,
bad input is one line of error with the page still there, and a link reopens the same pair and
position."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import chart, open_page, rerun
from tests.support.browser import ROOT
from tests.support.figures import array
from transformer_viz.app.patching_view import OWN
from transformer_viz.interpret import patching as P
from transformer_viz.interpret.contrast import contrastive_ig

PAGE = "transformer_viz/app/pages/patching.py"
SHIPPED = ROOT / "checkpoints"
# On the tiny checkpoint (random weights): one source token apart, and the greedy translations
# differ at position 0 ("do do …" against "p p …"); SAME_TRANSLATION translates as CLEAN does.
CLEAN, CORRUPTED = "zwei kinder sitzen am strand .", "zwei kinder sitzen am mann ."
SAME_TRANSLATION = "mann kinder sitzen am strand ."
SHORTER = "zwei kinder sitzen ."


def assert_shows(at, p: P.Patching) -> None:
    """The page's three heatmaps hold the Patching's grids, the cone's outside grey."""
    g = p.grids
    encoder = chart(at, "why-encoder")["data"]
    expected = np.column_stack([g.encoder, g.encoder_all])
    np.testing.assert_allclose(array(encoder[-1]["z"]), expected, atol=1e-6)
    decoder = chart(at, "why-decoder")["data"]
    later = np.arange(g.decoder.shape[1]) > p.position
    shown = array(decoder[-1]["z"])
    assert np.isnan(shown[:, later]).all()  # grey: cannot reach t
    np.testing.assert_allclose(shown[:, ~later], g.decoder[:, ~later], atol=1e-6)
    if later.any():
        grey = array(decoder[0]["z"])
        assert decoder[0]["name"] == "masked" and not np.isnan(grey[:, later]).any()
    heads = chart(at, "why-heads")["data"]
    np.testing.assert_allclose(np.stack([array(trace["z"]) for trace in heads]), g.heads, atol=1e-6)
    texts = "\n".join(m.value for m in at.markdown)
    assert f"{g.ld_clean:.3f}" in texts and f"{g.ld_corrupted:.3f}" in texts


def errors(at) -> list[str]:
    return [e.value for e in at.error]


def typed(make_app, **query):
    at = make_app()
    at.query_params.update({"clean": CLEAN, "corrupted": CORRUPTED, **query})
    return open_page(at, PAGE)


def test_two_typed_sentences_show_the_librarys_grids_and_bars(make_app, tiny_checkpoint):
    at = typed(make_app)
    assert at.title[0].value == "Why this word?"
    assert at.selectbox(key="why_pair").value == OWN  # the tiny model has no preset
    p = P.patch_sentences(tiny_checkpoint, CLEAN, CORRUPTED)
    assert at.selectbox(key="why_pos").value == p.position == 0
    assert_shows(at, p)
    assert any("is decided by" in m.value for m in at.markdown)  # summary_text's sentence
    ids = tiny_checkpoint.tokenizer.convert_tokens_to_ids
    contrast = contrastive_ig(tiny_checkpoint.model, ids(p.src_tokens), ids(p.tgt_tokens),
                              p.position, p.clean_id, p.corrupted_id)
    bars = chart(at, "why-contrast")["data"]
    np.testing.assert_allclose(array(bars[0]["x"]), contrast.source, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(array(bars[1]["x"]), contrast.target, rtol=1e-4, atol=1e-6)
    assert at.query_params["clean"] == CLEAN and at.query_params["corrupted"] == CORRUPTED
    assert "pos" not in at.query_params  # the default position is not written


def test_bad_input_is_one_line_of_error_and_the_page_stays(make_app):
    at = typed(make_app)
    cases = ((SHORTER, "the same number of tokens"), (SAME_TRANSLATION, "both sentences translate"),
             (CLEAN, "the same tokens"))
    for corrupted, said in cases:
        at.text_input(key="why_corrupted").set_value(corrupted)
        rerun(at)
        assert len(errors(at)) == 1 and said in errors(at)[0], errors(at)
        assert "\n" not in errors(at)[0]
        assert at.text_input(key="why_clean").value == CLEAN and not at.get("plotly_chart")
    assert not [box for box in at.selectbox if box.key == "why_pos"]  # it needs both translations
    at.text_input(key="why_corrupted").set_value(CORRUPTED)
    rerun(at)
    assert not errors(at) and len(at.get("plotly_chart")) == 5  # and "Source or prefix?"


def test_a_position_where_both_runs_agree_is_an_error_then_another_works(make_app, tiny_checkpoint):
    at = typed(make_app)
    at.selectbox(key="why_pos").set_value(1)
    rerun(at)
    assert errors(at) and "both sources lead to" in errors(at)[0]
    assert at.query_params["pos"] == "1"
    last = len(P.patch_sentences(tiny_checkpoint, CLEAN, CORRUPTED).tgt_tokens) - 1
    at.selectbox(key="why_pos").set_value(last)
    rerun(at)
    assert not errors(at)
    assert_shows(at, P.patch_sentences(tiny_checkpoint, CLEAN, CORRUPTED, last))


def test_a_link_reopens_the_same_sentences_and_position(make_app, tiny_checkpoint):
    last = len(P.patch_sentences(tiny_checkpoint, CLEAN, CORRUPTED).tgt_tokens) - 1
    at = typed(make_app, pos=str(last))
    assert at.text_input(key="why_corrupted").value == CORRUPTED
    assert at.selectbox(key="why_pos").value == last
    assert_shows(at, P.patch_sentences(tiny_checkpoint, CLEAN, CORRUPTED, last))
    assert at.query_params["pos"] == str(last)
    at.selectbox(key="why_pos").set_value(0)  # back to the first difference: the URL forgets pos
    rerun(at)
    assert "pos" not in at.query_params


def test_without_a_corrupted_sentence_the_page_asks_for_one(open_app):
    at = open_app(PAGE)
    assert at.selectbox(key="why_pair").value == OWN and not errors(at)
    assert "Type the corrupted sentence" in at.info[0].value
    assert len(at.dataframe[0].value) == len(P.PRESETS)


# --- the presets, on the shipped checkpoints ------------------------------------------------

HAVE_SHIPPED = all((SHIPPED / p.checkpoint / "model.safetensors").is_file() for p in P.PRESETS)
shipped = pytest.mark.skipif(not HAVE_SHIPPED, reason="the shipped checkpoints are missing")


@pytest.fixture(scope="module")
def shipped_checkpoints() -> dict:
    from transformer_viz.checkpoints import load_checkpoint

    names = {p.checkpoint for p in P.PRESETS}
    return {name: load_checkpoint(SHIPPED / name) for name in names}


@pytest.fixture()
def shipped_app(make_app, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(SHIPPED))

    def make(**query):
        at = make_app("Ein Hund läuft.")
        at.query_params.update(query)
        return open_page(at, PAGE)

    return make


@shipped
@pytest.mark.parametrize("direction, first",
                         [("de-en", "singular / plural"), ("en-de", "she / he")])
def test_the_first_preset_follows_the_sidebars_direction(shipped_app, direction, first):
    at = shipped_app(ckpt=direction)
    assert at.selectbox(key="why_pair").value == first
    assert at.query_params["pair"] == first


@shipped
@pytest.mark.parametrize("preset", P.PRESETS, ids=lambda preset: preset.name)
def test_every_preset_shows_the_librarys_grids(shipped_app, shipped_checkpoints, preset):
    at = shipped_app(ckpt="de-en")
    at.selectbox(key="why_pair").set_value(preset.name)
    rerun(at)
    ckpt = shipped_checkpoints[preset.checkpoint]
    p = P.patch_sentences(ckpt, preset.clean, preset.corrupted)
    assert at.selectbox(key="why_pos").value == p.position
    assert_shows(at, p)
    assert at.query_params["pair"] == preset.name and not errors(at)


@shipped
def test_a_link_reopens_a_preset_at_another_position(shipped_app, shipped_checkpoints):
    preset = P.PRESETS[0]
    p = P.patch_sentences(shipped_checkpoints[preset.checkpoint], preset.clean, preset.corrupted)
    later = p.position + 1
    at = shipped_app(ckpt="de-en", pair=preset.name, pos=str(later))
    assert at.selectbox(key="why_pair").value == preset.name
    assert at.selectbox(key="why_pos").value == later
    try:
        expected = P.patch_sentences(shipped_checkpoints[preset.checkpoint], preset.clean,
                                     preset.corrupted, later)
    except P.InputError:  # both runs write the same word there: the page says so
        assert len(errors(at)) == 1 and "both sources lead to" in errors(at)[0]
        return
    assert_shows(at, expected)


def test_source_or_prefix_shows_each_written_tokens_shares_summing_to_1(make_app, tiny_checkpoint):
    from tests.support.apptest import latex
    from transformer_viz.engine import run_sentence
    from transformer_viz.interpret.source_share import source_shares

    at = typed(make_app)
    assert any(h.value == "Source or prefix?" for h in at.subheader)
    assert "source share" in latex(at)
    assert any("Voita, Sennrich and Titov" in m.value and "integrated gradients" in m.value
               for m in at.markdown)
    source, prefix = chart(at, "why-source-share")["data"]
    np.testing.assert_allclose(array(source["y"]) + array(prefix["y"]), 1.0, atol=1e-9)
    run = run_sentence(tiny_checkpoint, CLEAN)
    expected = source_shares(tiny_checkpoint.model, run.src_ids, run.tgt_ids)
    np.testing.assert_allclose(array(source["y"]), expected.source_share, rtol=1e-4, atol=1e-6)
    assert len(source["x"]) == len(run.tgt_ids)  # the translation's tokens and </s>
    flags = [m.value for m in at.markdown if "Little from the source" in m.value]
    assert len(flags) == 1 and "under-translation" in flags[0]
    low = [t for t, f in zip(run.tgt_tokens[1:] + ["</s>"], expected.low_source) if f]
    assert ("none" in flags[0].split("**Source words")[0]) == (not low)
