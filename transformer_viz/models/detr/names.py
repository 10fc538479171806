"""The documented trace names of the toy DETR."""

from __future__ import annotations


def trace_names() -> list[tuple[str, str, str]]:
    """Every name the DETR's traced forward records, in order, with its shape and formula;
    ``encoder.{i}.*`` and ``decoder.{i}.*`` stand for the names one layer records, as in the
    translation model."""
    return [
        ("detr.canvas", "(B, H, W)", "the input canvas, values in [0, 1]"),
        ("detr.features", "(B, S, d_model)",
         "the CNN's feature map, S = (H/4)·(W/4) cells read row by row"),
        ("detr.positional", "(S, d_model)", "E_pos, learned, one row per feature-map cell"),
        ("detr.tokens", "(B, S, d_model)", "features + E_pos: the encoder's input"),
        ("encoder.{i}.*", "as the encoder's, S cells",
         "one encoder layer (model.EncoderLayer, Pre-LN); no "
         "padding, every cell sees every cell (`encoder.{i}.self_attn.weights` (B, h, S, S))"),
        ("encoder.out", "(B, S, d_model)", "LayerNorm of the last layer's output: the memory"),
        ("detr.queries", "(M, d_model)",
         "Q_obj, the M learned object queries: the decoder's input"),
        ("decoder.{i}.*", "as the decoder's, T = M queries",
         "one decoder layer (model.DecoderLayer); no causal mask "
         "(`decoder.{i}.self_attn.weights` (B, h, M, M), "
         "`decoder.{i}.cross_attn.weights` (B, h, M, S))"),
        ("decoder.out", "(B, M, d_model)", "LayerNorm of the last decoder layer's output"),
        ("detr.class_logits", "(B, M, n_classes+1)",
         "W_c decoder.out + b_c; the last class is ∅, no object"),
        ("detr.class_probs", "(B, M, n_classes+1)", "softmax(class_logits)"),
        ("detr.boxes", "(B, M, 4)",
         "sigmoid(MLP(decoder.out)): (cx, cy, w, h) as fractions of the canvas side"),
    ]
