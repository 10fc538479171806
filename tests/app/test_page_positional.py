"""The Positional encoding page through AppTest, on the tiny checkpoint."""

from __future__ import annotations

import json

import numpy as np

from tests.support.apptest import OTHER_SENTENCE, change_sentence, charts, latex, rerun


def test_positional_page(open_app, every_step, open_step):
    at = open_app("transformer_viz/app/pages/positional.py")
    assert at.title[0].value == "Positional encoding"
    first = every_step(at, "positional_step")
    assert set(first) == {"positional-matrix", "positional-curves", "positional-similarity",
                          "positional-sum", "positional-norms", "positional-order",
                          "positional-wavelengths"}
    assert r"10000^{2i/32}" in latex(at)

    # Same words reversed (the last step, left open): identical embedding rows, different inputs for
    # every token that moved.
    table = at.dataframe[0].value
    moved = table["position (original)"] != table["position (reversed)"]
    assert moved.sum() >= 4
    np.testing.assert_allclose(table["‖Δ embedding‖"].astype(float), 0.0, atol=1e-5)
    assert (table["‖Δ input‖"][moved] > 0.1).all()
    assert (table["‖Δ input‖"][~moved] < 1e-5).all()
    assert any("ein mann spielt im park" in t.value for t in at.text)
    assert any(". park im spielt mann ein" in t.value for t in at.text)

    # The base slider changes the PE matrix (and says the model keeps its own base).
    matrix_10000 = charts(open_step(at, "positional_step", 0))["positional-matrix"]
    # the default view groups the sin and the cos columns side by side (no moiré); 16 of d_model =
    # 32 each
    grouped = json.loads(matrix_10000)["data"]
    assert [t["name"] for t in grouped] == ["sin (dimension 2i)", "cos (dimension 2i+1)"]
    assert [len(t["x"]) for t in grouped] == [16, 16]
    at.select_slider[0].set_value(100)
    rerun(at)
    assert charts(at)["positional-matrix"] != matrix_10000
    # the similarity formula follows
    assert r"100^{2i/32}" in latex(open_step(at, "positional_step", 2))
    assert any("10000" in i.value for i in at.info)

    after = every_step(change_sentence(at, OTHER_SENTENCE), "positional_step")
    for name in ("positional-sum", "positional-norms", "positional-order"):
        assert first[name] != after[name], name
