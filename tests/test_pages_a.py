"""The tokens, positional, attention and shapes pages through Streamlit's AppTest, on the tiny checkpoint."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from transformer_viz.plots.common import safe_label
from transformer_viz.trace import trace_names

SENTENCE = "ein mann spielt im park ."
OTHER = "zwei kinder sitzen am strand mit einem ball ."


@pytest.fixture()
def app(make_app):
    return make_app()


def open_page(at: AppTest, page: str) -> AppTest:
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def specs(at: AppTest) -> dict[str, str]:
    """Chart name (the key given to webapp.chart) -> its plotly JSON."""
    return {c.proto.id.split("chart-", 1)[1]: c.proto.spec for c in at.get("plotly_chart")}


def chart(at: AppTest, name: str) -> dict:
    return json.loads(specs(at)[name])


def array(value) -> np.ndarray:
    """A plotly JSON array: a list, or {dtype, bdata (base64), shape} for numpy data."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(data))).split(",")]
        return data.reshape(shape)
    return np.asarray(value, dtype=object)


def latex(at: AppTest) -> str:
    return "\n".join(el.value for el in at.latex)


def other_sentence(make_app, page: str) -> AppTest:
    # A fresh session on OTHER. (Changing the sidebar's text area after switch_page does not work in
    # AppTest: with a pages/ folder it runs the page script alone, without app.py and its sidebar.)
    return open_page(make_app(OTHER), page)


def test_tokens_page(app, make_app, tokenizer, every_step, open_step):
    at = open_page(app, "app_pages/tokens.py")
    assert at.title[0].value == "Tokens & embeddings"
    first = every_step(at, "tokens_step")
    assert set(first) == {"tokens-padding", "tokens-embedding", "tokens-scaling", "tokens-cosine", "tokens-neighbours"}
    tex = latex(open_step(at, "tokens_step", 3))
    assert r"\sqrt{32}" in tex and "5.6569" in tex  # d_model of the tiny model, and √32
    table = open_step(at, "tokens_step", 0).dataframe[0].value
    ids = tokenizer(SENTENCE, add_special_tokens=False)["input_ids"] + [2]
    assert list(table["ID"]) == ids
    assert list(table["token"]) == tokenizer.convert_ids_to_tokens(ids)
    S = len(ids)

    embedding = json.loads(first["tokens-embedding"])["data"][-1]
    assert array(embedding["z"]).shape == (S, 32)
    # Nearest neighbours: rank #0 is each token itself.
    neighbours = json.loads(first["tokens-neighbours"])["data"][0]
    assert [row[0] for row in neighbours["text"]] == [safe_label(t) for t in table["token"]]
    np.testing.assert_allclose(array(neighbours["z"])[:, 0].astype(float), 1.0, atol=1e-6)

    # Padding: the chosen length, the padded IDs, the mask.
    open_step(at, "tokens_step", 1)
    at.number_input[0].set_value(S + 3)
    rerun(at)
    padding = chart(at, "tokens-padding")["data"][0]
    assert padding["text"][0] == [str(i) for i in ids] + ["0"] * 3
    assert padding["text"][1] == ["1"] * S + ["0"] * 3
    at.toggle[0].set_value(False)
    rerun(at)
    assert "tokens-padding" not in specs(at)

    after = every_step(other_sentence(make_app, "app_pages/tokens.py"), "tokens_step")
    for name in ("tokens-embedding", "tokens-cosine", "tokens-neighbours"):
        assert first[name] != after[name], name


def test_tokens_in_figures_are_escaped(make_app, every_step):
    found = every_step(open_page(make_app("ein <b>mann</b> & <script> ."), "app_pages/tokens.py"), "tokens_step")
    for name in ("tokens-embedding", "tokens-cosine", "tokens-neighbours"):
        trace = json.loads(found[name])["data"][-1]
        labels = list(trace["y"]) + [t for row in trace.get("text") or [] for t in row]
        assert all("<" not in label and ">" not in label for label in labels), (name, labels)
        assert any("&lt;" in label for label in labels), name


