"""Encoder: one layer at a time — every head's self-attention, Add & Norm before and after LayerNorm,
and the feed-forward network's ReLU activations."""

import numpy as np
import streamlit as st

from transformer_viz import webapp
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import (attention_map, ffn_hidden_figure, gamma_beta_figure, head_grid,
                                          layernorm_stats_figure, position_stats, relu_zero_fraction,
                                          zero_fraction_figure)

sel = webapp.require_selection()
st.title("Encoder")
st.markdown(
    "Each of the N encoder layers does the same two things to every source position: **multi-head "
    "self-attention** (every token looks at every other token, h times in parallel), then a **position-wise "
    "feed-forward network**. Each sublayer is wrapped in a residual connection followed by LayerNorm "
    "(*Add & Norm*)."
)
st.latex(r"x' = \mathrm{LayerNorm}\big(x + \mathrm{MultiHead}(x, x, x)\big), \qquad "
         r"x'' = \mathrm{LayerNorm}\big(x' + \mathrm{FFN}(x')\big)")
run = webapp.current_run(sel)
if run is None:
    st.stop()

cfg, trace, i, j = run.config, run.trace, sel.layer, sel.head
labels = token_labels(run.src_tokens)
S = len(labels)
prefix = f"encoder.{i}"
st.caption(f"Layer {i} of N = {cfg.N}, head {j} of h = {cfg.h} (change them in the sidebar). "
           f"S = {S} source tokens, d_model = {cfg.d_model}, d_k = {cfg.d_k}, d_ff = {cfg.d_ff}.")

attention_tab, norm_tab, ffn_tab = webapp.steps([
    "1 · Multi-head self-attention",
    "2 · Add & Norm",
    "3 · Position-wise feed-forward",
], key="encoder_step")

if attention_tab.open:
    with attention_tab:
        weights = trace[f"{prefix}.self_attn.weights"][0].numpy()  # (h, S, S)
        st.latex(r"\mathrm{head}_j = \mathrm{softmax}\!\Big(\frac{Q_j K_j^\top}{\sqrt{d_k}}\Big) V_j,\quad "
                 r"d_k = d_{model}/h = %d/%d = %d" % (cfg.d_model, cfg.h, cfg.d_k))
        fig = head_grid(weights, labels, labels, title=f"Layer {i}: all {cfg.h} heads (row = query, column = key)",
                        selected=j)
        webapp.chart(fig, {f"head {k}": weights[k].ravel() for k in range(cfg.h)}, "encoder-head-grid",
                     caption="One small map per head; every row sums to 1. Hover for the exact weight.")
        fig = attention_map(weights[j], labels, labels, title=f"Layer {i}, head {j}")
        webapp.chart(fig, {"query": np.repeat(labels, S), "key": np.tile(labels, S), "weight": weights[j].ravel()},
                     "encoder-head")

if norm_tab.open:
    with norm_tab:
        which = st.radio("Which Add & Norm", ["norm1", "norm2"], horizontal=True, key="encoder_norm",
                         format_func={"norm1": "norm1 (after self-attention)", "norm2": "norm2 (after feed-forward)"}.get)
        norm = f"{prefix}.{which}"
        mean_before = trace[f"{norm}.mean"][0].numpy()  # (S,)
        var_before = trace[f"{norm}.var"][0].numpy()
        mean_after, var_after = position_stats(trace[f"{norm}.out"][0].numpy())
        eps = cfg.layer_norm_eps
        st.latex(r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta"
                 r"\qquad \text{position 0: } \mu = %.4f,\ \sigma^2 = %.4f,\ \varepsilon = 10^{%d}"
                 % (mean_before[0], var_before[0], int(np.round(np.log10(eps)))))
        fig = layernorm_stats_figure(mean_before, var_before, mean_after, var_after, labels,
                                     title=f"{norm}: per-position statistics over d_model = {cfg.d_model}")
        webapp.chart(fig, {"position": labels, "mean before": mean_before, "variance before": var_before,
                           "mean after": mean_after, "variance after": var_after}, "encoder-layernorm")
        st.caption("Before γ and β, every position is normalised to mean 0 and variance 1; γ and β then rescale and "
                   "shift each dimension. Whatever the scale of the residual stream, the next sublayer sees numbers "
                   "of one size.")

        ckpt = webapp.get_checkpoint(sel.checkpoint)
        layer_norm = getattr(ckpt.model.encoder_layers[i], which).norm
        gamma = layer_norm.weight.detach().cpu().numpy()
        beta = layer_norm.bias.detach().cpu().numpy()
        fig = gamma_beta_figure(gamma, beta, title=f"{norm}: learned γ and β (mean γ = {gamma.mean():.3f}, "
                                                   f"mean β = {beta.mean():.3f})")
        webapp.chart(fig, {"dimension": np.arange(gamma.size), "gamma": gamma, "beta": beta}, "encoder-gamma-beta")

if ffn_tab.open:
    with ffn_tab:
        hidden = trace[f"{prefix}.ffn.hidden"][0].numpy()  # (S, d_ff)
        fraction, overall = relu_zero_fraction(hidden)
        st.latex(r"\mathrm{FFN}(x) = \max(0,\ x W_1 + b_1)\, W_2 + b_2, \quad W_1 \in \mathbb{R}^{%d \times %d},\ "
                 r"W_2 \in \mathbb{R}^{%d \times %d}" % (cfg.d_model, cfg.d_ff, cfg.d_ff, cfg.d_model))
        c1, c2, c3 = st.columns(3)
        c1.metric("ReLU units at exactly 0", f"{overall:.1%}")
        c2.metric("zero units / all units", f"{int((hidden == 0).sum())} / {hidden.size}")
        c3.metric("largest activation", f"{hidden.max():.3f}")
        fig = ffn_hidden_figure(hidden, labels, title=f"Layer {i}: hidden activations max(0, xW₁ + b₁), (S, d_ff) = "
                                                      f"({S}, {cfg.d_ff})")
        webapp.chart(fig, {labels[p]: hidden[p] for p in range(S)}, "encoder-ffn-hidden")
        fig = zero_fraction_figure(fraction, labels, overall, cfg.d_ff, title="Share of ReLU units that are exactly 0")
        webapp.chart(fig, {"position": labels, "zero fraction": fraction,
                           "zero units": np.rint(fraction * cfg.d_ff).astype(int)}, "encoder-ffn-zeros",
                     caption="ReLU sets every negative pre-activation to 0, so each position uses only part of the "
                             "d_ff units: a sparse, position-specific code.")
