"""Tokens & embeddings: text -> subword tokens -> IDs -> rows of the embedding matrix, scaled by
√d_model."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz import views
from transformer_viz.app import frame, loaders, steps, widgets
from transformer_viz.plots import embeddings as plots
from transformer_viz.plots.common import WORD_START, token_text


@st.cache_data(show_spinner=False, max_entries=64)
def nearest(checkpoint: str, ids: tuple[int, ...], k: int) -> tuple[np.ndarray, np.ndarray,
                                                                    list[list[str]]]:
    # One pass over the whole vocabulary per (sentence, k), not per rerun.
    ckpt = loaders.get_checkpoint(checkpoint)
    weight = ckpt.model.src_embed.weight.detach().cpu().numpy()  # (V, d_model)
    top, sims = plots.nearest_neighbours(weight, list(ids), k)
    names = [ckpt.tokenizer.convert_ids_to_tokens([int(i) for i in row]) for row in top]
    return top, sims, names


ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "The model never sees letters. A subword tokenizer (BPE) cuts the sentence into pieces from a "
    "fixed vocabulary, each piece has an ID, and the ID picks one row of the embedding matrix E. "
    "That row, scaled by √d_model, is the token's vector; the positional encoding is added next "
    "(see *Positional encoding*).")

ckpt = loaders.get_checkpoint(sel.checkpoint)
cfg = run.config
d_model, V = cfg.d_model, cfg.vocab_size
tokens, ids = run.src_tokens, run.src_ids
S = len(ids)
embedding = run.trace["src.embedding"][0].numpy()  # (S, d_model), already × √d_model
st.latex(r"x = E[\text{id}] \cdot \sqrt{d_{model}},\qquad E \in \mathbb{R}^{V \times d_{model}} = "
         r"\mathbb{R}^{%d \times %d},\quad S = %d\ \text{tokens}" % (V, d_model, S))

ids_tab, padding_tab, embedding_tab, scaling_tab, similarity_tab, neighbours_tab = steps.tabs(ctx, [
    "1 · Tokens and IDs",
    "2 · Padding",
    "3 · Embedding rows",
    "4 · ×√d_model",
    "5 · Similar tokens",
    "6 · Nearest neighbours",
], key="tokens_step")  # short labels: all six tabs fit at 1280 px

if ids_tab.open:
    with ids_tab:
        widgets.show_user_text(f"Source ({sel.src_name})", run.source_text)
        st.markdown(f"`{WORD_START}` marks the start of a word (the tokenizer stores it as ▁, "
                    "U+2581, which many fonts draw like an underscore); `</s>` ends the source so "
                    "the encoder knows where it stops.")
        st.dataframe(pd.DataFrame({"position": range(S), "token": [token_text(t) for t in tokens],
                                   "ID": ids}),
                     hide_index=True)

if padding_tab.open:
    with padding_tab:
        st.markdown(
            "Sentences in a batch have different lengths, but a tensor needs one. Shorter ones are "
            "filled with `<pad>` (ID %d), and a padding mask records which positions are real so "
            "that attention ignores the rest."
            % cfg.pad_id
        )
        if st.toggle("Pad this sentence", value=True):
            length = int(st.number_input("Padded length", min_value=S, max_value=cfg.max_len,
                                         value=min(S + 4, cfg.max_len), step=1))
            padded, mask = plots.pad_ids(ids, length, cfg.pad_id)
            st.latex(r"\text{mask}_j = [\,\text{id}_j \neq %d\,]:\ %d\ \text{real} + %d\ "
                     r"\text{padding} = %d"
                     % (cfg.pad_id, S, length - S, length))
            fig = widgets.cached_figure(plots.padding_figure, tokens, padded, mask)
            widgets.chart(fig, pd.DataFrame({"ID": padded, "mask": mask}), "tokens-padding")

if embedding_tab.open:
    with embedding_tab:
        st.markdown(f"Each row is one token's vector: its ID selects row E[id] of the {V} × "
                    f"{d_model} matrix (tied: the same matrix embeds the target and projects to "
                    "the output vocabulary).")
        widgets.view_chart(views.embeddings(run, "rows"), "tokens-embedding")

if scaling_tab.open:
    with scaling_tab:
        position = st.selectbox("Token", list(range(S)), format_func=lambda i: f"{i}: {tokens[i]}")
        raw = ckpt.model.src_embed.weight[ids[position]].detach().cpu().numpy()
        scaled = embedding[position]
        root = math.sqrt(d_model)
        st.latex(r"E[%d] \cdot \sqrt{d_{model}} = E[%d] \cdot \sqrt{%d} = E[%d] \cdot %.4f,\qquad "
                 r"\lVert E[%d] \rVert = %.4f \;\to\; %.4f"
                 % (ids[position], ids[position], d_model, ids[position], root, ids[position],
                    np.linalg.norm(raw), np.linalg.norm(scaled)))
        st.markdown("Without the factor, the embedding rows (initialised with norm ≈ 1) would be "
                    "small next to the positional encoding, whose every row has norm √(d_model/2) "
                    f"= {math.sqrt(d_model / 2):.4g}.")
        fig = widgets.cached_figure(plots.scaling_figure, raw, scaled, tokens[position], d_model)
        widgets.chart(fig, pd.DataFrame({"raw": raw, "scaled": scaled}), "tokens-scaling")

if similarity_tab.open:
    with similarity_tab:
        st.latex(r"\cos(x_i, x_j) = \frac{x_i \cdot x_j}{\lVert x_i \rVert\, \lVert x_j \rVert}"
                 r"\quad\text{(the factor }\sqrt{d_{model}}\text{ cancels)}")
        widgets.view_chart(views.embeddings(run, "cosine"), "tokens-cosine")

if neighbours_tab.open:
    with neighbours_tab:
        st.markdown(f"For each token, the rows of E (all {V} of them) with the highest cosine "
                    "similarity to its own. Training pulls tokens used in similar contexts "
                    "together; #0 is always the token itself (cosine 1).")
        k = st.slider("Neighbours per token", min_value=2, max_value=min(10, V), value=min(5, V))
        top, sims, names = nearest(sel.checkpoint, tuple(ids), k)
        fig = widgets.cached_figure(plots.neighbours_figure, tokens, names, sims)
        widgets.chart(fig, pd.DataFrame({"token": [t for t in widgets.row_names(tokens)
                                                   for _ in range(k)],
                                         "rank": list(range(k)) * S,
                                         "neighbour": [n for row in names for n in row],
                                         "neighbour ID": top.reshape(-1),
                                         "cosine": sims.reshape(-1)}),
                      "tokens-neighbours")
