"""Decoder: masked self-attention, cross-attention to the encoder, three Add & Norms, the feed-forward,
and the output distribution over the vocabulary at one target position."""

import numpy as np
import streamlit as st

from transformer_viz import webapp
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import topk_figure
from transformer_viz.plots.layers import (attention_map, ffn_hidden_figure, gamma_beta_figure, head_grid,
                                          layernorm_stats_figure, masked_attention_figure, position_stats,
                                          relu_zero_fraction, zero_fraction_figure)

TOP_K = 10

sel = webapp.require_selection()
st.title("Decoder")
st.markdown(
    "Each decoder layer has three sublayers, each inside Add & Norm: **masked self-attention** over the "
    "target written so far (position t may not look at positions after t), **cross-attention** whose "
    "queries come from the decoder and whose keys and values are the encoder's output, and the "
    "**feed-forward** network. After the last layer a linear map (tied to the embeddings) and a softmax "
    "give a distribution over the vocabulary for the next token. The target here is the model's own "
    "greedy translation, fed in as in training (teacher forcing)."
)
st.latex(r"y' = \mathrm{LN}\big(y + \mathrm{MaskedMultiHead}(y, y, y)\big),\quad "
         r"y'' = \mathrm{LN}\big(y' + \mathrm{MultiHead}(y', m, m)\big),\quad "
         r"y''' = \mathrm{LN}\big(y'' + \mathrm{FFN}(y'')\big)")
run = webapp.current_run(sel)
if run is None:
    st.stop()

cfg, trace, i, j = run.config, run.trace, sel.layer, sel.head
ckpt = webapp.get_checkpoint(sel.checkpoint)
src_labels, tgt_labels = token_labels(run.src_tokens), token_labels(run.tgt_tokens)
S, T = len(src_labels), len(tgt_labels)
prefix = f"decoder.{i}"
webapp.show_user_text(f"Decoder input ({sel.tgt_lang}): <s> + greedy translation", run.translation or "(empty)")
st.caption(f"Layer {i} of N = {cfg.N}, head {j} of h = {cfg.h} (change them in the sidebar). "
           f"T = {T} target positions, S = {S} source positions, d_k = {cfg.d_k}.")

self_tab, cross_tab, norm_tab, ffn_tab, output_tab = webapp.steps([
    "1 · Masked self-attention",
    "2 · Cross-attention (decoder → encoder)",
    "3 · Add & Norm (three of them)",
    "4 · Feed-forward",
    "5 · Output distribution",
], key="decoder_step")

if self_tab.open:
    with self_tab:
        scores = trace[f"{prefix}.self_attn.scores"][0, j].numpy()  # (T, T)
        masked = trace[f"{prefix}.self_attn.masked_scores"][0, j].numpy()
        weights = trace[f"{prefix}.self_attn.weights"][0, j].numpy()
        n_masked = int(np.isneginf(masked).sum())
        st.latex(r"\mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\ M_{tu} = "
                 r"\begin{cases}0 & u \le t\\ -\infty & u > t\end{cases}"
                 r"\qquad %d \text{ of } %d\times%d = %d \text{ cells set to } -\infty" % (n_masked, T, T, T * T))
        fig = masked_attention_figure(scores, masked, weights, tgt_labels, tgt_labels,
                                      title=f"Layer {i}, head {j}: scores, masked scores and weights (row = query)")
        webapp.chart(fig, {"query": np.repeat(tgt_labels, T), "key": np.tile(tgt_labels, T), "score": scores.ravel(),
                           "masked score": masked.ravel(), "weight": weights.ravel()}, "decoder-masked-self-attention",
                     caption="exp(−∞) = 0: the grey cells get weight exactly 0, so position t is computed only from "
                             "positions ≤ t — the same as during generation, when later tokens do not exist yet.")

if cross_tab.open:
    with cross_tab:
        st.latex(r"\mathrm{softmax}\Big(\frac{(y' W_Q)(m W_K)^\top}{\sqrt{d_k}}\Big)(m W_V):\quad "
                 r"(T \times S) = (%d \times %d) \text{ weights per head}" % (T, S))
        cross = trace[f"{prefix}.cross_attn.weights"][0].numpy()  # (h, T, S)
        fig = head_grid(cross, src_labels, tgt_labels, title=f"Layer {i}: cross-attention, all {cfg.h} heads "
                                                             "(row = target token, column = source token)", selected=j)
        webapp.chart(fig, {f"head {k}": cross[k].ravel() for k in range(cfg.h)}, "decoder-cross-grid")
        fig = attention_map(cross[j], src_labels, tgt_labels, title=f"Layer {i}, head {j}: cross-attention",
                            x_title="source token (key)", y_title="target token (query)")
        webapp.chart(fig, {"target": np.repeat(tgt_labels, S), "source": np.tile(src_labels, T), "weight": cross[j].ravel()},
                     "decoder-cross-head", caption="A bright cell: while predicting the token after this target "
                                                   "position, this head read mostly from that source token.")

