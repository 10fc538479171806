"""Decoder: masked self-attention, cross-attention to the encoder, three Add & Norms, the
feed-forward, and the output distribution over the vocabulary at one target position."""

import numpy as np
import streamlit as st

from transformer_viz import views
from transformer_viz.app import frame, loaders, sections, steps, widgets
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import topk_figure
from transformer_viz.plots.layers import attention_map, masked_attention_figure

TOP_K = 10

ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Each decoder layer has three sublayers, each inside Add & Norm: **masked self-attention** "
    "over the target written so far (position t may not look at positions after t), "
    "**cross-attention** whose queries come from the decoder and whose keys and values are the "
    "encoder's output, and the **feed-forward** network. After the last layer a linear map (tied "
    "to the embeddings) and a softmax give a distribution over the vocabulary for the next token. "
    "The target here is the model's own greedy translation, fed in as in training (teacher "
    "forcing).",
    r"\begin{gathered}y' = \mathrm{LN}\big(y + \mathrm{MaskedMultiHead}(y, y, y)\big),\quad "
    r"y'' = \mathrm{LN}\big(y' + \mathrm{MultiHead}(y', m, m)\big),\\ "
    r"y''' = \mathrm{LN}\big(y'' + \mathrm{FFN}(y'')\big)\end{gathered}")
cfg, trace, i, j = run.config, run.trace, sel.layer, sel.head
src_labels, tgt_labels = token_labels(run.src_tokens), token_labels(run.tgt_tokens)
S, T = len(src_labels), len(tgt_labels)
prefix = f"decoder.{i}"
# side by side: the figure starts on a projector's first screen
input_col, sizes_col = st.columns([3, 2])
with input_col:
    widgets.show_user_text(f"Decoder input ({sel.tgt_name}): <s> + greedy translation",
                           run.translation or "(empty)")
sizes_col.caption(f"Layer {i} of N = {cfg.N}, head {j} of h = {cfg.h} (change them in the "
                  f"sidebar). T = {T} target positions, S = {S} source positions, d_k = {cfg.d_k}.")

self_tab, cross_tab, norm_tab, ffn_tab, output_tab = steps.tabs(ctx, [
    "1 · Masked self-attention",
    "2 · Cross-attention",
    "3 · Add & Norm (three of them)",
    "4 · Feed-forward",
    "5 · Output distribution",
], key="decoder_step")  # short labels: all five tabs fit at 1280 px

if self_tab.open:
    with self_tab:
        scores = trace[f"{prefix}.self_attn.scores"][0, j].numpy()  # (T, T)
        masked = trace[f"{prefix}.self_attn.masked_scores"][0, j].numpy()
        weights = trace[f"{prefix}.self_attn.weights"][0, j].numpy()
        n_masked = int(np.isneginf(masked).sum())
        st.latex(r"\mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\ M_{tu} = "
                 r"\begin{cases}0 & u \le t\\ -\infty & u > t\end{cases}"
                 r"\qquad %d \text{ of } %d\times%d = %d \text{ cells set to } -\infty"
                 % (n_masked, T, T, T * T))
        fig = widgets.cached_figure(masked_attention_figure, scores, masked, weights, tgt_labels,
                                    tgt_labels,
                                    title=f"Layer {i}, head {j}: scores, masked scores and weights "
                                    "(row = query)")
        widgets.chart(fig, widgets.long_form(tgt_labels, tgt_labels,
                                             {"score": scores, "masked score": masked,
                                                                      "weight": weights}),
                      "decoder-masked-self-attention",
                      caption="exp(−∞) = 0: the grey cells get weight exactly 0 — drawn grey in "
                              "the weights panel too, never as the colour scale's 0 — so position "
                              "t is computed only from positions ≤ t, the same as during "
                              "generation, when later tokens do not exist yet.")

if cross_tab.open:
    with cross_tab:
        st.latex(r"\mathrm{softmax}\Big(\frac{(y' W_Q)(m W_K)^\top}{\sqrt{d_k}}\Big)(m W_V):\quad "
                 r"(T \times S) = (%d \times %d) \text{ weights per head}" % (T, S))
        widgets.view_chart(views.heads(run, i, "cross", selected=j), "decoder-cross-grid")
        cross = trace[f"{prefix}.cross_attn.weights"][0].numpy()  # (h, T, S)
        fig = widgets.cached_figure(attention_map, cross[j], src_labels, tgt_labels,
                                    x_title="source token (key)",
                                    y_title="target token (query)",
                                    title=f"Layer {i}, head {j}: cross-attention")
        widgets.chart(fig, widgets.long_form(tgt_labels, src_labels, {"weight": cross[j]},
                                             ("target", "source")),
                      "decoder-cross-head", caption="A bright cell: while predicting the token "
                                                    "after this target position, this head read "
                                                    "mostly from that source token.")

if norm_tab.open:
    with norm_tab:
        sections.add_and_norm(sel, run, "decoder", tgt_labels,
                              {"norm1": "norm1 (after masked self-attention)",
                                                                "norm2": "norm2 (after "
                                                                "cross-attention)",
                                                                "norm3": "norm3 (after "
                                                                "feed-forward)"})

if ffn_tab.open:
    with ffn_tab:
        sections.feed_forward(sel, run, "decoder", tgt_labels)

if output_tab.open:
    with output_tab:
        widgets.reset_stale_index("decoder_position", T)  # kept from another sentence
        # plain text
        position = st.selectbox("Target position", list(range(T)), key="decoder_position",
                                format_func=lambda t: f"{t} {run.tgt_tokens[t]} → predicts the "
                                "next token")
        probs = trace["probs"][0, position].numpy()  # (V,)
        top = np.argsort(-probs)[:TOP_K]
        top_tokens = loaders.get_checkpoint(
            sel.checkpoint).tokenizer.convert_ids_to_tokens(top.tolist())
        expected = run.predicted_ids[position]
        chosen = int(np.nonzero(top == expected)[0][0]) if expected in top else None
        st.latex(r"P(y_{t+1} \mid y_{\le t}, x) = \mathrm{softmax}(y_t^{(N)} E^\top),\quad "
                 r"\max_v P = %.4f,\ \text{entropy} = %.3f \text{ nats over } V = %d"
                 % (probs.max(), float(-(probs * np.log(np.clip(probs, 1e-30, None))).sum()),
                    cfg.vocab_size))
        fig = widgets.cached_figure(topk_figure, top_tokens, probs[top], chosen=chosen, title="Top "
                                    f"{TOP_K} next tokens after position {position} (orange: the "
                                    "token the translation used)")
        widgets.chart(fig, {"token": top_tokens, "id": top, "probability": probs[top]},
                      "decoder-output")
