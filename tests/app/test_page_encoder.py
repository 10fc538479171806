"""The Encoder page through AppTest: the heads, Add & Norm and the feed-forward of the traced
run."""

from __future__ import annotations

import numpy as np

from tests.support.apptest import OTHER_SENTENCE, SENTENCE, change_sentence, chart, rerun
from tests.support.figures import z_of
from transformer_viz.engine import run_sentence


def heatmaps(figure: dict) -> list[dict]:
    return [t for t in figure["data"] if t["type"] == "heatmap"]


def test_encoder_page(open_app, tiny_checkpoint, every_step, open_step):
    at = open_app("transformer_viz/app/pages/encoder.py")
    assert at.title[0].value == "Encoder"
    assert set(every_step(at, "encoder_step")) == {"encoder-head-grid", "encoder-head",
                                                   "encoder-layernorm", "encoder-gamma-beta",
                                                   "encoder-ffn-hidden", "encoder-ffn-zeros"}
    assert len(at.get("latex")) >= 2
    cfg = tiny_checkpoint.config
    run = run_sentence(tiny_checkpoint, SENTENCE)
    S = len(run.src_ids)
    # the ReLU numbers (the last step, left open) are those of the trace
    hidden = run.trace["encoder.0.ffn.hidden"][0].numpy()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ReLU units at exactly 0"] == f"{(hidden == 0).mean():.1%}"
    assert metrics["zero units / all units"] == f"{int((hidden == 0).sum())} / {S * cfg.d_ff}"
    heads = heatmaps(chart(open_step(at, "encoder_step", 0), "encoder-head-grid"))
    assert [t["name"] for t in heads] == [f"head {j}" for j in range(cfg.h)]
    expected = run.trace["encoder.0.self_attn.weights"][0].numpy()
    for j, t in enumerate(heads):
        np.testing.assert_allclose(z_of(t), expected[j], atol=1e-6)
    # norm1 vs norm2 really switches the data
    before = chart(open_step(at, "encoder_step", 1), "encoder-layernorm")
    # the tiny model is Post-LN, like the paper: named, and Pre-LN named as the usual alternative
    assert any("**Post-LN**, the paper's choice" in m.value and "**Pre-LN**" in m.value
               for m in at.markdown)
    at.radio(key="encoder_norm").set_value("norm2")
    assert chart(rerun(at), "encoder-layernorm")["data"] != before["data"]
    # layer 1 in the sidebar gives that layer's heads
    open_step(at, "encoder_step", 0)
    at.selectbox(key="layer").set_value(1)
    heads = heatmaps(chart(rerun(at), "encoder-head-grid"))
    np.testing.assert_allclose(z_of(heads[0]),
                               run.trace["encoder.1.self_attn.weights"][0, 0].numpy(), atol=1e-6)
    grid_before = chart(at, "encoder-head-grid")["data"]
    assert chart(change_sentence(at, OTHER_SENTENCE), "encoder-head-grid")["data"] != grid_before
