"""plots/shapes.py: the table of every traced name and the flow figure, from a real trace."""

from __future__ import annotations

from tests.support.figures import assert_readable_diagram
from transformer_viz.models.transformer.names import trace_names
from transformer_viz.plots import shapes as shp


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
    assert (by_kind["logits"].startswith("decoder.out")
            and by_kind["decoder.i.cross_attn.k"].startswith("K = memory"))
    assert (list(by_kind)[:2] == ["src.token_ids", "src.embedding"]
            and "encoder.0.self_attn.q" not in by_kind)

    steps = shp.flow_steps(trace.shapes(), names)
    shapes = [s["shape"] for s in steps]
    assert shapes[0] == f"(1, {S})" and shapes[1] == f"(1, {S}, {cfg.d_model})"
    assert shapes[2] == f"(1, {cfg.h}, {S}, {cfg.d_k})" and shapes[3] == f"(1, {cfg.h}, {S}, {S})"
    assert shapes[-1] == f"(1, {T}, {cfg.vocab_size})"
    assert ([s["symbols"] for s in steps][:4]
            == ["(B, S)", "(B, S, d_model)", "(B, h, S, d_k)", "(B, h, S, S)"])
    fig = shp.shape_flow_figure(steps, "flow")
    # 14 px dark text inside its box, arrows, a residual per Add & Norm
    blocks = assert_readable_diagram(fig)
    assert len(blocks) == len(steps)
    text = ["<br>".join(b["lines"]) for b in blocks]
    assert f"<b>(1, {T}, {cfg.vocab_size})</b>" in text[-1]
    # labels are escaped
    assert "(&lt;s&gt; + output)" in text[[s["name"] for s in steps].index("tgt.token_ids")]
    # the residual connections: two around the encoder's sublayers, three around the decoder's
    assert sum(s.name == "residual" for s in fig.layout.shapes) == 5
    assert [s["step"] for s in steps].count("Add & Norm") == 5
    # the memory feeds cross-attention: an arrow into its box, labelled with the keys and values it
    # gives
    cross = blocks[[s["name"] for s in steps].index("decoder.0.cross_attn.weights")]
    memory_arrows = [a for a in fig.layout.annotations if a.name == "memory" and a.showarrow]
    assert [(a.x, a.y) for a in memory_arrows] == [(cross["x0"], cross["cy"])]
    assert any("K, V" in (a.text or "") for a in fig.layout.annotations)


def test_flow_boxes_fit_the_paper_base_model_on_long_sentences():
    from transformer_viz.models.transformer.config import preset

    cfg, S, T = preset("base"), 60, 64
    shapes = {"src.token_ids": (1, S), "tgt.token_ids": (1, T), "logits": (1, T, 37000)}
    for name, symbolic, _ in trace_names(1):
        dims = {"B": 1, "S": S, "T": T, "d_model": cfg.d_model, "h": cfg.h,
                "d_k": cfg.d_model // cfg.h, "d_ff": cfg.d_ff, "V": 37000}
        if symbolic.startswith("(") and name not in shapes:
            shapes[name] = tuple(dims[d.strip()] for d in symbolic.strip("()").split(","))
    assert_readable_diagram(shp.shape_flow_figure(shp.flow_steps(shapes, trace_names(1)), "base"))
