"""Step 4 of "What does a head do?" (pages/heads.py): the lecture's coreference sentences, the
encoder's self-attention from the pronoun to each noun, and what switching off the head that links
them most does to the translation's pronouns."""

from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_viz.app import heads_view, widgets
from transformer_viz.app.context import Selection
from transformer_viz.interpret import explain as X
from transformer_viz.interpret.ablation import Head
from transformer_viz.plots.heads import pronoun_figure


def coreference_step(sel: Selection, run, written: list[str]) -> None:
    """The preset sentences' buttons; for a preset, the pronoun's attention to each noun in every
    encoder layer and head, and the translation with the most linking head off (``written``: the
    token each decoder position predicts)."""
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
                    for i in range(run.config.N)])
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
