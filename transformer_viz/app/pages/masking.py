"""Masking lab: the decoder rerun without its causal mask, and the padding mask in a batch of
sentences."""

import numpy as np
import streamlit as st

from transformer_viz.app import frame, loaders, steps, widgets
from transformer_viz.app.masking_view import padding_step, prediction_changes
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import attention_map, masked_attention_figure
from transformer_viz.text.analysis import future_mass

ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Two masks decide which keys a query may attend to. The **causal mask** stops decoder position "
    "t from reading positions after t: in training the whole target is fed in at once, and without "
    "the mask the model could simply read the next word. The **padding mask** hides the `<pad>` "
    "tokens that fill shorter sentences in a batch. A masked score is set to −∞ before the "
    "softmax, so its weight is exactly 0.",
    r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + "
    r"M\Big)V,\qquad M_{tu} = \begin{cases}0 & \text{key } u \text{ visible to query } t\\ -\infty "
    r"& \text{otherwise}\end{cases}")
cfg, i, j = run.config, sel.layer, sel.head
labels = token_labels(run.tgt_tokens)
T = len(labels)
prefix = f"decoder.{i}.self_attn"

causal_tab, padding_tab = steps.tabs(ctx, [
    "1 · The causal mask, on and off",
    "2 · The padding mask in a batch",
], key="masking_step")

if causal_tab.open:
    with causal_tab:
        unmasked = loaders.get_run(sel.checkpoint, sel.sentence, 1, False)
        st.markdown(
            "The same target (the greedy translation) is fed to the decoder twice: once with the "
            "causal mask, as the model was trained, and once without it. Generation itself is "
            "unaffected — it produces one token at a time, so there is no future to see — but the "
            "teacher-forced pass can now look ahead."
        )
        causal = st.toggle("Causal mask on", value=True, key="masking_causal")
        shown = (run if causal else unmasked).trace
        names = ("scores", "masked_scores", "weights")
        # (T, T) each
        scores, masked, weights = (shown[f"{prefix}.{name}"][0, j].numpy() for name in names)
        fig = widgets.cached_figure(masked_attention_figure, scores, masked, weights, labels,
                                    labels,
                                    title=f"Decoder layer {i}, head {j}, "
                                          f"causal mask {'on' if causal else 'off'}")
        widgets.chart(fig, widgets.long_form(labels, labels, {"weight": weights}),
                      "masking-selected")

        w_masked = run.trace[f"{prefix}.weights"][0, j].numpy()  # (T, T)
        w_open = unmasked.trace[f"{prefix}.weights"][0, j].numpy()
        # the causal mask's cells
        hidden = np.isneginf(run.trace[f"{prefix}.masked_scores"][0, j].numpy())
        for column, w, grey, title, name in zip(st.columns(2), (w_masked, w_open), (hidden, None),
                                                ("with the causal mask", "without the mask"),
                                                ("masking-weights-causal", "masking-weights-open")):
            with column:
                fig = widgets.cached_figure(attention_map, w, labels, labels,
                                            title=f"weights {title}", masked=grey)
                widgets.chart(fig, widgets.long_form(labels, labels, {"weight": w}), name)
        c1, c2 = st.columns(2)
        # One statistic for both: the weight a query row puts on later positions, averaged over the
        # T rows.
        c1.metric("weight on later positions, with mask (mean per row)",
                  f"{future_mass(w_masked).mean():.3g}")
        c2.metric("weight on later positions, without mask (mean per row)",
                  f"{future_mass(w_open).mean():.3g}")
        st.caption("Above the diagonal are later positions. With the mask their weight is exactly "
                   "0; without it, each row spends on average the share shown on the right on "
                   "tokens it should not have seen yet.")

        prediction_changes(sel, run, unmasked, labels)

if padding_tab.open:
    with padding_tab:
        padding_step(sel, run)
