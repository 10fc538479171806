"""The input warnings in the app (AppTest, on two tiny checkpoints, one per direction, with language
statistics built from their synthetic training data): at the top of the page, in plain words; the
swap of direction that keeps the text; carrying the translation over when the direction changes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import synthetic_pairs
from tests.support.apptest import rerun
from transformer_viz.engine import run_sentence
from transformer_viz.text.language_stats import build_language_stats, save_language_stats

ENGLISH_TEXT = "a dog runs in the park ."


@pytest.fixture()
def two_directions(checkpoint_dir, tokenizer, tmp_path_factory, monkeypatch):
    """A checkpoint root with 'warn-de-en' and 'warn-en-de' (the same tiny weights, the card's
    direction reversed), both with language_stats.json; names of their own, so no cache of another
    test answers."""
    root = tmp_path_factory.mktemp("directions")
    pairs = synthetic_pairs(300)
    stats = build_language_stats({lang: tokenizer([p[i] for p in pairs],
                                                  add_special_tokens=False)["input_ids"]
                                  for i, lang in enumerate(("de", "en"))})
    for src, tgt in (("de", "en"), ("en", "de")):
        path = root / f"warn-{src}-{tgt}"
        shutil.copytree(checkpoint_dir, path)
        metadata = json.loads((path / "metadata.json").read_text())
        (path / "metadata.json").write_text(json.dumps({**metadata, "src_lang": src,
                                                        "tgt_lang": tgt}))
        save_language_stats(path, stats)
    return root


@pytest.fixture()
def app_on(make_app, two_directions, monkeypatch):
    def make(sentence: str, checkpoint: str = "warn-de-en"):
        at = make_app(sentence)
        monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(two_directions))
        at.query_params["ckpt"] = checkpoint
        return rerun(at)

    return make


def main_elements(at) -> list:
    """The main area's elements in page order (containers opened)."""
    out = []

    def walk(node):
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", None) in ("flex_container", "vertical", "horizontal",
                                                "container") or \
                    not hasattr(child, "value"):
                walk(child)
            else:
                out.append(child)

    walk(at.main)
    return out


def test_english_in_the_german_model_is_flagged_at_the_top_and_swapped_keeping_the_text(app_on):
    at = app_on(ENGLISH_TEXT)
    assert at.sidebar.selectbox(key="checkpoint").format_func("warn-de-en") == "German → English"
    warnings = [w.value for w in at.warning]
    assert any("looks like English" in w and "German → English" in w for w in warnings), warnings
    # at the top: right under the title, before the page's introduction and its figure
    order = [(el.type, getattr(el, "value", "")) for el in main_elements(at)]
    assert (order[0][0] == "title" and order[1][0] == "warning"
            and "looks like English" in order[1][1])
    swap = at.button(key="swap_direction")
    assert swap.label == "Translate it English → German instead"
    swap.click()
    rerun(at)
    assert (at.session_state["checkpoint"] == "warn-en-de"
            and at.session_state["sentence"] == ENGLISH_TEXT)
    assert not any("looks like" in w.value for w in at.warning)
    assert at.text_area(key="sentence").label == "Sentence (English)"


def test_a_change_of_direction_offers_the_translation_as_the_new_source(app_on, tiny_checkpoint):
    german = "ein mann spielt im park ."
    at = app_on(german)
    assert not at.warning and not [b for b in at.button if b.key == "carry_translation"]
    translation = run_sentence(tiny_checkpoint, german, trace=False).translation
    at.sidebar.selectbox(key="checkpoint").set_value("warn-en-de")
    rerun(at)
    carry = at.button(key="carry_translation")
    assert translation in [t.value for t in at.sidebar.text]
    carry.click()
    rerun(at)
    assert (at.session_state["sentence"] == translation
            and at.session_state["checkpoint"] == "warn-en-de")
    assert not [b for b in at.button if b.key == "carry_translation"]  # offered once


def test_a_fragment_and_removed_characters_are_told_in_plain_words_on_every_page(app_on):
    at = app_on("hund\ufe0f")
    notes = [i.value for i in at.info] + [w.value for w in at.warning]
    assert any("variation mark" in n and "U\\+FE0F" in n for n in notes), notes
    assert any("fragment" in n for n in notes)
    at.switch_page("transformer_viz/app/pages/encoder.py")
    rerun(at)
    order = [el.type for el in main_elements(at)]
    assert order[:3] == ["title", "info", "warning"], order  # what was removed, then the fragment
