"""What does a head do? Heads switched off, the decoder's guess after each layer and sublayer
(plain or tuned lens), which source words a translation used (attribution beside attention), the
lecture's coreference sentences, and a map of head types with each head's identity card."""

import numpy as np
import streamlit as st

from transformer_viz.app import (attribution_view, coreference_view, frame, head_map_view,
                                 heads_view, lens_view, on_request, steps, widgets)
from transformer_viz.interpret.ablation import all_heads
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.heads import token_prob_figure

ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Attention maps show where a head looks, not what the translation needed. Here the model is "
    "asked directly: **switch heads off** and see what changes, **read each decoder layer's "
    "guess** of the next word, and **measure which source words** the probability of each "
    "translated word depends on. A head is switched off by zeroing its output head_i, its d_k "
    "columns of Concat(head_1, …, head_h), before W_O.",
    r"\mathrm{MultiHead} = \mathrm{Concat}(m_1\,\mathrm{head}_1, \dots, "
    r"m_h\,\mathrm{head}_h)\,W_O,\quad m_i \in \{0, 1\},\qquad f_t = \log p(y_t \mid y_{<t}, x)")
cfg = run.config
tgt_labels = token_labels(run.tgt_tokens)
written = run.tgt_tokens[1:] + ["</s>"]  # what each decoder position predicts
names = [str(h) for h in all_heads(cfg)]

off_tab, lens_tab, source_tab, coref_tab, cards_tab = steps.tabs(ctx, [
    "1 · Switch heads off", "2 · Each layer's guess", "3 · Which source words?",
    "4 · “it” and “they”", "5 · Head types",
], key="heads_step")

if off_tab.open:
    with off_tab:
        off = heads_view.heads_off_choice(sel, names)
        # a large model's bars wait for the button
        each_head = on_request.ready(sel, cfg, heads_view.DROPS)
        numbers, (_, off_text) = heads_view.heads_numbers(sel.checkpoint, sel.sentence, tuple(off),
                                                          each_head)
        left, right = st.columns(2)
        with left:
            widgets.show_user_text("Translation, every head on", run.translation or "(empty)")
        with right, st.container(key="heads_off_translation"):
            widgets.show_user_text(f"Translation with {len(off)} head(s) off", off_text
                                   or "(empty)")
        drop = float(np.log(numbers.p_base).sum() - np.log(numbers.p_off).sum())
        st.markdown("Teacher-forced on the original translation, its log-probability falls by "
                    f"**{drop:.3f} nats** with these heads "
                    "off." if off else "Choose heads above to switch them off.")
        fig = widgets.cached_figure(token_prob_figure, written, numbers.p_base, numbers.p_off,
                                    title="Probability of each token of the original translation")
        widgets.chart(fig, {"token": written, "p, every head on": numbers.p_base,
                            "p, heads off": numbers.p_off},
                      "heads-token-probs")
        heads_view.drops_part(sel, cfg, names, tuple(off), numbers)

if lens_tab.open:
    with lens_tab:
        lens_view.lens_step(sel, cfg.pre_ln, tgt_labels, written)

if source_tab.open:
    with source_tab:
        attribution_view.source_step(sel, run)

if coref_tab.open:
    with coref_tab:
        coreference_view.coreference_step(sel, run, written)

if cards_tab.open:
    with cards_tab:
        head_map_view.cards_step(sel, names)
