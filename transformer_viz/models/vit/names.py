"""The documented trace names of the Vision Transformer."""

from __future__ import annotations


def trace_names() -> list[tuple[str, str, str]]:
    """Every name the ViT's traced forward records, in order, with its shape and formula;
    ``encoder.{i}.*`` stands for all the names one encoder layer records, as in the translation
    encoder (self_attn.weights …)."""
    return [
        ("vit.patches", "(B, P, p·p)",
         "the image cut into P = (H/p)² patches of p × p pixels, each read row by row"),
        ("vit.patch_embed", "(B, P, d_model)", "x_p^i E + b: one linear map for every patch"),
        ("vit.positional", "(P+1, d_model)", "E_pos, learned; row 0 is [CLS]'s"),
        ("vit.tokens", "(B, P+1, d_model)", "z_0 = [x_cls; x_p^1 E; …; x_p^P E] + E_pos"),
        ("encoder.{i}.*", "as the encoder's, S = P+1",
         "one encoder layer (model.EncoderLayer, Pre-LN); no "
         "padding, so the mask lets every token see all "
         "(`encoder.{i}.self_attn.weights` (B, h, P+1, P+1))"),
        ("encoder.out", "(B, P+1, d_model)", "LayerNorm(z_N)"),
        ("vit.cls", "(B, d_model)", "the [CLS] token's final state, encoder.out[:, 0]"),
        ("logits", "(B, n_classes)", "W vit.cls + b"),
        ("probs", "(B, n_classes)", "softmax(logits) over the ten digits"),
    ]