def test_positional_page(app, make_app, every_step, open_step):
    at = open_page(app, "app_pages/positional.py")
    assert at.title[0].value == "Positional encoding"
    first = every_step(at, "positional_step")
    assert set(first) == {"positional-matrix", "positional-curves", "positional-similarity", "positional-sum",
                          "positional-norms", "positional-order", "positional-wavelengths"}
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
    matrix_10000 = specs(open_step(at, "positional_step", 0))["positional-matrix"]
    at.select_slider[0].set_value(100)
    rerun(at)
    assert specs(at)["positional-matrix"] != matrix_10000
    assert r"100^{2i/32}" in latex(open_step(at, "positional_step", 2))  # the similarity formula follows
    assert any("10000" in i.value for i in at.info)

    after = every_step(other_sentence(make_app, "app_pages/positional.py"), "positional_step")
    for name in ("positional-sum", "positional-norms", "positional-order"):
        assert first[name] != after[name], name


def test_attention_page_every_kind(app, make_app, every_step):
    at = open_page(app, "app_pages/attention.py")
    assert at.title[0].value == "Attention, step by step"
    # Only the open step runs: the first step alone draws Q, K and V.
    assert set(specs(at)) == {"attention-q", "attention-k", "attention-v"}
    first = every_step(at, "attention_step")
    expected = {"attention-q", "attention-k", "attention-v", "attention-scores", "attention-mask",
                "attention-masked-scores", "attention-weights", "attention-heads", "attention-worked",
                "attention-lookup", "attention-lookup-result"}
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
        grey_cells[kind] = 0 if len(masked) == 1 else int((~np.isnan(array(masked[0]["z"]).astype(float))).sum())
        weights = array(json.loads(found["attention-weights"])["data"][-1]["z"]).astype(float)
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    # Only the decoder's self-attention masks anything (the future), T(T−1)/2 cells.
    T = len(json.loads(found["attention-q"])["data"][-1]["y"])  # the last kind shown: cross-attention, queries = T
    assert grey_cells["Decoder masked self-attention"] == T * (T - 1) // 2
    assert grey_cells["Encoder self-attention"] == 0 and grey_cells["Decoder cross-attention"] == 0

    # Cross-attention: T queries × S keys.
    weights = json.loads(found["attention-weights"])["data"][-1]
    assert len(weights["y"]) == T and len(weights["x"]) == len(json.loads(found["attention-k"])["data"][-1]["y"])

    # Another query/key pair (the last step is open): the worked score follows.
    query = next(s for s in at.selectbox if s.label == "Query i")
    query.set_value(2)
    rerun(at)
    assert r"q_{2} \cdot k_{0}" in latex(at)

    after = every_step(other_sentence(make_app, "app_pages/attention.py"), "attention_step")
    for name in ("attention-q", "attention-scores", "attention-weights", "attention-heads"):
        assert first[name] != after[name], name


def test_shapes_page(app, make_app, tokenizer):
    at = open_page(app, "app_pages/shapes.py")
    first = specs(at)
    assert at.title[0].value == "Shapes"
    assert {"shapes-flow-loaded", "shapes-flow-base"} <= set(specs(at))
    tex = latex(at)
    assert r"d_{model} = 512" in tex and r"d_{model} = 32" in tex
    table = at.dataframe[0].value
    assert list(table["name"]) == [name for name, _, _ in trace_names(6)]
    rows = table.set_index("name")
    n_words = len(SENTENCE.split())
    S_base = n_words + 1  # the base model counts whitespace words, plus </s>
    assert rows.loc["encoder.0.self_attn.q", "paper base"] == f"(1, 8, {S_base}, 64)"
    assert rows.loc["encoder.5.ffn.hidden", "paper base"] == f"(1, {S_base}, 2048)"
    loaded = [c for c in table.columns if c.startswith("loaded")][0]
    assert rows.loc["encoder.5.ffn.hidden", loaded] == "—"  # the tiny model has 2 layers
    S = len(tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]) + 1
    assert rows.loc["encoder.0.self_attn.q", loaded] == f"(1, 4, {S}, 8)"  # tiny: h = 4, d_k = 8
    flow = chart(at, "shapes-flow-base")["data"][0]["text"]
    assert f"<b>(1, {S_base}, 512)</b>" in flow[1]

    after = specs(other_sentence(make_app, "app_pages/shapes.py"))
    assert first["shapes-flow-loaded"] != after["shapes-flow-loaded"]
    assert first["shapes-flow-base"] != after["shapes-flow-base"]
