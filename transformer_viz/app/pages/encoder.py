"""Encoder: one layer at a time — every head's self-attention, Add & Norm before and after
LayerNorm, and the feed-forward network's ReLU activations."""

import streamlit as st

from transformer_viz import views
from transformer_viz.app import frame, sections, steps, widgets
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import attention_map

ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Each of the N encoder layers does the same two things to every source position: **multi-head "
    "self-attention** (every token looks at every other token, h times in parallel), then a "
    "**position-wise feed-forward network**. Each sublayer is wrapped in a residual connection "
    "followed by LayerNorm (*Add & Norm*).",
    r"x' = \mathrm{LayerNorm}\big(x + \mathrm{MultiHead}(x, x, x)\big), \qquad "
    r"x'' = \mathrm{LayerNorm}\big(x' + \mathrm{FFN}(x')\big)")
cfg, i, j = run.config, sel.layer, sel.head
labels = token_labels(run.src_tokens)
S = len(labels)
st.caption(f"Layer {i} of N = {cfg.N}, head {j} of h = {cfg.h} (change them in the sidebar). "
           f"S = {S} source tokens, d_model = {cfg.d_model}, d_k = {cfg.d_k}, d_ff = {cfg.d_ff}.")

attention_tab, norm_tab, ffn_tab = steps.tabs(ctx, [
    "1 · Multi-head self-attention",
    "2 · Add & Norm",
    "3 · Position-wise feed-forward",
], key="encoder_step")

if attention_tab.open:
    with attention_tab:
        weights = run.trace[f"encoder.{i}.self_attn.weights"][0].numpy()  # (h, S, S)
        st.latex(r"\mathrm{head}_j = \mathrm{softmax}\!\Big(\frac{Q_j K_j^\top}{\sqrt{d_k}}\Big) "
                 r"V_j,\quad d_k = d_{model}/h = %d/%d = %d" % (cfg.d_model, cfg.h, cfg.d_k))
        widgets.view_chart(views.heads(run, i, "encoder", selected=j), "encoder-head-grid",
                           caption="One small map per head; every row sums to 1. Hover for the "
                                   "exact weight.")
        fig = widgets.cached_figure(attention_map, weights[j], labels, labels,
                                    title=f"Layer {i}, head {j}")
        widgets.chart(fig, widgets.long_form(labels, labels, {"weight": weights[j]}),
                      "encoder-head")

if norm_tab.open:
    with norm_tab:
        sections.add_and_norm(sel, run, "encoder", labels, {"norm1": "norm1 (after self-attention)",
                                                             "norm2": "norm2 (after feed-forward)"})

if ffn_tab.open:
    with ffn_tab:
        sections.feed_forward(sel, run, "encoder", labels)
