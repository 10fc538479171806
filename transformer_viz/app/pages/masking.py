"""Masking lab: the decoder rerun without its causal mask, and the padding mask in a batch of sentences."""

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz import engine
from transformer_viz.app import examples, frame, loaders, steps, widgets
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import key_mask_figure, prediction_change_figure
from transformer_viz.plots.layers import attention_map, masked_attention_figure
from transformer_viz.text.analysis import (PREDICTION_HEADERS, batch_row_labels, compare_predictions, future_mass,
                                           mask_effect_text, prediction_table)


@st.cache_resource(show_spinner="Running the batch…", max_entries=32)
def padded_batch(checkpoint: str, sentences: tuple[str, ...]):
    """One traced forward over the padded batch, and per row how far its real positions are from the
    sentence run alone. Shared read-only: a copy per rerun would cost more than the whole page."""
    trace, src_tokens, tgt_tokens = engine.batch_trace(loaders.get_checkpoint(checkpoint), list(sentences))
    singles = [loaders.get_run(checkpoint, sentence) for sentence in sentences]
    return trace, src_tokens, tgt_tokens, engine.batch_differences(trace, src_tokens, tgt_tokens, singles)


ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Two masks decide which keys a query may attend to. The **causal mask** stops decoder position t from "
    "reading positions after t: in training the whole target is fed in at once, and without the mask the "
    "model could simply read the next word. The **padding mask** hides the `<pad>` tokens that fill "
    "shorter sentences in a batch. A masked score is set to −∞ before the softmax, so its weight is exactly 0.",
    r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)V,\qquad "
    r"M_{tu} = \begin{cases}0 & \text{key } u \text{ visible to query } t\\ -\infty & \text{otherwise}\end{cases}")
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
            "The same target (the greedy translation) is fed to the decoder twice: once with the causal mask, as the "
            "model was trained, and once without it. Generation itself is unaffected — it produces one token at a "
            "time, so there is no future to see — but the teacher-forced pass can now look ahead."
        )
        causal = st.toggle("Causal mask on", value=True, key="masking_causal")
        shown = (run if causal else unmasked).trace
        scores, masked, weights = (shown[f"{prefix}.{name}"][0, j].numpy() for name in ("scores", "masked_scores",
                                                                                          "weights"))  # (T, T)
        fig = widgets.cached_figure(masked_attention_figure, scores, masked, weights, labels, labels,
                                    title=f"Decoder layer {i}, head {j}, causal mask {'on' if causal else 'off'}")
        widgets.chart(fig, widgets.long_form(labels, labels, {"weight": weights}), "masking-selected")

        w_masked = run.trace[f"{prefix}.weights"][0, j].numpy()  # (T, T)
        w_open = unmasked.trace[f"{prefix}.weights"][0, j].numpy()
        hidden = np.isneginf(run.trace[f"{prefix}.masked_scores"][0, j].numpy())  # the causal mask's cells
        for column, w, grey, title, name in zip(st.columns(2), (w_masked, w_open), (hidden, None),
                                                ("with the causal mask", "without the mask"),
                                                ("masking-weights-causal", "masking-weights-open")):
            with column:
                fig = widgets.cached_figure(attention_map, w, labels, labels, title=f"weights {title}", masked=grey)
                widgets.chart(fig, widgets.long_form(labels, labels, {"weight": w}), name)
        c1, c2 = st.columns(2)
        # One statistic for both: the weight a query row puts on later positions, averaged over the T rows.
        c1.metric("weight on later positions, with mask (mean per row)", f"{future_mass(w_masked).mean():.3g}")
        c2.metric("weight on later positions, without mask (mean per row)", f"{future_mass(w_open).mean():.3g}")
        st.caption("Above the diagonal are later positions. With the mask their weight is exactly 0; without it, "
                   "each row spends on average the share shown on the right on tokens it should not have seen yet.")

        st.subheader("How the predictions change")
        compare = compare_predictions(run.trace["logits"][0].numpy(), unmasked.trace["logits"][0].numpy(),
                                      run.predicted_ids)
        tokens = loaders.get_checkpoint(sel.checkpoint).tokenizer.convert_ids_to_tokens
        table = pd.DataFrame(prediction_table(compare, run.tgt_tokens, tokens(run.predicted_ids), tokens))
        changed = int((compare["argmax_a"] != compare["argmax_b"]).sum())
        # The formula alone on its line, the numbers as text: together they were wider than the page.
        st.latex(r"D_{KL}(p_{\text{mask}} \,\|\, p_{\text{no mask}}) = \sum_v p_{\text{mask}}(v)\,"
                 r"\log\frac{p_{\text{mask}}(v)}{p_{\text{no mask}}(v)}")
        st.markdown(f"Mean KL over the {T} positions: **{compare['kl'].mean():.4f} nats**; "
                    f"{changed} argmax tokens change.")
        fig = widgets.cached_figure(prediction_change_figure, labels, compare["p_expected_a"], compare["p_expected_b"],
                                    compare["kl"], title="Probability of the expected next token, with and without "
                                                         "the causal mask")
        widgets.chart(fig, table, "masking-predictions")
        st.dataframe(table, hide_index=True, column_config={name: st.column_config.Column(label, help=what)
                                                             for name, (label, what) in PREDICTION_HEADERS.items()})
        st.markdown(mask_effect_text(compare))
        st.caption("Even the last position, which sees every position either way, changes when N > 1: the earlier "
                   "positions it reads from were themselves computed with the future in view.")

