"""The lecture's step "Why this word?": right after "What does a head do?", activation patching
on the preset pair of the run's direction (the shipped en-de model), or on the run's own sentence
with a token replaced (the tiny model has no pair); its text quotes summary_text of the grids its
figure draws."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.support.apptest import SENTENCE
from tests.support.figures import z_of
from transformer_viz.checkpoints import load_checkpoint
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.patching import PRESETS, patch_grids, patch_sentences, summary_text
from transformer_viz.views import lecture
from transformer_viz.views.lecture import why

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints"


def step():
    ids = [s.id for s in lecture.STEPS]
    assert ids.index("why") == ids.index("heads") + 1
    return lecture.STEPS[ids.index("why")]


def test_the_preset_pair_of_the_models_direction_is_patched(monkeypatch):
    monkeypatch.setattr(why, "_PAIRS", [])
    ckpt = load_checkpoint(SHIPPED / "en-de")
    ctx = lecture.step_context(step(), ckpt, run_sentence(ckpt, "A man plays in the park."))
    preset = next(p for p in PRESETS if p.checkpoint == "en-de")
    p = patch_sentences(ckpt, preset.clean, preset.corrupted)
    text = step().text(ctx)
    assert f"“{preset.clean}”" in text and summary_text(p) in text
    fig = step().figure(ctx).figure()
    expected = np.column_stack([p.grids.encoder, p.grids.encoder_all])
    np.testing.assert_allclose(z_of(fig.data[-1]), expected, atol=1e-6)


def test_a_model_without_a_pair_patches_its_own_sentence_with_a_token_replaced(
        monkeypatch, tiny_checkpoint):
    monkeypatch.setattr(why, "_PAIRS", [])
    run = run_sentence(tiny_checkpoint, SENTENCE)
    ctx = lecture.step_context(step(), tiny_checkpoint, run)
    pair = why.lecture_pair(ctx)
    p = pair.patching
    assert pair.preset is None and p is not None and len(p.changed) == 1
    ids = tiny_checkpoint.tokenizer.convert_tokens_to_ids
    corrupted = ids(p.corrupted_tokens)
    assert sum(a != b for a, b in zip(run.src_ids, corrupted)) == 1
    grids = patch_grids(tiny_checkpoint.model, run.src_ids, corrupted, run.tgt_ids, p.position,
                        p.clean_id, p.corrupted_id)
    np.testing.assert_allclose(p.grids.encoder, grids.encoder, atol=1e-6)
    assert p.grids.ld_clean != p.grids.ld_corrupted
    text = step().text(ctx)
    assert "has no pair of the lecture's" in text and summary_text(p) in text
    spec = step().figure(ctx)
    np.testing.assert_allclose(z_of(spec.figure().data[-1])[:, :-1], p.grids.encoder, atol=1e-6)
