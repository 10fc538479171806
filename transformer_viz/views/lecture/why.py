"""What the lecture's step "Why this word?" is drawn from: activation patching
(interpret/patching.py) on the preset pair of interpret.patching.PRESETS for the run's direction,
or, for a model without one (or whose translations of it do not differ), on the run's own
sentence with one source token replaced, so that the step shows real numbers on any model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.interpret.patching import (PRESETS, Patching, Preset, patch_grids,
                                                patch_sentences)
from transformer_viz.text.tokenizer import InputError
from transformer_viz.views.lecture.context import Context


@dataclass(frozen=True)
class LecturePair:
    """The patched pair: the preset it comes from (None: the run's own sentence, one token
    replaced), the two sentences as read aloud, and the patching (None where nothing parts)."""

    preset: Preset | None
    clean: str
    corrupted: str
    patching: Patching | None


def preset_of(metadata: dict) -> Preset | None:
    """The first preset for the checkpoint's direction (its checkpoints are named src-tgt)."""
    name = f"{metadata.get('src_lang')}-{metadata.get('tgt_lang')}"
    return next((p for p in PRESETS if p.checkpoint == name), None)


def _own_pair(ctx: Context) -> LecturePair:
    """The run's sentence against itself with one source token replaced by another of its tokens:
    the first replacement (position by position) after which the teacher-forced corrupted run
    prefers another token than the one written somewhere; patched at the first such position."""
    model, run = ctx.model, ctx.run
    src, tgt = list(run.src_ids), list(run.tgt_ids)
    written = tgt[1:] + [run.config.eos_id]
    swaps = [(s, r) for s in range(len(src) - 1) for r in dict.fromkeys(src[:-1]) if r != src[s]]
    if not swaps:
        return LecturePair(None, run.source_text, run.source_text, None)
    rows = torch.tensor([src[:s] + [r] + src[s + 1:] for s, r in swaps])  # (R, S)
    with torch.no_grad():
        best = model(rows, torch.tensor([tgt]).expand(len(swaps), -1)).argmax(-1)  # (R, T)
    differs = best.numpy() != np.asarray(written)[None, :]  # (R, T)
    if not differs.any():
        return LecturePair(None, run.source_text, run.source_text, None)
    k = int(differs.any(1).argmax())
    (s, _), t = swaps[k], int(differs[k].argmax())
    corrupted = rows[k].tolist()
    grids = patch_grids(model, src, corrupted, tgt, t, written[t], int(best[k, t]))
    tokens = ctx.id_to_token
    p = Patching(list(run.src_tokens), tokens(corrupted), [s], list(run.tgt_tokens),
                 run.translation, "", t, written[t], int(best[k, t]), tokens([written[t]])[0],
                 tokens([int(best[k, t])])[0], grids)
    return LecturePair(None, run.source_text, run.source_text, p)


_PAIRS: list = []  # [(model, sentence, LecturePair)] of the last few: text and figure share one


def lecture_pair(ctx: Context) -> LecturePair:
    """The preset pair of the run's direction patched where its translations first differ, else
    the run's own sentence with a token replaced; computed once per model and sentence."""
    for model, text, pair in _PAIRS:
        if model is ctx.model and text == ctx.run.source_text:
            return pair
    preset = preset_of(ctx.metadata) if ctx.checkpoint is not None else None
    pair = None
    if preset is not None:
        try:
            p = patch_sentences(ctx.checkpoint, preset.clean, preset.corrupted)
            pair = LecturePair(preset, preset.clean, preset.corrupted, p)
        except InputError:
            pair = None
    pair = pair or _own_pair(ctx)
    _PAIRS[:] = [(ctx.model, ctx.run.source_text, pair)] + _PAIRS[:3]
    return pair
