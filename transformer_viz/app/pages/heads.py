"""What does a head do? Heads switched off, the decoder's guess after each layer and sublayer
(plain or tuned lens), which source words a translation used (attribution beside attention), the
lecture's coreference sentences, and a map of head types with each head's identity card."""

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz.app import (frame, head_map_view, heads_view, lens_view, steps,
                                 widgets)
from transformer_viz.interpret.ablation import Head, all_heads
from transformer_viz.plots.common import DIVERGING, heatmap, token_labels
from transformer_viz.plots.heads import head_drop_figure, pronoun_figure, token_prob_figure
from transformer_viz.plots.layers import attention_map
from transformer_viz.interpret import explain as X

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
src_labels, tgt_labels = token_labels(run.src_tokens), token_labels(run.tgt_tokens)
written = run.tgt_tokens[1:] + ["</s>"]  # what each decoder position predicts
names = [str(h) for h in all_heads(cfg)]

off_tab, lens_tab, source_tab, coref_tab, cards_tab = steps.tabs(ctx, [
    "1 · Switch heads off", "2 · Each layer's guess", "3 · Which source words?",
    "4 · “it” and “they”", "5 · Head types",
], key="heads_step")

if off_tab.open:
    with off_tab:
        off = heads_view.heads_off_choice(sel, names)
        numbers, (_, off_text) = heads_view.heads_numbers(sel.checkpoint, sel.sentence, tuple(off))
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
        fig = widgets.cached_figure(head_drop_figure, names, numbers.drops, tuple(off),
                                    title="How much log p(translation) falls when one head alone "
                                    "is off")
        widgets.chart(fig, {"head": names, "drop (nats)": numbers.drops}, "heads-drops",
                      caption="All 3·N·h heads in one batched forward pass: batch row r has head r "
                              "off, and every row reads the same original translation (teacher "
                              "forcing). Blue: encoder, green: decoder self-attention, purple: "
                              "cross-attention; orange: switched off above.")
        st.markdown(X.most_important_text(numbers))

if lens_tab.open:
    with lens_tab:
        lens_view.lens_step(sel, cfg.pre_ln, tgt_labels, written)

if source_tab.open:
    with source_tab:
        st.latex(r"\mathrm{IG}_s = \sum_d e_{sd}\int_0^1 \frac{\partial f_t(\alpha e)}{\partial "
                 r"e_{sd}}\,d\alpha\ \approx\ \sum_d e_{sd}\sum_{k=1}^{m} w_k \frac{\partial "
                 r"f_t(\alpha_k e)}{\partial e_{sd}},\qquad \mathrm{grad}\times\mathrm{input}_s = "
                 r"\sum_d e_{sd}\,\frac{\partial f_t(e)}{\partial e_{sd}}")
        m = st.select_slider("Integration steps m (Gauss–Legendre nodes α_k, weights w_k)",
                             [8, 16, 32, 64],
                             value=X.IG_STEPS, key="heads_ig_steps")
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
                          for i in range(cfg.N)])
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
                                                       for i, a in enumerate(agree["per_layer"]))
                                                       + ".")
        st.caption(heads_view.TEST_SET_NOTE)
        lens = heads_view.lens(sel.checkpoint, sel.sentence)
        st.caption("Per token written (the same table as `python -m transformer_viz explain`):")
        st.dataframe(pd.DataFrame(X.explanation_rows(run, lens, ig, gxi)), hide_index=True)

if coref_tab.open:
    with coref_tab:
        presets = X.COREFERENCE.get(sel.src_lang, {})
        for k, preset in enumerate(presets):
            st.button(preset, key=f"heads_preset_{k}", on_click=heads_view.set_sentence,
                      args=(preset,))
        case = presets.get(sel.sentence.strip())
        if case is None:
            st.info("Pick one of the sentences above: the encoder's self-attention from the "
                    "pronoun to each noun.")
            st.stop()
        pronoun, candidates = case
        enc = np.stack([run.trace[f"encoder.{i}.self_attn.weights"][0].numpy()
                        for i in range(cfg.N)])
        found = X.pronoun_attention(enc, run.src_tokens, pronoun, candidates)
        if found is None:
            st.warning("This tokenizer splits the pronoun or a noun so that it cannot be found.")
            st.stop()
        fig = widgets.cached_figure(pronoun_figure, found["weights"], list(candidates),
                                    title=f"Encoder self-attention from “{pronoun}” to each noun")
        # (noun, layer, head) of every cell
        grid = np.indices(found["weights"].shape).reshape(3, -1)
        widgets.chart(fig, {"noun": np.asarray(candidates)[grid[0]], "layer": grid[1],
                            "head": grid[2],
                            "weight": found["weights"].ravel()}, "heads-pronoun")
        layer, head = found["best"]
        best = str(Head("enc", layer, head))
        off_text = heads_view.translation_off(sel.checkpoint, sel.sentence, (best,))
        def pronouns(text: str) -> str:
            return ", ".join(f"“{w}”" for w in X.pronouns_in(text, sel.tgt_lang)) or "none"

        st.markdown(f"The head linking “{pronoun}” most to “{candidates[0]}” rather than "
                    f"“{candidates[1]}” is **{best}** (weight "
                    f"{found['weights'][0, layer, head]:.2f} against "
                    f"{found['weights'][1:, layer, head].max():.2f}). Pronouns in the translation: "
                    f"every head on {pronouns(run.translation)}; with {best} off "
                    f"{pronouns(off_text)}.")
        said = X.pronouns_in(run.translation, sel.tgt_lang)
        if said and (t := X.word_position(written, said[0])) is not None:
            p = heads_view.heads_numbers(sel.checkpoint, sel.sentence, (best,))[0]
            verdict = ("this head carries much of the link" if p.p_off[t] < 0.8 * p.p_base[t] else
                       "the model does not need this head alone for it: other heads and layers "
                       "carry the link too")
            st.markdown(f"Teacher-forced, p(“{said[0]}”) is {p.p_base[t]:.3f} with every head on "
                        f"and {p.p_off[t]:.3f} with {best} off: {verdict}.")
        left, right = st.columns(2)
        with left:
            widgets.show_user_text("Every head on", run.translation)
        with right:
            widgets.show_user_text(f"With {best} off", off_text)

if cards_tab.open:
    with cards_tab:
        head_map_view.cards_step(sel, names)
