"""The DETR page's later steps (pages/detr.py): where an object query looks (decoder
cross-attention over the feature map), where a feature-map cell looks (encoder self-attention), and
how training pairs queries with objects (Hungarian matching)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from transformer_viz.app import widgets
from transformer_viz.models.detr.boxes import hungarian_match, matching_cost, set_loss
from transformer_viz.models.detr.config import CLASSES
from transformer_viz.plots.detr import (attention_on_canvas_figure, cost_matrix_figure,
                                        detections_figure, query_colour)


def pick_head(column, key: str, weights: np.ndarray, h: int) -> tuple[np.ndarray, str]:
    """A Head picker (a head, or the mean of the heads) -> that head's weights (h, …) -> (…) and its
    name."""
    choice = column.selectbox("Head", ["mean"] + list(range(h)), key=key)
    if choice == "mean":
        return weights.mean(0), "mean of the heads"
    return weights[int(choice)], f"head {choice}"


def cross_step(cfg, canvas, trace, found: list) -> None:
    """Step 2: one query's decoder cross-attention over the feature-map cells, on the canvas."""
    logits, boxes = trace["detr.class_logits"][0], trace["detr.boxes"][0]  # (M, C+1), (M, 4)
    query_col, layer_col, head_col = st.columns(3)
    default = found[0].query if found else 0
    query = query_col.selectbox("Query", list(range(cfg.n_queries)), index=default,
                                key="detr_query")
    layer = layer_col.selectbox("Decoder layer", list(range(cfg.n_decoder_layers)),
                                index=cfg.n_decoder_layers - 1, key="detr_dec_layer")
    weights, which = pick_head(head_col, "detr_dec_head",
                               trace[f"decoder.{layer}.cross_attn.weights"][0].numpy(), cfg.h)
    weights = weights[query]  # (S,)
    answer = CLASSES[int(logits[query].argmax())]
    fig = widgets.cached_figure(attention_on_canvas_figure, canvas.image, weights,
                                [boxes[query].numpy()],
                                [query_colour(query)], title=f"Query {query} (says {answer}): "
                                f"cross-attention, layer {layer}, {which}")
    widgets.chart(fig, {"cell": list(range(cfg.n_tokens)), "weight": weights}, "detr-cross",
                  caption=f"Row {query} of decoder.{layer}.cross_attn.weights: how much of "
                          f"each of the {cfg.grid}×{cfg.grid} feature-map cells this query "
                          f"reads, spread over the cell's {4 * 4} pixels; its predicted box in "
                          "its colour. Compare the queries: each reads its own part of the "
                          "canvas.")


def self_step(cfg, canvas, trace) -> None:
    """Step 3: one feature-map cell's encoder self-attention over the others, on the canvas."""
    row_col, col_col, layer_col, head_col = st.columns(4)
    row = row_col.selectbox("Cell row", list(range(cfg.grid)), index=cfg.grid // 2,
                            key="detr_row")
    col = col_col.selectbox("Cell column", list(range(cfg.grid)), index=cfg.grid // 2,
                            key="detr_col")
    layer = layer_col.selectbox("Encoder layer", list(range(cfg.n_encoder_layers)),
                                key="detr_enc_layer")
    cell = row * cfg.grid + col
    weights, which = pick_head(head_col, "detr_enc_head",
                               trace[f"encoder.{layer}.self_attn.weights"][0].numpy(), cfg.h)
    weights = weights[cell]  # (S,)
    fig = widgets.cached_figure(attention_on_canvas_figure, canvas.image, weights,
                                marker=(row, col),
                                title=f"Cell ({row}, {col}) attends to…: encoder layer "
                                f"{layer}, {which}")
    widgets.chart(fig, {"cell": list(range(cfg.n_tokens)), "weight": weights}, "detr-self",
                  caption=f"Row {cell} of encoder.{layer}.self_attn.weights: the blue square "
                          "is the cell that asks; orange, the cells it reads. Each cell covers "
                          "4×4 pixels of the canvas.")


def matching_step(canvas, trace, query_names: list[str]) -> None:
    """Step 4: the Hungarian pairing of true objects with queries, its cost matrix and the set
    loss."""
    logits, boxes = trace["detr.class_logits"][0], trace["detr.boxes"][0]  # (M, C+1), (M, 4)
    labels, true_boxes = torch.from_numpy(canvas.labels), torch.from_numpy(canvas.boxes)
    cost = matching_cost(logits, boxes, labels, true_boxes).numpy()  # (M, n)
    queries, objects = hungarian_match(cost)
    loss = set_loss(logits[None], boxes[None], [labels], [true_boxes])
    object_names = [f"{d} (#{j + 1})" for j, d in enumerate(canvas.labels)]
    left, right = st.columns(2)
    with left:
        texts = [f"q{q} → {object_names[j]}" for q, j in zip(queries, objects)]
        fig = widgets.cached_figure(detections_figure, canvas.image, boxes[queries].numpy(),
                                    queries.tolist(),
                                    texts, canvas.boxes,
                                    title="Hungarian matching: query → true object")
        widgets.chart(fig, {"query": queries, "object": [object_names[j] for j in objects],
                            "cost": cost[queries, objects]}, "detr-matching",
                      caption="Dotted green: the true boxes. Each true object is paired with "
                              "the one query that makes the total cost least; in training, "
                              "only those queries learn a box, and all the others learn to say "
                              "∅.")
    with right:
        fig = widgets.cached_figure(cost_matrix_figure, cost,
                                    list(zip(queries.tolist(), objects.tolist())),
                                    object_names,
                                    title="Cost −P(class) + 5·L1 − 2·GIoU; red: the pairing")
        widgets.chart(fig, widgets.token_frame(cost, query_names, object_names), "detr-cost")
    st.markdown(f"The set loss of this canvas: cross-entropy **{float(loss['class']):.3f}** (∅ "
                f"weighted 0.1) + 5 × L1 **{float(loss['l1']):.3f}** + 2 × (1 − GIoU) "
                f"**{float(loss['giou']):.3f}** = **{float(loss['loss']):.3f}**.")
