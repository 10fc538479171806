"""The Decoder page through AppTest: masked self-attention, cross-attention and the output
distribution of the traced run."""

from __future__ import annotations

import numpy as np

from tests.support.apptest import OTHER_SENTENCE, SENTENCE, change_sentence, chart, charts, rerun
from tests.support.figures import array, traces, z_of
from transformer_viz.engine import run_sentence


def test_decoder_page(open_app, tiny_checkpoint, every_step, open_step):
    at = open_app("transformer_viz/app/pages/decoder.py")
    assert at.title[0].value == "Decoder"
    assert list(charts(at)) == ["decoder-masked-self-attention"]  # only the first step runs
    assert set(every_step(at, "decoder_step")) == {
        "decoder-masked-self-attention", "decoder-cross-grid", "decoder-cross-head",
        "decoder-layernorm", "decoder-gamma-beta", "decoder-ffn-hidden", "decoder-ffn-zeros",
        "decoder-output"}
    run = run_sentence(tiny_checkpoint, SENTENCE)
    T = len(run.tgt_ids)
    grey = traces(chart(open_step(at, "decoder_step", 0), "decoder-masked-self-attention"),
                  "masked scores masked")[0]
    assert (~np.isnan(z_of(grey))).sum() == T * (T - 1) // 2  # the cells above the diagonal
    cross = [t for t in chart(open_step(at, "decoder_step", 1), "decoder-cross-grid")["data"]
             if t["type"] == "heatmap"]
    assert len(cross) == tiny_checkpoint.config.h and z_of(cross[0]).shape == (T, len(run.src_ids))
    # the output distribution at position 0 is the top of probs[0, 0]
    out = chart(open_step(at, "decoder_step", 4), "decoder-output")["data"][0]
    probs = run.trace["probs"][0, 0].numpy()
    np.testing.assert_allclose(array(out["x"]), np.sort(probs)[::-1][:10], atol=1e-6)
    at.selectbox(key="decoder_position").set_value(T - 1)
    assert chart(rerun(at), "decoder-output")["data"] != [out]
    before = chart(open_step(at, "decoder_step", 1), "decoder-cross-head")["data"]
    assert chart(change_sentence(at, OTHER_SENTENCE), "decoder-cross-head")["data"] != before
