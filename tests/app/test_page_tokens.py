"""The Tokens & embeddings page through AppTest, on the tiny checkpoint."""

from __future__ import annotations

import json

import numpy as np

from tests.support.apptest import (OTHER_SENTENCE, SENTENCE, change_sentence, chart, charts, latex,
                                   rerun)
from tests.support.figures import array
from transformer_viz.plots.common import safe_label


def test_tokens_page(open_app, tokenizer, every_step, open_step):
    at = open_app("transformer_viz/app/pages/tokens.py")
    assert at.title[0].value == "Tokens & embeddings"
    first = every_step(at, "tokens_step")
    assert (set(first)
            == {"tokens-padding", "tokens-embedding", "tokens-scaling", "tokens-cosine",
                "tokens-neighbours"})
    tex = latex(open_step(at, "tokens_step", 3))
    assert r"\sqrt{32}" in tex and "5.6569" in tex  # d_model of the tiny model, and √32
    table = open_step(at, "tokens_step", 0).dataframe[0].value
    ids = tokenizer(SENTENCE, add_special_tokens=False)["input_ids"] + [2]
    assert list(table["ID"]) == ids
    # word starts as ␣
    assert (list(table["token"])
            == [t.replace("▁", "␣") for t in tokenizer.convert_ids_to_tokens(ids)])
    S = len(ids)

    embedding = json.loads(first["tokens-embedding"])["data"][-1]
    assert array(embedding["z"]).shape == (S, 32)
    # Nearest neighbours: rank #0 is each token itself.
    neighbours = json.loads(first["tokens-neighbours"])["data"][0]
    assert [row[0] for row in neighbours["text"]] == [safe_label(t) for t in table["token"]]
    np.testing.assert_allclose(array(neighbours["z"])[:, 0], 1.0, atol=1e-6)

    # Padding: the chosen length, the padded IDs, the mask.
    open_step(at, "tokens_step", 1)
    at.number_input[0].set_value(S + 3)
    rerun(at)
    padding = chart(at, "tokens-padding")["data"][0]
    assert padding["text"][0] == [str(i) for i in ids] + ["0"] * 3
    assert padding["text"][1] == ["1"] * S + ["0"] * 3
    at.toggle[0].set_value(False)
    rerun(at)
    assert "tokens-padding" not in charts(at)

    after = every_step(change_sentence(at, OTHER_SENTENCE), "tokens_step")
    for name in ("tokens-embedding", "tokens-cosine", "tokens-neighbours"):
        assert first[name] != after[name], name


def test_tokens_in_figures_are_escaped(open_app, every_step):
    found = every_step(open_app("transformer_viz/app/pages/tokens.py",
                                "ein <b>mann</b> & <script> ."), "tokens_step")
    for name in ("tokens-embedding", "tokens-cosine", "tokens-neighbours"):
        trace = json.loads(found[name])["data"][-1]
        labels = list(trace["y"]) + [t for row in trace.get("text") or [] for t in row]
        assert all("<" not in label and ">" not in label for label in labels), (name, labels)
        assert any("&lt;" in label for label in labels), name
