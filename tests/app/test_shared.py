"""app/shared.py: a cached call is one entry however its arguments are written, defaults
included."""

from __future__ import annotations

import pytest

from transformer_viz.app import loaders
from transformer_viz.app.shared import shared_resource

SENTENCE = "ein hund läuft ."


@pytest.fixture
def name(checkpoint_dir, monkeypatch):
    """The tiny checkpoint's name, listed where the loaders look, with no run of it cached before or
    after."""
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(checkpoint_dir.parent))
    loaders.get_run.clear()
    loaders.get_translation.clear()
    yield checkpoint_dir.name
    loaders.get_run.clear()
    loaders.get_translation.clear()


def test_a_call_with_or_without_its_defaults_is_one_entry():
    calls = []

    @shared_resource(show_spinner=False)
    def square_plus(x: int, plus: int = 1, *, times: int = 1) -> int:
        calls.append((x, plus, times))
        return x * x * times + plus

    assert (square_plus(3) == square_plus(3, 1) == square_plus(3, plus=1)
            == square_plus(x=3, times=1) == 10)
    assert calls == [(3, 1, 1)]
    assert square_plus(3, 2) == 11 and square_plus(3, times=2) == 19
    assert calls == [(3, 1, 1), (3, 2, 1), (3, 1, 2)]
    square_plus.clear()
    assert square_plus(3) == 10 and len(calls) == 4
    assert square_plus.__name__ == "square_plus"


def test_a_sentence_is_run_once_whichever_way_the_pages_ask(name, monkeypatch):
    from transformer_viz import engine

    runs = []
    real = engine.run_sentence
    monkeypatch.setattr(engine, "run_sentence", lambda *a, **k: runs.append(a[1:]) or real(*a, **k))
    first = loaders.get_run(name, SENTENCE)
    assert loaders.get_run(name, SENTENCE, 1, True) is first
    assert loaders.get_run(name, SENTENCE, beam_size=1) is first
    assert len(runs) == 1
    # Without the causal mask: the same translation, traced again, not decoded again.
    unmasked = loaders.get_run(name, SENTENCE, 1, False)
    assert (unmasked.tgt_ids == first.tgt_ids and unmasked.trace is not first.trace
            and len(runs) == 1)


def test_a_beam_run_is_decoded_but_not_traced(name):
    from transformer_viz import engine

    beam = loaders.get_run(name, SENTENCE, 3)
    reference = engine.run_sentence(loaders.get_checkpoint(name), SENTENCE, beam_size=3)
    assert beam.trace is None and reference.trace is not None
    assert (beam.tgt_ids, beam.translation, beam.decoding.scores) == (reference.tgt_ids,
                                                                      reference.translation,
                                                                      reference.decoding.scores)
    assert loaders.get_run(name, SENTENCE).trace is not None  # greedy runs keep theirs


def test_a_traced_run_is_the_shared_translation_with_the_trace_run_sentence_gives(name):
    import torch

    from transformer_viz import engine

    translation = loaders.get_translation(name, SENTENCE)
    assert translation.trace is None
    run = loaders.get_run(name, SENTENCE)
    # decoded once: the traced run reuses the translation
    assert run.decoding is translation.decoding
    reference = engine.run_sentence(loaders.get_checkpoint(name), SENTENCE)
    assert (run.src_ids, run.tgt_ids, run.translation, run.decoding) == (
        reference.src_ids, reference.tgt_ids, reference.translation, reference.decoding)
    assert run.trace.names() == reference.trace.names()
    assert all(torch.equal(run.trace[key], reference.trace[key]) for key in reference.trace.names())
