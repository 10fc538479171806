"""The attention views: one head of one attention at any step of the Attention page, and all the
heads of a layer side by side (the Encoder and Decoder pages)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from transformer_viz.plots import attention as attention_plots
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import head_grid
from transformer_viz.views.spec import FigureSpec
from transformer_viz.views.tables import token_frame

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun

# The short names of the three attentions -> the Attention page's names
# (plots.attention.ATTENTION_KINDS).
KINDS = {"encoder": "Encoder self-attention", "decoder": "Decoder masked self-attention",
         "cross": "Decoder cross-attention"}
KIND_OF_LABEL = {label: kind for kind, label in KINDS.items()}
ATTENTION_PARTS = ("q", "k", "v", "scores", "mask", "masked_scores", "weights", "heads")


def check_kind(kind: str) -> str:
    """The Attention page's name of the short name ``kind``; ValueError names the kinds."""
    if kind not in KINDS:
        raise ValueError(f"no attention {kind!r}; the kinds are {', '.join(KINDS)}")
    return KINDS[kind]


def check_part(part: str) -> str:
    if part not in ATTENTION_PARTS:
        raise ValueError(f"no part {part!r}; the parts are {', '.join(ATTENTION_PARTS)}")
    return part


def check_layer(run: SentenceRun, layer: int) -> int:
    N = run.config.N
    if not 0 <= layer < N:
        raise ValueError(f"layer {layer} does not exist: the model has N = {N} (0 … N − 1)")
    return layer


def check_head(run: SentenceRun, head: int) -> int:
    h = run.config.h
    if not 0 <= head < h:
        raise ValueError(f"head {head} does not exist: the model has h = {h} (0 … h − 1)")
    return head


@dataclass(frozen=True)
class Head:
    """One head of one attention sublayer: its trace prefix, its query and key tokens, and its
    arrays (plots.attention.head_arrays: q (Lq, d_k), k and v (Lk, d_k), scores, mask,
    masked_scores and weights (Lq, Lk), heads (Lq, d_k))."""
    prefix: str
    head: int
    q_tokens: list[str]
    k_tokens: list[str]
    arrays: dict


def attention_head(run: SentenceRun, layer: int = 0, head: int = 0,
                   kind: str = "encoder") -> Head:
    """The arrays of ``head`` in ``layer``'s attention ``kind``: "encoder", "decoder" or
    "cross"."""
    template, q_side, k_side = attention_plots.ATTENTION_KINDS[check_kind(kind)]
    q_tokens = run.src_tokens if q_side == "src" else run.tgt_tokens
    k_tokens = run.src_tokens if k_side == "src" else run.tgt_tokens
    prefix = template.format(layer=check_layer(run, layer))
    head = check_head(run, head)
    arrays = attention_plots.head_arrays(run.trace, prefix, head, len(q_tokens), len(k_tokens))
    return Head(prefix, head, q_tokens, k_tokens, arrays)


def attention_part(one: Head, part: str = "weights") -> FigureSpec:
    """The figure of one step of the Attention page: ``part`` as in :func:`attention`."""
    arrays, q_tokens, k_tokens = one.arrays, one.q_tokens, one.k_tokens
    values = arrays[check_part(part)]
    if part in ("q", "k", "v"):
        # One symmetric colour range for Q, K and V, so that one colour means one number in all
        # three.
        bound = float(max(np.abs(arrays[n]).max() for n in ("q", "k", "v")))
        tokens = q_tokens if part == "q" else k_tokens
        axis = "query token" if part == "q" else "key token"
        return FigureSpec(attention_plots.vectors_heatmap,
                          (values, tokens, f"{part.upper()} (head {one.head})", axis),
                          {"bound": bound}, token_frame(values, tokens))
    if part == "heads":
        return FigureSpec(attention_plots.vectors_heatmap,
                          (values, q_tokens, f"head {one.head} = weights · V", "query token"), {},
                          token_frame(values, q_tokens))
    if part == "mask":
        return FigureSpec(attention_plots.mask_heatmap, (values, q_tokens, k_tokens), {},
                          token_frame(np.where(values, 0.0, -np.inf), q_tokens, k_tokens))
    if part == "weights":
        return FigureSpec(attention_plots.weights_heatmap, (values, q_tokens, k_tokens),
                          {"masked": ~arrays["mask"]}, token_frame(values, q_tokens, k_tokens))
    title = "raw scores QKᵀ/√d_k" if part == "scores" else "masked scores S + M (−∞ grey)"
    return FigureSpec(attention_plots.scores_heatmap, (values, q_tokens, k_tokens, title), {},
                      token_frame(values, q_tokens, k_tokens))


def attention(run: SentenceRun, layer: int = 0, head: int = 0, kind: str = "encoder",
              part: str = "weights") -> FigureSpec:
    """One head of one attention, as the Attention page draws it (``kind``: "encoder", "decoder"
    (masked self-attention) or "cross"). ``part``: "q" (Lq, d_k), "k", "v" (Lk, d_k), "scores"
    QKᵀ/√d_k (Lq, Lk), "mask" (True = may attend), "masked_scores" (−∞ grey), "weights" (softmax,
    masked cells grey) or "heads" = weights · V (Lq, d_k); Lq, Lk: S or T by the kind (cross: T
    queries, S keys)."""
    return attention_part(attention_head(run, layer, head, kind), check_part(part))


# The heads grid's title by the kind: what it shows, and what its rows and columns are.
HEADS_TITLES = {"encoder": ("", "(row = query, column = key)"),
                "decoder": ("masked self-attention, ", "(row = query, column = key)"),
                "cross": ("cross-attention, ", "(row = target token, column = source token)")}


def heads(run: SentenceRun, layer: int = 0, kind: str = "encoder",
          selected: int | None = None) -> FigureSpec:
    """All h heads of one attention of a layer side by side, as the Encoder page ("encoder":
    (h, S, S)) and the Decoder page ("cross": (h, T, S)) draw them; "decoder": the masked
    self-attention (h, T, T). ``selected``: a head to outline."""
    template, q_side, k_side = attention_plots.ATTENTION_KINDS[check_kind(kind)]
    layer = check_layer(run, layer)
    weights = run.trace[f"{template.format(layer=layer)}.weights"][0].numpy()  # (h, Lq, Lk)
    x_labels = token_labels(run.src_tokens if k_side == "src" else run.tgt_tokens)
    y_labels = token_labels(run.src_tokens if q_side == "src" else run.tgt_tokens)
    what, rows = HEADS_TITLES[kind]
    title = f"Layer {layer}: {what}all {len(weights)} heads {rows}"
    return FigureSpec(head_grid, (weights, x_labels, y_labels),
                      {"selected": selected, "title": title},
                      {f"head {k}": weights[k].ravel() for k in range(len(weights))})
