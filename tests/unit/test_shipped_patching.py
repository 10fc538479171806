"""The patching presets (interpret/patching.py) on the shipped checkpoints: each pair is one source
token apart, its greedy translations differ, and the changed token decides the word at encoder layer
0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from transformer_viz.checkpoints import load_checkpoint
from transformer_viz.interpret import patching as P
from transformer_viz.text.tokenizer import encode_source

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoints() -> dict:
    loaded = {}
    for name in {preset.checkpoint for preset in P.PRESETS}:
        path = ROOT / "checkpoints" / name
        if not (path / "model.safetensors").is_file():
            pytest.skip(f"no shipped checkpoint at {path}")
        loaded[name] = load_checkpoint(path)
    return loaded


@pytest.mark.parametrize("preset", P.PRESETS, ids=lambda preset: preset.name)
def test_each_preset_changes_one_token_and_the_translation(preset, checkpoints):
    ckpt = checkpoints[preset.checkpoint]
    a, b = (encode_source(ckpt.tokenizer, text, ckpt.config.max_len).ids
            for text in (preset.clean, preset.corrupted))
    assert len(a) == len(b)
    changed = [s for s, (x, y) in enumerate(zip(a, b)) if x != y]
    assert len(changed) == 1
    p = P.patch_sentences(ckpt, preset.clean, preset.corrupted)
    assert p.translation != p.corrupted_translation and p.changed == changed
    assert p.grids.ld_clean > 0 > p.grids.ld_corrupted  # each run prefers its own word at t
    assert int(np.argmax(p.grids.encoder[0])) == changed[0]
    assert p.grids.encoder[0, changed[0]] > 0.9
