"""The lecture's step "What does a head do?": its text quotes the per-head drops its figure draws,
which are interpret/explain.py's, and the step links to the page."""

from __future__ import annotations

import numpy as np

from tests.support.apptest import SENTENCE
from transformer_viz.views import lecture
from transformer_viz.views.lecture.figures import fig_heads
from transformer_viz.views.lecture.texts import text_heads
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.explain import heads_run


def test_the_heads_step_quotes_the_drops_it_draws(tiny_checkpoint):
    run = run_sentence(tiny_checkpoint, SENTENCE)
    ctx = lecture.Context(run, id_to_token=tiny_checkpoint.tokenizer.convert_ids_to_tokens,
                          model=tiny_checkpoint.model)
    numbers = heads_run(tiny_checkpoint.model, run.src_ids, run.tgt_ids)
    spec = fig_heads(ctx)
    np.testing.assert_allclose(spec.args[1], numbers.drops, atol=1e-6)
    order = np.argsort(-numbers.drops)
    text = text_heads(ctx)
    assert (f"Without {numbers.heads[order[0]]} " in text
            and f"falls by {numbers.drops[order[0]]:.2f} nats" in text)
    assert f"{int((np.abs(numbers.drops) < 0.05).sum())} heads change it by less than 0.05" in text
    step = next(s for s in lecture.STEPS if s.id == "heads")
    ids = [s.id for s in lecture.STEPS]
    assert step.page == "heads" and ids.index("inference") < ids.index("heads")
    # drawn in the projector style too
    assert lecture.draw(spec.plot, True, *spec.args, **spec.kwargs).data
