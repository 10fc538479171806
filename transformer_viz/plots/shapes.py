"""Tensor shapes through the model: a table of every traced name and a flow figure of the main
steps."""

from __future__ import annotations

import re

import plotly.graph_objects as go

from transformer_viz.plots.blocks import GAP, Diagram, stack
from transformer_viz.plots.common import (ADD_NORM_FILL, DECODER_FILL, EMBEDDING_FILL, ENCODER_FILL,
                                          OUTPUT_FILL, safe_label)

# The path a sentence takes, one representative tensor per step (layer 0: every layer has the same
# shapes), bottom to top as the architecture is drawn: the encoder's steps, then the decoder's
# ("\n" breaks a label).
FLOW_STEPS: list[tuple[str, str]] = [
    ("source IDs", "src.token_ids"),
    ("embedding\n×√d_model + PE", "src.input"),
    ("Q, K, V\nin h heads", "encoder.0.self_attn.q"),
    ("softmax\n(QKᵀ/√d_k)", "encoder.0.self_attn.weights"),
    ("weights · V", "encoder.0.self_attn.heads"),
    ("concat · W_O", "encoder.0.self_attn.out"),
    ("Add & Norm", "encoder.0.norm1.out"),
    ("FFN hidden", "encoder.0.ffn.hidden"),
    ("Add & Norm", "encoder.0.norm2.out"),
    ("encoder output\n(memory)", "encoder.out"),
    ("target IDs\n(<s> + output)", "tgt.token_ids"),
    ("embedding\n×√d_model + PE", "tgt.input"),
    ("masked self-attn\nweights", "decoder.0.self_attn.weights"),
    ("Add & Norm", "decoder.0.norm1.out"),
    ("cross-attn\nweights", "decoder.0.cross_attn.weights"),
    ("Add & Norm", "decoder.0.norm2.out"),
    ("FFN hidden", "decoder.0.ffn.hidden"),
    ("Add & Norm", "decoder.0.norm3.out"),
    ("decoder output", "decoder.out"),
    ("logits", "logits"),
]
# the encoder's steps come first
ENCODER_STEPS = [name for _, name in FLOW_STEPS].index("tgt.token_ids")
# x from 0 to 100: each column's boxes and its residual paths, on the outer side (clear of
# the memory's path).
ENCODER = {"boxes": (6, 46), "residual": 3}
DECODER = {"boxes": (54, 94), "residual": 97}
MEMORY_X = 50


def format_shape(shape) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def shape_table(names: list[tuple[str, str, str]],
                shapes_by_model: dict[str, dict[str, tuple[int, ...]]]) -> list[dict]:
    """One row per traced name (from ``trace_names``): symbolic shape and each model's actual shape.

    A model with fewer layers has no entry for the deeper names: shown as "—". The formulas are in
    :func:`formula_table`, once per kind of tensor: beside the shapes they made the table wider than
    the page.
    """
    rows = []
    for name, symbolic, _ in names:
        row = {"name": name, "shape (symbols)": symbolic}
        for model, shapes in shapes_by_model.items():
            row[model] = format_shape(shapes[name]) if name in shapes else "—"
        rows.append(row)
    return rows


def formula_table(names: list[tuple[str, str, str]]) -> list[dict]:
    """What each kind of traced tensor is: one row per name with its layer number written i
    ("encoder.i.self_attn.q"), in trace order, with its formula. Every layer computes
    the same formulas."""
    rows: dict[str, str] = {}
    for name, _, formula in names:
        rows.setdefault(re.sub(r"\.\d+\.", ".i.", name), formula)
    return [{"name (layer i)": name, "formula": formula} for name, formula in rows.items()]


def flow_steps(shapes: dict[str, tuple[int, ...]], names: list[tuple[str, str, str]]) -> list[dict]:
    """The FLOW_STEPS with their symbolic shape (from ``trace_names``) and this run's numbers."""
    symbolic = {name: shape for name, shape, _ in names}
    return [{"step": label, "name": name, "symbols": symbolic[name],
             "shape": format_shape(shapes[name])}
            for label, name in FLOW_STEPS]


def _fill(name: str, decoder: bool) -> str:
    if name.endswith((".token_ids", ".input")):
        return EMBEDDING_FILL
    if ".norm" in name:
        return ADD_NORM_FILL
    return OUTPUT_FILL if name == "logits" else (DECODER_FILL if decoder else ENCODER_FILL)


def shape_flow_figure(steps: list[dict], title: str | None = None) -> go.Figure:
    """The steps bottom to top, the encoder's on the left and the decoder's on the right, each box
    with its shape in numbers (bold) and in symbols; arrows along the flow, the residual connection
    around each sublayer into its Add & Norm, and the memory into cross-attention
    (its keys and values)."""
    diagram = Diagram()
    columns = {}
    for decoder, column, part in ((False, ENCODER, steps[:ENCODER_STEPS]),
                                  (True, DECODER, steps[ENCODER_STEPS:])):
        columns[decoder] = stack(diagram, *column["boxes"], 0, [
            (_fill(s["name"], decoder), [safe_label(s["step"].replace("\n", " ")),
                                         f"<b>{s['shape']}</b>  {safe_label(s['symbols'])}"],
             f"{safe_label(s['name'])}: {safe_label(s['symbols'])} = {s['shape']}")
            for s in part], GAP)
        # Each sublayer starts after the layer's input (the embedding) or the previous Add & Norm.
        start = next(i for i, s in enumerate(part) if s["name"].endswith(".input")) + 1
        for i, s in enumerate(part):
            if ".norm" in s["name"]:
                diagram.residual(columns[decoder][start], columns[decoder][i], column["residual"])
                start = i + 1
    memory = next(i for i, s in enumerate(steps) if s["name"] == "encoder.out")
    cross = next(i for i, s in enumerate(steps) if ".cross_attn." in s["name"]) - ENCODER_STEPS
    diagram.connector(columns[False][memory], columns[True][cross], MEMORY_X, "memory → K, V")
    return diagram.figure(title)
