"""Tensor shapes through the model: a table of every traced name and a flow figure of the main steps."""

from __future__ import annotations

import re

import plotly.graph_objects as go

from .common import ARROW, DECODER_FILL, ENCODER_FILL, OUTLINE, OUTPUT_FILL, base_layout, safe_label

# The path a sentence takes, one representative tensor per step (layer 0: every layer has the same shapes).
FLOW_STEPS: list[tuple[str, str]] = [  # "\n" breaks a label into lines
    ("source IDs", "src.token_ids"),
    ("embedding\n×√d_model + PE", "src.input"),
    ("Q, K, V\nin h heads", "encoder.0.self_attn.q"),
    ("softmax\n(QKᵀ/√d_k)", "encoder.0.self_attn.weights"),
    ("weights · V", "encoder.0.self_attn.heads"),
    ("concat · W_O", "encoder.0.self_attn.out"),
    ("FFN hidden", "encoder.0.ffn.hidden"),
    ("encoder output\n(memory)", "encoder.out"),
    ("target IDs\n(<s> + output)", "tgt.token_ids"),
    ("embedding\n×√d_model + PE", "tgt.input"),
    ("masked self-attn\nweights", "decoder.0.self_attn.weights"),
    ("cross-attn\nweights", "decoder.0.cross_attn.weights"),
    ("FFN hidden", "decoder.0.ffn.hidden"),
    ("decoder output", "decoder.out"),
    ("logits", "logits"),
]
ENCODER_STEPS = 8  # the first 8 steps are the encoder's, the rest the decoder's


def format_shape(shape) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def shape_table(names: list[tuple[str, str, str]],
                shapes_by_model: dict[str, dict[str, tuple[int, ...]]]) -> list[dict]:
    """One row per traced name (from ``trace_names``): symbolic shape and each model's actual shape.

    A model with fewer layers has no entry for the deeper names: shown as "—". The formulas are in
    :func:`formula_table`, once per kind of tensor: beside the shapes they made the table wider than the page.
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
    ("encoder.i.self_attn.q"), in trace order, with its formula. Every layer computes the same formulas."""
    rows: dict[str, str] = {}
    for name, _, formula in names:
        rows.setdefault(re.sub(r"\.\d+\.", ".i.", name), formula)
    return [{"name (layer i)": name, "formula": formula} for name, formula in rows.items()]


def flow_steps(shapes: dict[str, tuple[int, ...]], names: list[tuple[str, str, str]]) -> list[dict]:
    """The FLOW_STEPS with their symbolic shape (from ``trace_names``) and this run's numbers."""
    symbolic = {name: shape for name, shape, _ in names}
    return [{"step": label, "name": name, "symbols": symbolic[name], "shape": format_shape(shapes[name])}
            for label, name in FLOW_STEPS]


def _lines(text: str) -> str:
    return "<br>".join(safe_label(line) for line in text.split("\n"))


def shape_flow_figure(steps: list[dict], title: str | None = None) -> go.Figure:
    """Boxes left to right, encoder on the top row and decoder below; the memory feeds cross-attention."""
    width, gap, height, row_gap = 1.0, 0.22, 1.3, 0.7
    positions, shapes, annotations = [], [], []
    for n, step in enumerate(steps):
        row = 0 if n < ENCODER_STEPS else 1
        col = n if row == 0 else n - ENCODER_STEPS
        x0, y0 = col * (width + gap), -row * (height + row_gap)
        positions.append((x0, y0))
        colour = OUTPUT_FILL if step["name"] == "logits" else (ENCODER_FILL if row == 0 else DECODER_FILL)
        shapes.append(dict(type="rect", x0=x0, y0=y0, x1=x0 + width, y1=y0 + height, fillcolor=colour,
                           line=dict(color=OUTLINE, width=1), layer="below"))
        if n and n != ENCODER_STEPS:
            px, py = positions[n - 1]
            annotations.append(dict(x=x0, y=y0 + height / 2, ax=px + width, ay=py + height / 2, xref="x", yref="y",
                                    axref="x", ayref="y", showarrow=True, arrowhead=2, text=""))
    # encoder output -> cross-attention (keys and values come from the memory)
    memory = next(i for i, s in enumerate(steps) if s["name"] == "encoder.out")
    cross = next(i for i, s in enumerate(steps) if ".cross_attn." in s["name"])
    (mx, my), (cx, cy) = positions[memory], positions[cross]
    annotations.append(dict(x=cx + width / 2, y=cy + height, ax=mx + width / 2, ay=my, xref="x", yref="y",
                            axref="x", ayref="y", showarrow=True, arrowhead=2, arrowcolor=ARROW, text=""))
    annotations.append(dict(x=(cx + mx) / 2 + width / 2, y=(cy + height + my) / 2, text="memory → K, V",
                            showarrow=False, bgcolor="white", font=dict(size=11, color=OUTLINE)))
    # One text trace and one layout update: plotly re-validates the whole list on every add_shape/add_annotation.
    fig = go.Figure(go.Scatter(
        x=[x + width / 2 for x, _ in positions], y=[y + height / 2 for _, y in positions], mode="text",
        showlegend=False, textfont=dict(size=11),
        text=[f"{_lines(s['step'])}<br><b>{s['shape']}</b><br>{safe_label(s['symbols'])}" for s in steps],
        hovertext=[f"{safe_label(s['name'])}: {safe_label(s['symbols'])} = {s['shape']}" for s in steps],
        hoverinfo="text"))
    fig.update_layout(shapes=shapes, annotations=annotations,
                      xaxis=dict(visible=False, range=[-0.1, ENCODER_STEPS * (width + gap)]),
                      yaxis=dict(visible=False, range=[-(height + row_gap) - 0.1, height + 0.1]))
    return base_layout(fig, title, height=380)
