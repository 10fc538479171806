"""plots/shapes.py: the table of every traced name and the flow figure, from a real trace."""

from __future__ import annotations

from transformer_viz.plots import shapes as shp
from transformer_viz.trace import trace_names


def test_shape_table_and_flow_use_the_traced_shapes(sentence_trace, tiny_model):
    src_ids, tgt_ids, trace = sentence_trace
    cfg = tiny_model.cfg
    S, T = len(src_ids), len(tgt_ids)
    names = trace_names(6)
    rows = shp.shape_table(names, {"tiny": trace.shapes()})
    assert len(rows) == len(names)
    by_name = {r["name"]: r for r in rows}
    assert by_name["encoder.1.self_attn.q"]["tiny"] == f"(1, {cfg.h}, {S}, {cfg.d_k})"
    assert by_name["decoder.0.cross_attn.weights"]["tiny"] == f"(1, {cfg.h}, {T}, {S})"
    assert by_name["decoder.0.cross_attn.weights"]["shape (symbols)"] == "(B, h, T, S)"
    assert by_name["encoder.5.out"]["tiny"] == "—"  # the tiny model has N = 2 layers
    assert "formula" not in by_name["logits"]  # in the formula table, once per kind of tensor
    formulas = shp.formula_table(names)
    by_kind = {r["name (layer i)"]: r["formula"] for r in formulas}
    assert len(formulas) == len(trace_names(1))  # every layer has the same names
    assert by_kind["logits"].startswith("decoder.out") and by_kind["decoder.i.cross_attn.k"].startswith("K = memory")
    assert list(by_kind)[:2] == ["src.token_ids", "src.embedding"] and "encoder.0.self_attn.q" not in by_kind

    steps = shp.flow_steps(trace.shapes(), names)
    shapes = [s["shape"] for s in steps]
    assert shapes[0] == f"(1, {S})" and shapes[1] == f"(1, {S}, {cfg.d_model})"
    assert shapes[2] == f"(1, {cfg.h}, {S}, {cfg.d_k})" and shapes[3] == f"(1, {cfg.h}, {S}, {S})"
    assert shapes[-1] == f"(1, {T}, {cfg.vocab_size})"
    assert [s["symbols"] for s in steps][:4] == ["(B, S)", "(B, S, d_model)", "(B, h, S, d_k)", "(B, h, S, S)"]
    fig = shp.shape_flow_figure(steps, "flow")
    text = list(fig.data[0].text)
    assert len(text) == len(steps) and f"<b>(1, {T}, {cfg.vocab_size})</b>" in text[-1]
    assert len(fig.layout.shapes) == len(steps)
    assert "(&lt;s&gt; + output)" in text[8]  # the target IDs step: labels are escaped
    assert any("K, V" in (a.text or "") for a in fig.layout.annotations)
