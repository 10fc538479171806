"""Why this word? Activation patching between a clean and a corrupted sentence (one word apart) at
one target position, beside it the contrastive attribution "why X, not Y?", and below, for the
clean translation, each word's share from the source and from the translation so far."""

import pandas as pd
import streamlit as st

from transformer_viz.app import frame, source_share_view, widgets
from transformer_viz.app import patching_view as V
from transformer_viz.app.widgets import escape_markdown
from transformer_viz.interpret.ablation import KINDS
from transformer_viz.interpret.patching import PRESETS, head_shares, summary_text, word
from transformer_viz.plots.common import safe_label, token_labels, token_text
from transformer_viz.plots.patching import (contrast_figure, decoder_patch_figure,
                                            encoder_patch_figure, head_patch_figure)

ctx = frame.page_context(__file__)
sel, _ = frame.page_header(
    ctx,
    "Two sentences one word apart translate differently: which layers, positions and heads carry "
    "the difference? Both run teacher-forced on the **clean** translation; at position t the clean "
    "run prefers X, the **corrupted** run Y. Copy ONE clean activation (an encoder cell, a decoder "
    "cell, a head's output) into the corrupted run: how much of the preference comes back?",
    r"\text{restored share} = \frac{LD_{\text{patched}} - LD_{\text{corrupted}}}"
    r"{LD_{\text{clean}} - LD_{\text{corrupted}}},\qquad LD = \mathrm{logit}(X) - "
    r"\mathrm{logit}(Y)\ \text{at position } t", run=False)

pick_col, position_col = st.columns(2)
with pick_col:
    preset = V.choose_preset(sel)
pair = V.Pair.of(preset) if preset else V.typed_pair(sel)
if pair is None:
    st.info("Type the corrupted sentence: one word changed for another of as many tokens. The "
            "presets:")
    st.dataframe(pd.DataFrame([{"model": p.checkpoint, "clean": p.clean, "corrupted": p.corrupted}
                               for p in PRESETS]), hide_index=True)
    st.stop()
first = V.patching(pair.checkpoint, pair.clean, pair.corrupted, None)
if isinstance(first, str):
    st.error(escape_markdown(first))
    st.stop()
with position_col:
    t = V.choose_position(pair, first)
p = first if t == first.position else V.patching(pair.checkpoint, pair.clean, pair.corrupted, t)
summary_slot = st.container()  # the result in one sentence, above the figures
patch_col, why_col = st.columns([3, 2])
with why_col:  # beside the grids, so that they start on a projector's first screen
    widgets.show_user_text("Clean sentence → its translation",
                           f"{pair.clean}\n→ {first.translation}")
    widgets.show_user_text("Corrupted sentence → its translation",
                           f"{pair.corrupted}\n→ {first.corrupted_translation}")
if isinstance(p, str):
    summary_slot.error(escape_markdown(p))
    st.stop()

g = p.grids
X, Y = word(p.clean_token), word(p.corrupted_token)
summary_slot.markdown(f"**{escape_markdown(summary_text(p))}**")
src_labels = token_labels(p.src_tokens)
for s in p.changed:  # the changed token, both versions
    src_labels[s] = (f"{s} {safe_label(token_text(p.src_tokens[s]))}→"
                     f"{safe_label(token_text(p.corrupted_tokens[s]))}")
tgt_labels = token_labels(p.tgt_tokens)
layers = [f"layer {i}" for i in range(len(g.encoder))]

with patch_col:
    fig = widgets.cached_figure(encoder_patch_figure, g.encoder, g.encoder_all, src_labels,
                                p.changed, title="Encoder: one clean cell copied")
    values = [list(row) + [share] for row, share in zip(g.encoder, g.encoder_all)]
    data = widgets.long_form(layers, src_labels + ["all positions"], {"restored share": values},
                             ("layer", "source"))
    widgets.chart(fig, data, "why-encoder",
                  caption="Row: the encoder layer whose output is copied; column: the source "
                          "position (outlined: the changed token), or all of them at once.")
    fig = widgets.cached_figure(decoder_patch_figure, g.decoder, tgt_labels, t,
                                title=f"Decoder: one clean cell copied (outlined: t = {t})")
    data = widgets.long_form(layers, tgt_labels, {"restored share": g.decoder}, ("layer", "target"))
    widgets.chart(fig, data, "why-decoder", caption=V.CONE_TEXT)

with why_col:
    st.markdown(f"At position {t} the clean run writes **“{escape_markdown(X)}”**, the corrupted "
                f"run **“{escape_markdown(Y)}”**. LD = logit(X) − logit(Y) there: "
                f"**{g.ld_clean:.3f}** clean, **{g.ld_corrupted:.3f}** corrupted (both read <s> "
                f"and the clean translation before t).")
    contrast, plain = V.attributions(pair.checkpoint, pair.clean, pair.corrupted, t)
    prefix = tgt_labels[:t + 1]
    title = f"Why “{safe_label(X)}”, not “{safe_label(Y)}”?"
    fig = widgets.cached_figure(contrast_figure, contrast.source, src_labels, contrast.target,
                                prefix, plain, title=title)
    data = {"part": ["source"] * len(src_labels) + ["target prefix"] * len(prefix),
            "token": src_labels + prefix,
            "why X, not Y": list(contrast.source) + list(contrast.target),
            "why X (plain, source only)": list(plain) + [None] * len(prefix)}
    delta = contrast.g_input - contrast.g_baseline
    widgets.chart(fig, data, "why-contrast",
                  caption=f"Integrated gradients of g = logit(X) − logit(Y) at t, on the clean "
                          f"sentence from zero embeddings, over the source tokens and the target "
                          f"prefix: together they sum to g(input) − g(baseline) = {delta:.3f} "
                          f"up to {contrast.gap:.1%}. Light bars: the plain attribution of "
                          f"log p(X).")

fig = widgets.cached_figure(head_patch_figure, g.heads, tuple(KINDS),
                            title="Heads: one head's clean output copied (before W_O)")
shares = head_shares(g)
widgets.chart(fig, {"head": list(shares), "restored share": list(shares.values())}, "why-heads",
              caption="Each cell copies one head's d_k columns of Concat(head_1, …, head_h) from "
                      "the clean run; a head that alone restores much of the word carries it.")

source_share_view.section(pair.checkpoint, pair.clean)
