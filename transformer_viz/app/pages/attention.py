"""Attention, step by step: one head of one layer, from Q, K, V to the weighted sum of the
values."""

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz import views
from transformer_viz.app import frame, steps, widgets
from transformer_viz.plots import attention as plots
from transformer_viz.text.analysis import softmax

ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Each token asks a question (its query q), every token offers a label (its key k) and a "
    "content (its value v). The query is compared with every key; the softmax of the scores says "
    "how much of each value to take. One head does this in a d_k-dimensional space; the h heads "
    "run side by side.")
cfg = run.config
d_k = cfg.d_k
kind = st.radio("Which attention", list(plots.ATTENTION_KINDS), horizontal=True,
                help="Layer and head are chosen in the sidebar.")
# q (Lq, d_k), k and v (Lk, d_k), scores, mask, masked scores and weights (Lq, Lk), heads (Lq, d_k)
head = views.attention_head(run, sel.layer, sel.head, views.KIND_OF_LABEL[kind])
prefix, q_tokens, k_tokens, arrays = head.prefix, head.q_tokens, head.k_tokens, head.arrays
q_side = plots.ATTENTION_KINDS[kind][1]
Lq, Lk = len(q_tokens), len(k_tokens)
q, k, v, scores, mask = (arrays[n] for n in ("q", "k", "v", "scores", "mask"))
weights = arrays["weights"]

st.latex(r"\text{Attention}(Q, K, V) = \text{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + "
         r"M\Big)V,\qquad d_k = d_{model}/h = %d/%d = %d,\ \sqrt{d_k} = "
         r"%.4g" % (cfg.d_model, cfg.h, d_k, np.sqrt(d_k)))
st.caption(f"{kind}, layer {sel.layer}, head {sel.head}: {Lq} queries × {Lk} keys (trace: "
           f"`{prefix}.*`)")

qkv_tab, scores_tab, sum_tab, worked_tab = steps.tabs(
    ctx,
    ["1. Queries, keys and values", "2. Scores, mask and softmax", "3. The weighted sum",
     "4. One score by hand, and a soft lookup"], key="attention_step")

if qkv_tab.open:
    with qkv_tab:
        if kind.endswith("cross-attention"):
            st.latex(r"Q = X W_Q^{(%d)} + b_Q^{(%d)} \in \mathbb{R}^{%d \times %d},\quad K = M "
                     r"W_K^{(%d)} + b_K^{(%d)},\ V = M W_V^{(%d)} + b_V^{(%d)} \in \mathbb{R}^{%d "
                     r"\times %d}"
                     % ((sel.head,) * 2 + (Lq, d_k) + (sel.head,) * 4 + (Lk, d_k)))
            sources = ("Two sources: the queries come from the decoder's stream X (the output of "
                       "its masked self-attention sublayer); the keys and values from the encoder "
                       "output M (the memory).")
        else:
            st.latex(r"Q = X W_Q^{(%d)} + b_Q^{(%d)},\quad K = X W_K^{(%d)} + b_K^{(%d)},\quad "
                     r"V = X W_V^{(%d)} + b_V^{(%d)} \in \mathbb{R}^{%d \times %d}"
                     % ((sel.head,) * 6 + (Lq, d_k)))
            side = "decoder" if q_side == "tgt" else "encoder"
            sources = ("One source: queries, keys and values are three projections of the same X, "
                       f"the input of this {side} layer's self-attention.")
        for name in ("q", "k", "v"):
            widgets.view_chart(views.attention_part(head, name), f"attention-{name}")
            # said under the first figure, which a projector then shows on its first screen
            if name == "q":
                st.markdown(sources)
                st.caption("Each projection is an nn.Linear, so it adds a bias b, as written here; "
                           "the paper writes XW without it. W^(i) and b^(i) are head i's d_k "
                           "columns of the d_model × d_model matrix.")

