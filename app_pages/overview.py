"""Overview & translation: what the model made of the sentence, and the architecture with its shapes."""

import streamlit as st

from transformer_viz import webapp
from transformer_viz.plots.architecture import architecture_figure

sel = webapp.require_selection()
st.title("Overview & translation")
st.markdown(
    "An encoder reads the whole source sentence at once; a decoder writes the translation one token at a "
    "time, attending to its own earlier output (masked self-attention) and to the encoder's output "
    "(cross-attention). Every page of this app looks inside one step of that computation."
)
run = webapp.current_run(sel)
if run is None:
    st.stop()

left, right = st.columns(2)
with left:
    webapp.show_user_text(f"Source ({sel.src_lang})", run.source_text)
with right:
    webapp.show_user_text(f"Translation ({sel.tgt_lang}, greedy decoding)", run.translation or "(empty)")

cfg = run.config
S, T = len(run.src_ids), len(run.tgt_ids)
st.latex(r"\text{Transformer}: (B, S) = (1, %d)\ \text{source IDs} \;\to\; (B, T, V) = (1, %d, %d)\ \text{logits}"
         % (S, T, cfg.vocab_size))
fig = architecture_figure(N=cfg.N, d_model=cfg.d_model, h=cfg.h, d_ff=cfg.d_ff, vocab_size=cfg.vocab_size, S=S, T=T)
webapp.chart(fig, {"component": ["source", "target", "d_model", "h", "d_k", "d_ff", "N", "V"],
                   "value": [S, T, cfg.d_model, cfg.h, cfg.d_k, cfg.d_ff, cfg.N, cfg.vocab_size]}, "architecture")