if norm_tab.open:
    with norm_tab:
        names = {"norm1": "norm1 (after masked self-attention)", "norm2": "norm2 (after cross-attention)",
                 "norm3": "norm3 (after feed-forward)"}
        which = st.radio("Which Add & Norm", list(names), horizontal=True, key="decoder_norm", format_func=names.get)
        norm = f"{prefix}.{which}"
        mean_before, var_before = trace[f"{norm}.mean"][0].numpy(), trace[f"{norm}.var"][0].numpy()
        mean_after, var_after = position_stats(trace[f"{norm}.out"][0].numpy())
        st.latex(r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta"
                 r"\qquad \text{position 0: } \mu = %.4f,\ \sigma^2 = %.4f" % (mean_before[0], var_before[0]))
        fig = layernorm_stats_figure(mean_before, var_before, mean_after, var_after, tgt_labels,
                                     title=f"{norm}: per-position statistics over d_model = {cfg.d_model}")
        webapp.chart(fig, {"position": tgt_labels, "mean before": mean_before, "variance before": var_before,
                           "mean after": mean_after, "variance after": var_after}, "decoder-layernorm")
        layer_norm = getattr(ckpt.model.decoder_layers[i], which).norm
        gamma, beta = layer_norm.weight.detach().cpu().numpy(), layer_norm.bias.detach().cpu().numpy()
        fig = gamma_beta_figure(gamma, beta, title=f"{norm}: learned γ and β")
        webapp.chart(fig, {"dimension": np.arange(gamma.size), "gamma": gamma, "beta": beta}, "decoder-gamma-beta")

if ffn_tab.open:
    with ffn_tab:
        hidden = trace[f"{prefix}.ffn.hidden"][0].numpy()  # (T, d_ff)
        fraction, overall = relu_zero_fraction(hidden)
        st.latex(r"\mathrm{FFN}(x) = \max(0,\ x W_1 + b_1)\, W_2 + b_2:\quad %.1f\%% \text{ of the } %d \times %d "
                 r"\text{ hidden values are } 0" % (100 * overall, T, cfg.d_ff))
        fig = ffn_hidden_figure(hidden, tgt_labels, title=f"Layer {i}: hidden activations (T, d_ff) = ({T}, {cfg.d_ff})")
        webapp.chart(fig, {tgt_labels[p]: hidden[p] for p in range(T)}, "decoder-ffn-hidden")
        fig = zero_fraction_figure(fraction, tgt_labels, overall, cfg.d_ff, title="Share of ReLU units that are exactly 0")
        webapp.chart(fig, {"position": tgt_labels, "zero fraction": fraction}, "decoder-ffn-zeros")

if output_tab.open:
    with output_tab:
        webapp.reset_stale_index("decoder_position", T)  # kept from another sentence
        position = st.selectbox("Target position", list(range(T)), key="decoder_position",
                                format_func=lambda t: f"{t} {run.tgt_tokens[t]} → predicts the next token")  # plain text
        probs = trace["probs"][0, position].numpy()  # (V,)
        top = np.argsort(-probs)[:TOP_K]
        top_tokens = ckpt.tokenizer.convert_ids_to_tokens(top.tolist())
        expected = run.predicted_ids[position]
        chosen = int(np.nonzero(top == expected)[0][0]) if expected in top else None
        st.latex(r"P(y_{t+1} \mid y_{\le t}, x) = \mathrm{softmax}(y_t^{(N)} E^\top),\quad "
                 r"\max_v P = %.4f,\ \text{entropy} = %.3f \text{ nats over } V = %d"
                 % (probs.max(), float(-(probs * np.log(np.clip(probs, 1e-30, None))).sum()), cfg.vocab_size))
        fig = topk_figure(top_tokens, probs[top], chosen=chosen,
                          title=f"Top {TOP_K} next tokens after position {position} (orange: the token the translation used)")
        webapp.chart(fig, {"token": top_tokens, "id": top, "probability": probs[top]}, "decoder-output")
