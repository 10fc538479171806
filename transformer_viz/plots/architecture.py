"""The encoder–decoder stack as the paper draws it, bottom to top, with the current sentence's
shapes: embeddings + PE → N encoder layers → the memory, which feeds the cross-attention of each of
the N decoder layers → linear → softmax. Every sublayer sits inside a residual connection into its
Add & Norm."""

from __future__ import annotations

import functools

import plotly.graph_objects as go

from transformer_viz.plots.blocks import FRAME_TOP, GAP, Diagram, stack
from transformer_viz.plots.common import (
    ADD_NORM_FILL, DECODER_FILL, EMBEDDING_FILL, ENCODER_FILL, OUTPUT_FILL)
from transformer_viz.plots.payload import BrowserFigure, browser_figure, with_text_replaced

# x from 0 to 100: each column's boxes, the frame around its layer, and its residual paths (on the
# outer side, as in the paper: the encoder's on the left, the decoder's on the right, clear of
# the memory's path).
ENCODER = {"boxes": (12, 43), "frame": (6, 46), "residual": 8.6, "repeat": 3}
DECODER = {"boxes": (57, 88), "frame": (54, 94), "residual": 91.4, "repeat": 97}
MEMORY_X = 50  # the encoder output runs down to cross-attention between the two columns
FRAME_PAD = 18  # px between a frame's bottom and its first sublayer
ADD_NORM_HOVER = "the residual x + Sublayer(x), normalised by LayerNorm"


def _layer(diagram: Diagram, column: dict, y: float, sublayers: list[tuple[str, list[str], str]],
           N: int, side: str) -> list:
    """One layer's sublayers, each followed by its Add & Norm, inside a frame marked N×; returns the
    boxes."""
    items = []
    for fill, lines, hover in sublayers:
        items += [(fill, lines, hover), (ADD_NORM_FILL, ["Add &amp; Norm"], ADD_NORM_HOVER)]
    boxes = stack(diagram, *column["boxes"], y, items, GAP)
    for sublayer, norm in zip(boxes[::2], boxes[1::2]):
        diagram.residual(sublayer, norm, column["residual"])
    diagram.frame(boxes, *column["frame"], FRAME_PAD, f"{N}×", column["repeat"],
                  f"the {side} layer, repeated N = {N} times: each layer's output is the next "
                  "one's input")
    return boxes


def architecture_figure(N: int, d_model: int, h: int, d_ff: int, vocab_size: int, S: int | str,
                        T: int | str) -> go.Figure:
    """Encoder (left) and decoder (right), bottom to top: each block with this sentence's shapes,
    arrows along the data flow, the residual connections, and the memory into every decoder
    layer's cross-attention."""
    diagram, d_k = Diagram(), d_model // h
    inputs = {}
    for column, side, L, first in ((ENCODER, "source", S, "source token IDs"),
                                   (DECODER, "target", T, "target IDs: &lt;s&gt; + output")):
        inputs[side] = stack(diagram, *column["boxes"], 0, [
            (EMBEDDING_FILL, [first, f"<b>(1, {L})</b>"], f"{side} token IDs (1, {L})"),
            (EMBEDDING_FILL, [f"embedding ×√{d_model} + PE", f"<b>(1, {L}, {d_model})</b>"],
             f"E[IDs] × √{d_model} + positional encoding: (1, {L}, {d_model})")], GAP)
    y = inputs["source"][-1].y1 + GAP + FRAME_PAD
    encoder = _layer(diagram, ENCODER, y, [
        (ENCODER_FILL, ["multi-head self-attention", f"<b>(1, {h}, {S}, {S})</b> weights"],
         f"Q, K, V (1, {h}, {S}, {d_k}) from the same input; weights (1, {h}, {S}, {S})"),
        (ENCODER_FILL, [f"feed-forward, d_ff = {d_ff}", f"<b>(1, {S}, {d_ff})</b> hidden"],
         f"max(0, x W₁ + b₁) W₂ + b₂: hidden (1, {S}, {d_ff}), "
         f"out (1, {S}, {d_model})")], N, "encoder")
    decoder = _layer(diagram, DECODER, y, [
        (DECODER_FILL, ["masked self-attention", f"<b>(1, {h}, {T}, {T})</b> weights"],
         f"causal mask: position t sees positions ≤ t; weights (1, {h}, {T}, {T})"),
        (DECODER_FILL, ["cross-attention", f"<b>(1, {h}, {T}, {S})</b> weights"],
         f"queries from the decoder (1, {h}, {T}, {d_k}); keys and values from the memory "
         f"(1, {h}, {S}, {d_k})"),
        (DECODER_FILL, [f"feed-forward, d_ff = {d_ff}", f"<b>(1, {T}, {d_ff})</b> hidden"],
         f"hidden (1, {T}, {d_ff}), out (1, {T}, {d_model})")], N, "decoder")
    for column, below in ((encoder, inputs["source"]), (decoder, inputs["target"])):
        diagram.flow(below[-1], column[0])
    # above the encoder's frame
    memory = stack(diagram, *ENCODER["boxes"], encoder[-1].y1 + FRAME_TOP + GAP, [
        (ENCODER_FILL, ["encoder output (memory)", f"<b>(1, {S}, {d_model})</b>"],
         f"the last encoder layer's output (1, {S}, {d_model}): keys and values of every "
         "cross-attention")], GAP)[0]
    output = stack(diagram, *DECODER["boxes"], decoder[-1].y1 + FRAME_TOP + GAP, [
        (OUTPUT_FILL, ["linear (tied: x Eᵀ)", f"<b>(1, {T}, {vocab_size})</b> logits"],
         f"the decoder output times the embedding matrix transposed: (1, {T}, {vocab_size})"),
        (OUTPUT_FILL, ["softmax: P(next token)", f"<b>(1, {T}, {vocab_size})</b>"],
         f"a distribution over the V = {vocab_size} tokens at each of the T positions")], GAP)
    diagram.flow(encoder[-1], memory)
    diagram.flow(decoder[-1], output[0])
    diagram.connector(memory, decoder[2], MEMORY_X, "K, V")
    return diagram.figure(f"Encoder (left) and decoder (right), each layer repeated N = {N} times")


# Stand-ins for S and T while the figure is built: characters of Unicode's private use area, which
# no other text of the figure holds.
_S, _T = "\ue000", "\ue001"


@functools.lru_cache(maxsize=16)
def _architecture_with_placeholders(N: int, d_model: int, h: int, d_ff: int,
                                    vocab_size: int) -> BrowserFigure:
    return browser_figure(architecture_figure(N, d_model, h, d_ff, vocab_size, _S, _T))


def architecture_browser_figure(N: int, d_model: int, h: int, d_ff: int, vocab_size: int,
                                S: int | str, T: int | str) -> BrowserFigure:
    """``browser_figure(architecture_figure(...))``, the same JSON, made in about a millisecond: S
    and T appear only in the boxes' text, so the diagram is built once per model with placeholders
    for them (tens of ms) and each sentence's S and T are written into its text."""
    return with_text_replaced(_architecture_with_placeholders(N, d_model, h, d_ff, vocab_size),
                              {_S: str(S), _T: str(T)})
