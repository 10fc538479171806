"""Step 3 of "What does a head do?" (pages/heads.py): which source words each translated word
depends on, by integrated gradients and gradient × input, beside the cross-attention maps, and how
often the two agree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz.app import heads_view, on_request, widgets
from transformer_viz.app.context import Selection
from transformer_viz.interpret import explain as X
from transformer_viz.plots.common import DIVERGING, heatmap, token_labels
from transformer_viz.plots.layers import attention_map

# Measured by bench/heads_stats.py (README, "What does a head do?"): the lesson of this step over a
# test set.
TEST_SET_NOTE = ("Over the first 500 sentences of test_2016_flickr (checkpoints/de-en, greedy, "
                 "integrated gradients with 16 steps), the most-attended source token is the "
                 "most-attributed one at 13 %, 40 % and 56 % of the 7,080 target positions in "
                 "decoder layers 0, 1 and 2 (mean over heads; 20 %, 56 %, 63 % for the heads' mean "
                 "attention). Attention is not attribution.")


def source_step(sel: Selection, run) -> None:
    """The attributions (target × source), the cross-attention of the sidebar's layer and head and
    of the layer's mean, their argmax agreement and the per-token table."""
    src_labels, tgt_labels = token_labels(run.src_tokens), token_labels(run.tgt_tokens)
    st.latex(r"\mathrm{IG}_s = \sum_d e_{sd}\int_0^1 \frac{\partial f_t(\alpha e)}{\partial "
             r"e_{sd}}\,d\alpha\ \approx\ \sum_d e_{sd}\sum_{k=1}^{m} w_k \frac{\partial "
             r"f_t(\alpha_k e)}{\partial e_{sd}},\qquad \mathrm{grad}\times\mathrm{input}_s = "
             r"\sum_d e_{sd}\,\frac{\partial f_t(e)}{\partial e_{sd}}")
    m = st.select_slider("Integration steps m (Gauss–Legendre nodes α_k, weights w_k)",
                         [8, 16, 32, 64],
                         value=X.IG_STEPS, key="heads_ig_steps")
    if not on_request.wanted(sel, run.config, "heads_ig", "Compute the attributions",
                             f"Integrated gradients: one batched forward and backward pass over "
                             f"m = {m} steps × {len(run.tgt_ids)} target positions."):
        return
    ig, delta, gxi = heads_view.attributions(sel.checkpoint, sel.sentence, m)
    gap = float(np.abs(ig.sum(-1) - delta).sum() / np.abs(delta).sum())
    st.markdown("e: the source tokens' embeddings E[x]·√d_model; baseline e′ = 0 (positions "
                "kept). Completeness: the attributions sum to f_t(e) − f_t(e′) up to "
                f"**{gap:.1%}** of Σ_t |f_t(e) − f_t(e′)| with m = {m} (ReLU's kinks: more "
                "steps close the gap).")
    for name, values, key in (("Integrated gradients", ig, "heads-ig"),
                              ("Gradient × input", gxi, "heads-gxi")):
        fig = widgets.cached_figure(heatmap, values, src_labels, tgt_labels, title=name,
                                    colorscale=DIVERGING,
                                    x_title="source token", y_title="predicting after",
                                    hover_value="attribution")
        widgets.chart(fig, widgets.long_form(tgt_labels, src_labels, {"attribution": values},
                                             ("target", "source")),
                      key)
    cross = np.stack([run.trace[f"decoder.{i}.cross_attn.weights"][0].numpy()
                      for i in range(run.config.N)])
    for title, values, key in ((f"Cross-attention, layer {sel.layer}, head {sel.head}",
                                cross[sel.layer, sel.head],
                                "heads-cross-head"),
                               (f"Cross-attention, layer {sel.layer}, mean over heads",
                                cross[sel.layer].mean(0),
                                "heads-cross-mean")):
        fig = widgets.cached_figure(attention_map, values, src_labels, tgt_labels, title=title,
                                    x_title="source token (key)",
                                    y_title="target token (query)")
        widgets.chart(fig, widgets.long_form(tgt_labels, src_labels, {"weight": values},
                                             ("target", "source")), key)
    agree = X.argmax_agreement(cross, ig)
    st.markdown("How often attention's most-attended source token is integrated gradients' "
                "most-attributed one, for this "
                "sentence: " + ", ".join(f"layer {i}: {a:.0%} (mean over heads)"
                                         for i, a in enumerate(agree["per_layer"])) + ".")
    st.caption(TEST_SET_NOTE)
    lens = heads_view.lens(sel.checkpoint, sel.sentence)
    st.caption("Per token written (the same table as `python -m transformer_viz explain`):")
    st.dataframe(pd.DataFrame(X.explanation_rows(run, lens, ig, gxi)), hide_index=True)
