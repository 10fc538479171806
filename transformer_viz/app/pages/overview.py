"""Overview & translation: what the model made of the sentence, and the architecture with its
shapes."""

import streamlit as st

from transformer_viz.app import about, examples, frame, loaders, widgets
from transformer_viz.plots.architecture import architecture_browser_figure
from transformer_viz.plots.blocks import DIAGRAM_CAPTION
from transformer_viz.text.tokenizer import clean_text


def model_card(name: str) -> None:
    """The checkpoint's model card, folded, under the heading that the link by the training data
    points to."""
    card = about.model_card_text(name)
    if card:
        st.subheader("Model card", anchor="model-card")
        with st.expander("Training data, hyper-parameters, scores and training history"):
            st.markdown(card)


ctx = frame.page_context(__file__)
sel, _ = frame.page_header(
    ctx,
    "An encoder reads the whole source sentence at once; a decoder writes the translation one "
    "token at a time, attending to its own earlier output (masked self-attention) and to the "
    "encoder's output (cross-attention). Every page of this app looks inside one step of that "
    "computation.", run=False)
# Slots filled once the model has run. Until the model is in memory the architecture is drawn at
# once from the config alone, S and T as symbols: the reader has something to look at, and the
# browser fetches its chart code meanwhile. On a fresh server, whose first model loads in a
# background thread, this run ends there, the translation's place saying so; the fragment in it
# reruns the page once the model is loaded.
source_col, translation_col = st.columns(2)
formula_slot, figure_slot = st.empty(), st.empty()
cfg, metadata = about.checkpoint_info(sel.checkpoint)
st.markdown(about.training_data_line(metadata) + " [Model card](#model-card)")
decoding = about.generation_defaults(sel.checkpoint)
translation_label = f"Translation ({sel.tgt_name}, {decoding.describe()}: this model's default)"
if not loaders.model_loaded(sel.checkpoint):
    figure_slot.plotly_chart(widgets.cached_figure(architecture_browser_figure, N=cfg.N,
                                                   d_model=cfg.d_model, h=cfg.h,
                                                   d_ff=cfg.d_ff, vocab_size=cfg.vocab_size, S="S",
                                                   T="T"),
                             width="stretch", key="architecture-symbolic", theme=None,
                             config=widgets.CHART_CONFIG)
    # a fresh server: this run ends without the model
    if loaders.loading_in_background(sel.checkpoint):
        with source_col:
            widgets.show_user_text(f"Source ({sel.src_name})", clean_text(sel.sentence).text)
        with translation_col:
            widgets.show_user_text(translation_label, "Loading the model…")
            frame.rerun_when_loaded(sel.checkpoint)
        model_card(sel.checkpoint)
        st.stop()
# S and T and the translations: no tensor of the run is shown
run = frame.current_run(ctx, trace=False)
# the input was refused (the message is shown): no figure, whether the model was loaded or not
if run is None:
    figure_slot.empty()
    st.stop()

best = loaders.get_translation(sel.checkpoint, sel.sentence,
                               decoding.num_beams) if decoding.num_beams > 1 else run
with source_col:
    widgets.show_user_text(f"Source ({sel.src_name})", run.source_text)
with translation_col:
    widgets.show_user_text(translation_label, best.translation or "(empty)")
    if best is not run and best.translation != run.translation:
        widgets.show_user_text("The step-by-step pages follow greedy decoding, which gives",
                               run.translation)
note = examples.reference_note(sel.src_lang, sel.sentence, best.translation, metadata)
if note:
    st.info(note)
S, T = len(run.src_ids), len(run.tgt_ids)
formula_slot.latex(r"\text{Transformer}: (B, S) = (1, %d)\ \text{source IDs} \;\to\; (B, T, V) = "
                   r"(1, %d, %d)\ \text{logits}" % (S, T, cfg.vocab_size))
fig = widgets.cached_figure(architecture_browser_figure, N=cfg.N, d_model=cfg.d_model, h=cfg.h,
                            d_ff=cfg.d_ff,
                            vocab_size=cfg.vocab_size, S=S, T=T)
with figure_slot.container():
    widgets.chart(fig, {"component": ["source", "target", "d_model", "h", "d_k", "d_ff", "N", "V"],
                        "value": [S, T, cfg.d_model, cfg.h, cfg.d_k, cfg.d_ff, cfg.N,
                                  cfg.vocab_size]}, "architecture",
                  caption=DIAGRAM_CAPTION)
model_card(sel.checkpoint)
