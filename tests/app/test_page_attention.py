"""The Attention, step by step page through AppTest, on the tiny checkpoint: every kind of
attention, the worked score against the trace, the masked cells."""

from __future__ import annotations

import json
import re

import numpy as np

from tests.support.apptest import OTHER_SENTENCE, change_sentence, charts, latex, rerun
from tests.support.figures import array


def test_attention_page_every_kind(open_app, every_step):
    at = open_app("transformer_viz/app/pages/attention.py")
    assert at.title[0].value == "Attention, step by step"
    # Only the open step runs: the first step alone draws Q, K and V.
    qkv = charts(at)
    assert set(qkv) == {"attention-q", "attention-k", "attention-v"}
    # one symmetric colour range for Q, K and V, wide enough for all three
    ranges = set()
    for name in ("attention-q", "attention-k", "attention-v"):
        trace = json.loads(qkv[name])["data"][-1]
        assert np.abs(array(trace["z"])).max() <= trace["zmax"] == -trace["zmin"]
        ranges.add(trace["zmax"])
    assert len(ranges) == 1
    first = every_step(at, "attention_step")
    expected = {"attention-q", "attention-k", "attention-v", "attention-scores", "attention-mask",
                "attention-masked-scores", "attention-weights", "attention-heads",
                "attention-worked", "attention-lookup", "attention-lookup-result"}
    assert set(first) == expected
    kinds = at.radio[0].options
    assert len(kinds) == 3
    grey_cells = {}
    for kind in kinds:
        at.radio[0].set_value(kind)
        rerun(at)
        found = every_step(at, "attention_step")
        assert set(found) == expected, kind
        # The worked score (the last step, left open) equals the traced one.
        delta = re.search(r"\|\\Delta\| = ([0-9.]+)(?: \\times 10\^\{(-?\d+)\})?\)", latex(at))
        assert delta, kind
        assert float(delta.group(1)) * 10.0 ** int(delta.group(2) or 0) < 1e-4, kind
        masked = json.loads(found["attention-masked-scores"])["data"]
        grey_cells[kind] = 0 if len(masked) == 1 else int((~np.isnan(array(masked[0]["z"]))).sum())
        weight_traces = json.loads(found["attention-weights"])["data"]
        weights = array(weight_traces[-1]["z"])
        # masked cells hold no colour
        np.testing.assert_allclose(np.nansum(weights, axis=1), 1.0, atol=1e-5)
        # the weights grey exactly the cells the masked scores grey
        grey_weights = (0 if len(weight_traces) == 1
                        else int((~np.isnan(array(weight_traces[0]["z"]))).sum()))
        assert grey_weights == grey_cells[kind] == int(np.isnan(weights).sum()), kind
    # Only the decoder's self-attention masks anything (the future), T(T−1)/2 cells.
    # the last kind shown: cross-attention, queries = T
    T = len(json.loads(found["attention-q"])["data"][-1]["y"])
    assert grey_cells["Decoder masked self-attention"] == T * (T - 1) // 2
    assert grey_cells["Encoder self-attention"] == 0 and grey_cells["Decoder cross-attention"] == 0

    # Cross-attention: T queries × S keys.
    weights = json.loads(found["attention-weights"])["data"][-1]
    assert (len(weights["y"]) == T
            and len(weights["x"]) == len(json.loads(found["attention-k"])["data"][-1]["y"]))

    # Another query/key pair (the last step is open): the worked score follows.
    query = next(s for s in at.selectbox if s.label == "Query i")
    query.set_value(2)
    rerun(at)
    assert r"q_{2} \cdot k_{0}" in latex(at)

    after = every_step(change_sentence(at, OTHER_SENTENCE), "attention_step")
    for name in ("attention-q", "attention-scores", "attention-weights", "attention-heads"):
        assert first[name] != after[name], name