if padding_tab.open:
    with padding_tab:
        st.markdown(
            "Sentences of different lengths are padded with `<pad>` to one length, so that a batch is one tensor. "
            "The padding mask sets the scores of `<pad>` *keys* to −∞ wherever they can be attended to: source "
            "`<pad>` keys in encoder self-attention and in cross-attention, target `<pad>` keys in decoder "
            "self-attention (on top of the causal mask). So real tokens compute exactly what they would alone. "
            "`<pad>` *queries* are still computed — their rows below are real numbers — but nothing reads "
            "them, and in training the loss ignores their positions."
        )
        offered = [s for s in examples.examples_for(sel.src_lang) if s != sel.sentence]
        others = st.multiselect("Other sentences in the batch", offered, default=offered[:2], key="masking_batch")
        sentences = (sel.sentence, *others)
        try:
            trace, src_tokens, tgt_tokens, checks = padded_batch(sel.checkpoint, sentences)
        except Exception as exc:  # an example the tokenizer rejects must not break the page
            st.warning(f"The batch could not be run: {widgets.escape_markdown(str(exc))}")
            st.stop()
        (B, S_max), T_max = trace["src.token_ids"].shape, trace["tgt.token_ids"].shape[1]
        st.latex(r"\text{sources } (B, S_{max}) = (%d, %d),\quad \text{targets } (B, T_{max}) = (%d, %d)"
                 % (B, S_max, B, T_max))
        widgets.reset_stale_index("masking_row", B)  # the batch or its lengths may have changed
        row = st.selectbox("Batch row", list(range(B)), key="masking_row",
                           format_func=batch_row_labels(src_tokens, tgt_tokens).__getitem__)
        # Row 0 is the user's sentence: show it as the model got it (cleaned), not as typed.
        widgets.show_user_text(f"Row {row}: source sentence", run.source_text if row == 0 else sentences[row])
        src_labels = token_labels(src_tokens[row] + ["<pad>"] * (S_max - len(src_tokens[row])))
        tgt_labels = token_labels(tgt_tokens[row] + ["<pad>"] * (T_max - len(tgt_tokens[row])))
        key_real = trace["src.token_ids"][row].numpy() != cfg.pad_id  # (S_max,)
        fig = widgets.cached_figure(key_mask_figure, key_real, src_labels,
                                    title=f"Row {row}: padded source and its padding mask (grey = &lt;pad&gt;)")
        widgets.chart(fig, {"position": src_labels, "may attend": key_real}, "masking-padding-mask")

        enc = [trace[f"encoder.{i}.self_attn.{name}"][row, j].numpy() for name in ("scores", "masked_scores", "weights")]
        fig = widgets.cached_figure(masked_attention_figure, *enc, src_labels, src_labels,
                                    title=f"Row {row}, encoder layer {i}, head {j}: self-attention over the padded source")
        widgets.chart(fig, widgets.long_form(src_labels, src_labels, {"weight": enc[2]}), "masking-batch-encoder")
        cross = trace[f"decoder.{i}.cross_attn.weights"][row, j].numpy()  # (T_max, S_max)
        fig = widgets.cached_figure(attention_map, cross, src_labels, tgt_labels, x_title="source key",
                                    masked=np.broadcast_to(~key_real, cross.shape),
                                    y_title="target query", title=f"Row {row}, decoder layer {i}, head {j}: cross-attention")
        widgets.chart(fig, widgets.long_form(tgt_labels, src_labels, {"weight": cross}, ("target", "source")),
                      "masking-batch-cross")

        check = checks[row]  # over every layer and head, not only the ones drawn
        c1, c2, c3 = st.columns(3)
        c1.metric("largest weight on a <pad> key (all layers, heads)", f"{check['pad_weight']:.1g}")
        c2.metric("max |Δ| encoder output vs the sentence alone", f"{check['encoder_diff']:.2e}")
        c3.metric("max |Δ| decoder output vs the sentence alone", f"{check['decoder_diff']:.2e}")
        if not (~key_real).any():
            st.caption("This row is the longest source in the batch: it has no <pad>. Pick another row to see padding.")
        if check["matches"]:
            st.success(f"Padding changes nothing for the real tokens: every <pad> key has weight exactly 0, and the "
                       f"outputs match the single-sentence run within {engine.BATCH_ATOL:g}.")
        else:
            st.error("The padded batch does not reproduce the single-sentence run (see the numbers above).")
