"""Decoding defaults that travel with a checkpoint (generation_config.json): round trip, CLI
defaults, overrides."""

from __future__ import annotations

import json
import shutil

import pytest

from transformer_viz import engine
from transformer_viz.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from transformer_viz.cli import main
from transformer_viz.generation.decoding_defaults import (GENERATION_CONFIG, GenerationDefaults,
                                                    load_generation_defaults,
                                                    save_generation_defaults)

SENTENCE = "ein mann spielt im park ."


def test_generation_defaults_round_trip_in_transformers_format(tmp_path):
    defaults = GenerationDefaults(num_beams=5, length_penalty=1.4, max_new_tokens=40)
    path = save_generation_defaults(tmp_path, defaults)
    data = json.loads(path.read_text())
    # The keys transformers' GenerationConfig reads, with our special-token IDs.
    assert data["num_beams"] == 5 and data["length_penalty"] == 1.4 and data["max_new_tokens"] == 40
    assert (data["decoder_start_token_id"] == 1 and data["eos_token_id"] == 2
            and data["pad_token_id"] == 0)
    assert load_generation_defaults(tmp_path) == defaults
    # greedy without a file
    assert load_generation_defaults(tmp_path / "missing") == GenerationDefaults()
    assert (defaults.override(num_beams=1)
            == GenerationDefaults(num_beams=1, length_penalty=1.4, max_new_tokens=40))
    assert defaults.override(None, None) == defaults
    assert "max_loop_repeats" not in data  # the guard is off unless asked for


def test_the_repetition_guard_is_an_optional_decoding_setting_that_travels_and_is_named(tmp_path):
    guarded = GenerationDefaults(num_beams=5, length_penalty=1.4, max_loop_repeats=3)
    save_generation_defaults(tmp_path, guarded)
    assert json.loads((tmp_path / GENERATION_CONFIG).read_text())["max_loop_repeats"] == 3
    assert load_generation_defaults(tmp_path) == guarded
    assert guarded.describe() == "beam 5, α 1.4, loops ≤ 3×"
    assert guarded.override(max_loop_repeats=0).describe() == "beam 5, α 1.4"
    (tmp_path / GENERATION_CONFIG).write_text(json.dumps({"num_beams": 5, "max_loop_repeats": -1}))
    with pytest.raises(ValueError, match="max_loop_repeats"):
        load_generation_defaults(tmp_path)


def test_a_saved_checkpoint_carries_its_decoding_defaults(tmp_path, tiny_model, tokenizer):
    save_checkpoint(tmp_path / "c", tiny_model, tokenizer,
                    generation=GenerationDefaults(num_beams=4, length_penalty=1.0))
    assert (load_checkpoint(tmp_path / "c").generation
            == GenerationDefaults(num_beams=4, length_penalty=1.0))
    (tmp_path / "c" / GENERATION_CONFIG).write_text('{"num_beams": 99}')
    with pytest.raises(CheckpointError, match="num_beams must be between 1 and 32"):
        load_checkpoint(tmp_path / "c")
    (tmp_path / "c" / GENERATION_CONFIG).write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_checkpoint(tmp_path / "c")


@pytest.fixture
def beam_checkpoint(tmp_path, checkpoint_dir):
    path = tmp_path / "beam"
    shutil.copytree(checkpoint_dir, path)
    save_generation_defaults(path, GenerationDefaults(num_beams=3, length_penalty=0.0))
    return path


def _spy(monkeypatch) -> list[dict]:
    calls = []
    real = engine.generate

    def spy(model, src, config, **kwargs):
        call = {"beam_size": config.num_beams}
        if config.num_beams > 1:  # the length penalty is beam search's
            call["alpha"] = config.length_penalty
        calls.append(call)
        return real(model, src, config, **kwargs)

    monkeypatch.setattr(engine, "generate", spy)
    return calls


