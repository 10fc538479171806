"""The Training page through AppTest: the model card's curves, the schedule, and teacher forcing
with the loss computed from the trace's logits."""

from __future__ import annotations

import numpy as np

from tests.support.apptest import OTHER_SENTENCE, SENTENCE, change_sentence, chart, charts, rerun
from tests.support.figures import traces
from transformer_viz.engine import run_sentence, teacher_forcing_losses


def test_training_page(open_app, tiny_checkpoint):
    at = open_app("transformer_viz/app/pages/training.py")
    assert at.title[0].value == "Training"
    assert {"training-history", "training-lr", "training-teacher-forcing"} <= set(charts(at))
    # the tiny card is short: said, not hidden
    assert any("only 1 epoch" in i.value for i in at.info)
    # the default warmup (the tiny card records none)
    assert traces(chart(at, "training-lr"), "peak")[0]["x"] == [4000]
    at.number_input(key="training_warmup").set_value(1000)
    assert traces(chart(rerun(at), "training-lr"), "peak")[0]["x"] == [1000]
    # teacher forcing on the greedy translation: the loss shown is computed from the trace's logits
    run = run_sentence(tiny_checkpoint, SENTENCE)
    losses = teacher_forcing_losses(run.trace["logits"][0], run.predicted_ids, 0.1,
                                    tiny_checkpoint.config.pad_id)
    assert any(f"= {losses['ce']:.4f}" in x.value for x in at.get("latex"))
    # ... and is labelled for what it is: not a training loss
    assert any("not a training loss" in w.value for w in at.warning)
    assert any(r"\mathcal{L}_{\text{own output}} = " in x.value for x in at.get("latex"))
    table = at.dataframe[0].value
    assert list(table["decoder input"]) == [t.replace("▁", "␣") for t in run.tgt_tokens]
    # one word-start mark, as in the figures
    assert not any("▁" in t for t in table["decoder input"])
    np.testing.assert_allclose(table["p(expected)"], losses["p"], rtol=1e-5)
    # a typed reference becomes the target, shifted right
    at.text_input(key="training_reference").set_value("a man plays in the park .")
    table = rerun(at).dataframe[0].value
    assert table["decoder input"].iloc[0] == "<s>" and table["expected output"].iloc[-1] == "</s>"
    assert list(table["decoder input"])[1:] == list(table["expected output"])[:-1]
    # now a training loss
    assert not at.warning and not any("own output" in x.value for x in at.get("latex"))
    at.text_input(key="training_reference").set_value("")
    before = chart(rerun(at), "training-teacher-forcing")["data"]
    assert chart(change_sentence(at, OTHER_SENTENCE), "training-teacher-forcing")["data"] != before