if scores_tab.open:
    with scores_tab:
        st.latex(r"S = \frac{QK^\top}{\sqrt{%d}} \in \mathbb{R}^{%d \times %d}" % (d_k, Lq, Lk))
        widgets.view_chart(views.attention_part(head, "scores"), "attention-scores")
        n_masked = int((~mask).sum())
        mask_kind = {"Encoder self-attention": "padding only (no key is padding in a single "
                     "sentence)",
                     "Decoder masked self-attention": "causal: query t may attend to keys ≤ t (and "
                     "no padding)",
                     "Decoder cross-attention": "padding of the source only"}[kind]
        st.markdown(f"Mask: {mask_kind}. {n_masked} of {Lq * Lk} cells are masked.")
        widgets.view_chart(views.attention_part(head, "mask"), "attention-mask")
        widgets.view_chart(views.attention_part(head, "masked_scores"), "attention-masked-scores")
        st.latex(r"w_{ij} = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}},\qquad e^{-\infty} = 0")
        widgets.view_chart(views.attention_part(head, "weights"), "attention-weights")

if sum_tab.open:
    with sum_tab:
        st.latex(r"\text{head}_{%d} = A V \in \mathbb{R}^{%d \times %d},\qquad "
                 r"\text{MultiHead} = \text{Concat}(\text{head}_0, \dots, \text{head}_{%d})\, W_O"
                 % (sel.head, Lq, d_k, cfg.h - 1))
        st.caption("A is the matrix of attention weights from step 2 (softmax of the masked "
                   "scores).")
        widgets.view_chart(views.attention_part(head, "heads"), "attention-heads")

if worked_tab.open:
    with worked_tab:
        left, right = st.columns(2)
        with left:
            i = st.selectbox("Query i", list(range(Lq)),
                             format_func=lambda n: f"{n}: {q_tokens[n]}")
        with right:
            j = st.selectbox("Key j", list(range(Lk)), format_func=lambda n: f"{n}: {k_tokens[n]}")
        for line in plots.worked_score_latex(q[i], k[j], i, j, float(scores[i, j]),
                                             f"{prefix}.scores", sel.head,
                                             bool(mask[i, j]), float(weights[i, j])):
            st.latex(line)
        fig = widgets.cached_figure(plots.score_terms_figure, q[i], k[j], q_tokens[i], k_tokens[j])
        widgets.chart(fig, pd.DataFrame({"q": q[i], "k": k[j], "q*k": q[i] * k[j]}),
                      "attention-worked")

        st.subheader("Attention as a soft database lookup")
        n_keys = min(Lk, 8)
        st.markdown(
            "A dictionary returns the value whose key equals the query. Attention returns a blend "
            f"of all values, weighted by how well each key matches. Here: query q_{i} (token {i} "
            f"above) against the first {n_keys} keys and values of this head, with no mask, "
            f"comparing three similarity functions. G is a fixed random {d_k}×{d_k} matrix "
            "(entries N(0, 1/d_k), seed 0), standing in for a learned one; with G = I the general "
            "form would equal the plain dot product."
        )
        st.latex(r"\text{sim}(q, k) \in \Big\{\, q^\top k,\ \ \frac{q^\top k}{\sqrt{%d}},\ \ "
                 r"q^\top G k \,\Big\},\qquad \text{result} = \sum_j "
                 r"\text{softmax}_j(\text{sim}(q, k_j))\, v_j" % d_k)
        G = plots.random_bilinear(d_k, seed=0)
        lookup = plots.lookup_scores(q[i], k[:n_keys], G)
        lookup_weights = {name: softmax(s) for name, s in lookup.items()}
        key_tokens = k_tokens[:n_keys]
        fig = widgets.cached_figure(plots.lookup_figure, lookup_weights, key_tokens)
        widgets.chart(fig, pd.DataFrame({**{f"score: {n}": s for n, s in lookup.items()},
                                         **{f"weight: {n}": w for n, w in lookup_weights.items()}},
                                        index=widgets.row_names(key_tokens)), "attention-lookup")
        peaks = {name: float(w.max()) for name, w in lookup_weights.items()}
        st.markdown("Largest weight: " + ", ".join(f"{name} {p:.2f}" for name, p in peaks.items())
                    + ". Without the 1/√d_k the scores are larger, so the softmax is sharper "
                      "(closer to a hard lookup) and its gradients smaller.")
        retrieved = np.stack([w @ v[:n_keys] for w in lookup_weights.values()])
        fig = widgets.cached_figure(plots.matrix_heatmap, retrieved, list(lookup_weights),
                                    list(range(d_k)),
                                    "retrieved value Σ w_j v_j", "value", "dimension (d_k)",
                                    "similarity")
        widgets.chart(fig, pd.DataFrame(retrieved, index=list(lookup_weights)),
                      "attention-lookup-result")
