"""The Shapes page through AppTest: every traced tensor's shape for the tiny checkpoint and the
paper's base model."""

from __future__ import annotations

from tests.support.apptest import OTHER_SENTENCE, SENTENCE, change_sentence, chart, charts, latex
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.models.transformer.names import trace_names


def test_shapes_page(open_app, tokenizer):
    at = open_app("transformer_viz/app/pages/shapes.py")
    first = charts(at)
    assert at.title[0].value == "Shapes"
    assert {"shapes-flow-loaded", "shapes-flow-base"} <= set(first)
    tex = latex(at)
    assert r"d_{model} = 512" in tex and r"d_{model} = 32" in tex
    table = at.dataframe[0].value
    assert list(table["name"]) == [name for name, _, _ in trace_names(6)]
    rows = table.set_index("name")
    S_base = len(SENTENCE.split()) + 1  # the base model counts whitespace words, plus </s>
    assert rows.loc["encoder.0.self_attn.q", "paper base"] == f"(1, 8, {S_base}, 64)"
    assert rows.loc["encoder.5.ffn.hidden", "paper base"] == f"(1, {S_base}, 2048)"
    # beside the shapes they made the table wider than the page
    assert "formula" not in table.columns
    # once per kind of tensor, wrapped
    formulas = at.table[0].value.set_index("name (layer i)")["formula"]
    assert (len(formulas) == len(trace_names(1))
            and formulas["decoder.i.cross_attn.k"].startswith("K = memory"))
    loaded = [c for c in table.columns if c.startswith("loaded")][0]
    assert rows.loc["encoder.5.ffn.hidden", loaded] == "—"  # the tiny model has 2 layers
    S = len(tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]) + 1
    assert rows.loc["encoder.0.self_attn.q", loaded] == f"(1, 4, {S}, 8)"  # tiny: h = 4, d_k = 8
    T_base = S_base + 2  # its made-up target is longer, so that cross-attention is visibly T x S
    assert T_base != S_base
    assert rows.loc["decoder.5.cross_attn.weights", "paper base"] == f"(1, 8, {T_base}, {S_base})"
    assert rows.loc["decoder.5.self_attn.weights", "paper base"] == f"(1, 8, {T_base}, {T_base})"
    # the parameter count printed is the model's own, 48,234,496 for V = 8000
    counted = Transformer(preset("base")).num_parameters()
    assert counted == 48_234_496
    text = " ".join(m.value for m in at.markdown)
    assert f"{counted:,} parameters" in text and "60M" not in text
    assert f"{counted - 8000 * 512:,} + 512·V" in text
    flow = chart(at, "shapes-flow-base")["data"][0]["text"]
    assert f"<b>(1, {S_base}, 512)</b>" in flow[1]

    after = charts(change_sentence(at, OTHER_SENTENCE))
    assert first["shapes-flow-loaded"] != after["shapes-flow-loaded"]
    assert first["shapes-flow-base"] != after["shapes-flow-base"]
