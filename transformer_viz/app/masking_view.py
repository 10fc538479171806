"""The Masking lab's larger sections: how the predictions change without the causal mask, and the
padding mask in a batch of sentences (its maps and the check that padding changes nothing)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz import engine
from transformer_viz.app import examples, loaders, widgets
from transformer_viz.app.sidebar import Selection
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import key_mask_figure, prediction_change_figure
from transformer_viz.plots.layers import attention_map, masked_attention_figure
from transformer_viz.text.analysis import (PREDICTION_HEADERS, batch_row_labels,
                                           compare_predictions, mask_effect_text, prediction_table)


@st.cache_resource(show_spinner="Running the batch…", max_entries=32)
def padded_batch(checkpoint: str, sentences: tuple[str, ...]):
    """One traced forward over the padded batch, and per row how far its real positions are from the
    sentence run alone. Shared read-only: a copy per rerun would cost more than the whole page."""
    trace, src_tokens, tgt_tokens = engine.batch_trace(loaders.get_checkpoint(checkpoint),
                                                       list(sentences))
    singles = [loaders.get_run(checkpoint, sentence) for sentence in sentences]
    return trace, src_tokens, tgt_tokens, engine.batch_differences(trace, src_tokens, tgt_tokens,
                                                                   singles)


def prediction_changes(sel: Selection, run, unmasked, labels: list[str]) -> None:
    """The next-token distributions with and without the causal mask, position by position."""
    T = len(labels)
    st.subheader("How the predictions change")
    compare = compare_predictions(run.trace["logits"][0].numpy(),
                                  unmasked.trace["logits"][0].numpy(),
                                  run.predicted_ids)
    tokens = loaders.get_checkpoint(sel.checkpoint).tokenizer.convert_ids_to_tokens
    table = pd.DataFrame(prediction_table(compare, run.tgt_tokens, tokens(run.predicted_ids),
                                          tokens))
    changed = int((compare["argmax_a"] != compare["argmax_b"]).sum())
    # The formula alone on its line, the numbers as text: together they were wider than the
    # page.
    st.latex(r"D_{KL}(p_{\text{mask}} \,\|\, p_{\text{no mask}}) = \sum_v p_{\text{mask}}(v)\,"
             r"\log\frac{p_{\text{mask}}(v)}{p_{\text{no mask}}(v)}")
    st.markdown(f"Mean KL over the {T} positions: **{compare['kl'].mean():.4f} nats**; "
                f"{changed} argmax tokens change.")
    fig = widgets.cached_figure(prediction_change_figure, labels, compare["p_expected_a"],
                                compare["p_expected_b"],
                                compare["kl"], title="Probability of the expected next token, "
                                                     "with and without the causal mask")
    widgets.chart(fig, table, "masking-predictions")
    columns = {name: st.column_config.Column(label, help=what)
               for name, (label, what) in PREDICTION_HEADERS.items()}
    st.dataframe(table, hide_index=True, column_config=columns)
    st.markdown(mask_effect_text(compare))
    st.caption("Even the last position, which sees every position either way, changes when N > "
               "1: the earlier positions it reads from were themselves computed with the "
               "future in view.")


def padding_step(sel: Selection, run) -> None:
    """A batch of the sentence and other examples, padded: one row's padding mask, its maps, and the
    check that padding changes nothing for the real tokens."""
    cfg, i, j = run.config, sel.layer, sel.head
    st.markdown(
        "Sentences of different lengths are padded with `<pad>` to one length, so that a batch "
        "is one tensor. The padding mask sets the scores of `<pad>` *keys* to −∞ wherever they "
        "can be attended to: source `<pad>` keys in encoder self-attention and in "
        "cross-attention, target `<pad>` keys in decoder self-attention (on top of the causal "
        "mask). So real tokens compute exactly what they would alone. `<pad>` *queries* are "
        "still computed — their rows below are real numbers — but nothing reads them, and in "
        "training the loss ignores their positions."
    )
    offered = [s for s in examples.examples_for(sel.src_lang) if s != sel.sentence]
    others = st.multiselect("Other sentences in the batch", offered, default=offered[:2],
                            key="masking_batch")
    sentences = (sel.sentence, *others)
    try:
        trace, src_tokens, tgt_tokens, checks = padded_batch(sel.checkpoint, sentences)
    except Exception as exc:  # an example the tokenizer rejects must not break the page
        st.warning(f"The batch could not be run: {widgets.escape_markdown(str(exc))}")
        st.stop()
    (B, S_max), T_max = trace["src.token_ids"].shape, trace["tgt.token_ids"].shape[1]
    st.latex(r"\text{sources } (B, S_{max}) = (%d, %d),\quad \text{targets } (B, T_{max}) = "
             r"(%d, %d)"
             % (B, S_max, B, T_max))
    widgets.reset_stale_index("masking_row", B)  # the batch or its lengths may have changed
    row = st.selectbox("Batch row", list(range(B)), key="masking_row",
                       format_func=batch_row_labels(src_tokens, tgt_tokens).__getitem__)
    # Row 0 is the user's sentence: show it as the model got it (cleaned), not as typed.
    widgets.show_user_text(f"Row {row}: source sentence", run.source_text if row == 0
                           else sentences[row])
    src_labels = token_labels(src_tokens[row] + ["<pad>"] * (S_max - len(src_tokens[row])))
    tgt_labels = token_labels(tgt_tokens[row] + ["<pad>"] * (T_max - len(tgt_tokens[row])))
    key_real = trace["src.token_ids"][row].numpy() != cfg.pad_id  # (S_max,)
    fig = widgets.cached_figure(key_mask_figure, key_real, src_labels,
                                title=f"Row {row}: padded source and its padding mask (grey = "
                                "&lt;pad&gt;)")
    widgets.chart(fig, {"position": src_labels, "may attend": key_real}, "masking-padding-mask")
    _batch_maps(trace, row, i, j, src_labels, tgt_labels, key_real)
    _batch_check(checks[row], key_real)


def _batch_maps(trace, row: int, i: int, j: int, src_labels: list[str], tgt_labels: list[str],
                key_real: np.ndarray) -> None:
    enc = [trace[f"encoder.{i}.self_attn.{name}"][row, j].numpy()
           for name in ("scores", "masked_scores", "weights")]
    fig = widgets.cached_figure(masked_attention_figure, *enc, src_labels, src_labels,
                                title=f"Row {row}, encoder layer {i}, head {j}: self-attention "
                                "over the padded source")
    widgets.chart(fig, widgets.long_form(src_labels, src_labels, {"weight": enc[2]}),
                  "masking-batch-encoder")
    cross = trace[f"decoder.{i}.cross_attn.weights"][row, j].numpy()  # (T_max, S_max)
    fig = widgets.cached_figure(attention_map, cross, src_labels, tgt_labels,
                                x_title="source key",
                                masked=np.broadcast_to(~key_real, cross.shape),
                                y_title="target query",
                                title=f"Row {row}, decoder layer {i}, head {j}: cross-attention")
    widgets.chart(fig, widgets.long_form(tgt_labels, src_labels, {"weight": cross},
                                         ("target", "source")),
                  "masking-batch-cross")


def _batch_check(check: dict, key_real: np.ndarray) -> None:
    """Over every layer and head, not only the ones drawn."""
    c1, c2, c3 = st.columns(3)
    c1.metric("largest weight on a <pad> key (all layers, heads)", f"{check['pad_weight']:.1g}")
    c2.metric("max |Δ| encoder output vs the sentence alone", f"{check['encoder_diff']:.2e}")
    c3.metric("max |Δ| decoder output vs the sentence alone", f"{check['decoder_diff']:.2e}")
    if not (~key_real).any():
        st.caption("This row is the longest source in the batch: it has no <pad>. Pick another "
                   "row to see padding.")
    if check["matches"]:
        st.success("Padding changes nothing for the real tokens: every <pad> key has weight "
                   "exactly 0, and the outputs match the single-sentence run within "
                   f"{engine.BATCH_ATOL:g}.")
    else:
        st.error("The padded batch does not reproduce the single-sentence run (see the numbers "
                 "above).")