def test_translate_without_flags_decodes_as_the_checkpoint_says(beam_checkpoint, capsys,
                                                                monkeypatch):
    calls = _spy(monkeypatch)
    assert main(["translate", "--checkpoint", str(beam_checkpoint), *SENTENCE.split()]) == 0
    out = capsys.readouterr().out
    assert calls[-1]["beam_size"] == 3 and calls[-1]["alpha"] == 0.0
    expected = engine.run_sentence(load_checkpoint(beam_checkpoint), SENTENCE, beam_size=3,
                                   alpha=0.0, trace=False)
    assert out == expected.translation + "\n"


def test_flags_override_the_checkpoint_defaults(beam_checkpoint, capsys, monkeypatch):
    calls = _spy(monkeypatch)
    assert main(["translate", "--checkpoint", str(beam_checkpoint), "--alpha", "1.4",
                 *SENTENCE.split()]) == 0
    assert calls[-1]["beam_size"] == 3 and calls[-1]["alpha"] == 1.4
    assert main(["translate", "--checkpoint", str(beam_checkpoint), "--beam", "1",
                 *SENTENCE.split()]) == 0
    assert calls[-1]["beam_size"] == 1 and "alpha" not in calls[-1]
    out = capsys.readouterr().out.splitlines()[-1]
    assert (out
            == engine.run_sentence(load_checkpoint(beam_checkpoint), SENTENCE, beam_size=1,
                                   trace=False).translation)
    assert main(["trace", "--checkpoint", str(beam_checkpoint), *SENTENCE.split()]) == 0
    assert calls[-1]["beam_size"] == 3


def test_select_decoding_picks_alpha_on_validation_and_writes_it(tmp_path, checkpoint_dir, capsys):
    import gzip

    from tests.support.corpora import synthetic_pairs

    path = tmp_path / "ckpt"
    shutil.copytree(checkpoint_dir, path)
    data = tmp_path / "multi30k"
    data.mkdir()
    for k, lang in enumerate(("de", "en")):
        with gzip.open(data / f"val.{lang}.gz", "wt") as f:
            f.write("".join(p[k] + "\n" for p in synthetic_pairs(6, seed=9)))
    assert main(["select-decoding", "--checkpoint", str(path), "--data-dir", str(data),
                 "--splits", "val", "--beam", "2", "--alphas", "0.0", "2.0", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    best = max(report["measured"], key=lambda r: r["bleu"])
    assert len(report["measured"]) == 2
    assert (load_generation_defaults(path)
            == GenerationDefaults(num_beams=2, length_penalty=report["chosen"]["length_penalty"]))
    assert best["bleu"] == next(r["bleu"] for r in report["measured"]
                                if r["decoding"] == load_generation_defaults(path).describe())
    card = json.loads((path / "metadata.json").read_text())
    assert [r["split"] for r in card["scores"]] == ["val"]
    assert main(["select-decoding", "--checkpoint", str(path), "--splits", "test_2016_flickr"]) == 2
    assert "never on a test set" in capsys.readouterr().err
    # The repetition guard, when asked for, is used for the choice and written beside α; kept when
    # not named.
    assert main(["select-decoding", "--checkpoint", str(path), "--data-dir", str(data),
                 "--splits", "val", "--beam", "2", "--alphas", "1.0", "--max-loop-repeats", "3",
                 "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measured"][0]["decoding"] == "beam 2, α 1, loops ≤ 3×"
    assert load_generation_defaults(path).max_loop_repeats == 3
    assert main(["select-decoding", "--checkpoint", str(path), "--data-dir", str(data),
                 "--splits", "val", "--beam", "2", "--alphas", "1.0", "--no-progress"]) == 0
    assert load_generation_defaults(path).max_loop_repeats == 3


def test_a_decoding_setting_that_is_not_a_number_is_refused_with_its_file(tmp_path):
    (tmp_path / GENERATION_CONFIG).write_text('{"num_beams": null}')
    with pytest.raises(ValueError, match="not a number"):
        load_generation_defaults(tmp_path)
