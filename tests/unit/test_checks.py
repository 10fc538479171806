"""The input checks (transformer_viz/checks.py) on statistics built from the tiny tokenizer's
synthetic training data: the language lean of tokens, the mismatch warning in both directions, the
length threshold, fragments, the plain-word input notes and the beam-vs-greedy delta."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from tests.conftest import synthetic_pairs
from transformer_viz.app.widgets import score_change
from transformer_viz.text import language_stats as checks
from transformer_viz.text.language_stats import (LanguageStats, build_language_stats,
                                                 check_language, input_warnings, is_fragment,
                                                 load_language_stats, save_language_stats)
from transformer_viz.text.tokenizer import removed_note


def ids_of(tokenizer, text: str) -> list[int]:
    # and </s>, as the encoder sees it
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [2]


@pytest.fixture(scope="module")
def stats(tokenizer) -> LanguageStats:
    pairs = synthetic_pairs(300)
    encoded = {lang: tokenizer([p[i] for p in pairs], add_special_tokens=False)["input_ids"]
               for i, lang in enumerate(("de", "en"))}
    return build_language_stats(encoded, ["synthetic"])


def test_tokens_lean_to_the_side_they_occur_on_and_shared_ones_to_neither(stats, tokenizer):
    hund, dog = tokenizer.convert_tokens_to_ids(["▁hund", "▁dog"])
    assert stats.lean[hund] == "de" and stats.lean[dog] == "en"
    # "park" and "." are on both sides in every pair that has them: evidence for neither language
    park, dot = tokenizer.convert_tokens_to_ids(["▁park", "."])
    assert park not in stats.lean and dot not in stats.lean


@pytest.mark.parametrize("src, tgt", [("de", "en"), ("en", "de")])
def test_the_other_language_is_flagged_and_the_right_one_is_not(stats, tokenizer, src, tgt):
    # other sentences than the 300 the statistics were built on
    held_out = synthetic_pairs(200, seed=7)
    side = {"de": 0, "en": 1}
    right = [check_language(stats, ids_of(tokenizer, p[side[src]]), src).looks_like
             for p in held_out]
    wrong = [check_language(stats, ids_of(tokenizer, p[side[tgt]]), src).looks_like
             for p in held_out]
    assert right.count(None) / len(right) >= 0.98
    assert wrong.count(tgt) == len(wrong)  # every one, and named as the right language


def test_one_loanword_does_not_make_a_sentence_foreign(stats, tokenizer):
    verdict = check_language(stats, ids_of(tokenizer, "zwei kinder spielen mit einem dog ."), "de")
    assert verdict.looks_like is None and verdict.other == 1 and verdict.own >= 4
    # the only evidence
    assert check_language(stats, ids_of(tokenizer, "dog"), "de").looks_like == "en"


def test_length_threshold_is_the_percentile_of_training_source_lengths(stats, tokenizer):
    lengths = sorted(len(tokenizer(p[0], add_special_tokens=False)["input_ids"]) + 1
                     for p in synthetic_pairs(300))
    rank = -(-999 * len(lengths) // 1000)  # nearest rank of the 99.9th percentile: ceil(0.999 n)
    assert stats.length_threshold("de") == lengths[rank - 1]
    assert (stats.source_lengths["de"]["max"] == lengths[-1]
            and stats.source_lengths["de"]["sentences"] == 300)
    long_text = " ".join(["ein mann spielt im park"] * 4) + " ."
    long_ids = ids_of(tokenizer, long_text)
    assert len(long_ids) > stats.length_threshold("de")
    notes = input_warnings(stats, long_text, long_ids, "de", "en")
    assert (len(notes) == 1 and f"{len(long_ids)} tokens" in notes[0]
            and f"at most {lengths[rank - 1]}" in notes[0])
    assert input_warnings(stats, "ein mann spielt im park .",
                          ids_of(tokenizer, "ein mann spielt im park ."), "de", "en") == []


@pytest.mark.parametrize("text, fragment",
                         [("Hund", True), ("roter Ball", True), ("Tom lügt.", False),
                          ("Lauf!", False), ("Ein Hund läuft im Park", False), ("  ", False)])
def test_fragments_are_a_word_or_two_without_a_sentence_end(text, fragment):
    assert is_fragment(text) is fragment


def test_a_fragment_in_the_wrong_language_gets_both_lines_naming_the_direction_in_words(
        stats, tokenizer):
    notes = input_warnings(stats, "dog", ids_of(tokenizer, "dog"), "de", "en")
    assert len(notes) == 2
    assert "looks like English" in notes[0] and "German → English" in notes[0]
    assert "fragment" in notes[1]


def test_statistics_round_trip_through_their_small_json_file(stats, tmp_path):
    path = save_language_stats(tmp_path, stats)
    assert path.name == "language_stats.json" and path.stat().st_size < 10_000
    loaded = load_language_stats(tmp_path)
    assert loaded.lean == stats.lean and loaded.source_lengths == stats.source_lengths
    assert load_language_stats(tmp_path / "missing") is None


def test_the_command_writes_the_statistics_into_a_checkpoint(checkpoint_dir, tmp_path, capsys):
    from transformer_viz.cli import main

    checkpoint = tmp_path / "ckpt"
    shutil.copytree(checkpoint_dir, checkpoint)
    data = tmp_path / "multi30k"
    data.mkdir()
    pairs = synthetic_pairs(300)
    for split, rows in (("train", pairs), ("test_2016_flickr", synthetic_pairs(50, seed=3))):
        for i, lang in enumerate(("de", "en")):
            with gzip.open(data / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("".join(p[i] + "\n" for p in rows))
    assert main(["language-stats", "--checkpoint", str(checkpoint), "--data-dir", str(data),
                 "--report", "test_2016_flickr"]) == 0
    report = [json.loads(line) for line in capsys.readouterr().out.splitlines()[1:]]
    assert [(r["sentences_in"], r["other language"]) for r in report] == [("de", 0.0), ("en", 1.0)]
    assert load_language_stats(checkpoint).corpora == ("multi30k",)


def test_removed_characters_are_named_in_plain_words_with_their_code_point():
    assert removed_note(["U+FE0F VARIATION SELECTOR-16"]) == (
        "Removed 1 invisible character: an emoji or text variation mark (U+FE0F VARIATION "
        "SELECTOR-16).")
    note = removed_note(["U+200B ZERO WIDTH SPACE", "U+200B ZERO WIDTH SPACE",
                         "U+202E RIGHT-TO-LEFT OVERRIDE", "U+0007 BEL (control character)"])
    assert (note
            == ("Removed 4 invisible characters: an invisible space (U+200B ZERO WIDTH SPACE) ×2, "
                "a text-direction "
                "mark (U+202E RIGHT-TO-LEFT OVERRIDE), a control character (U+0007 BEL (control "
                "character))."))


def test_equal_scores_give_a_neutral_same_not_a_red_minus_zero():
    assert score_change(-3.14159, -3.14161) == ("same", "off")  # -0.00002 rounds to 0 at 4 decimals
    assert score_change(-2.5, -3.0) == ("+0.5000", "normal")
    assert score_change(-3.0, -2.5) == ("-0.5000", "normal")


def test_directions_are_named_in_words():
    assert checks.direction_name("de", "en") == "German → English"
    assert checks.direction_name("en", "de") == "English → German"
