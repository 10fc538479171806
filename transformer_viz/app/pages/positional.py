"""Positional encoding: attention itself ignores order, so each position gets its own sin/cos
signature."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from transformer_viz import views
from transformer_viz.app import frame, loaders, steps, widgets
from transformer_viz.plots import positional as plots
from transformer_viz.text.tokenizer import InputError

BASES = [100, 300, 1000, 3000, 10000, 30000, 100000]


ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Self-attention treats its input as a set: shuffle the tokens and each one gets the same "
    "result, just shuffled. To let word order matter, a fixed vector that depends only on the "
    "position is added to each token's embedding. Each pair of dimensions (2i, 2i+1) is a sine and "
    "a cosine of one frequency, from fast (wavelength 2π) to slow (wavelength 2π·base).")

cfg = run.config
d_model, S = cfg.d_model, len(run.src_ids)
st.latex(r"PE_{(pos,\,2i)} = \sin\!\Big(\frac{pos}{%g^{2i/%d}}\Big),\qquad "
         r"PE_{(pos,\,2i+1)} = \cos\!\Big(\frac{pos}{%g^{2i/%d}}\Big)"
         % (cfg.pe_base, d_model, cfg.pe_base, d_model))

embedding = run.trace["src.embedding"][0].numpy()  # (S, d_model)
positional = run.trace["src.positional"].numpy()  # (S, d_model)
# (S, d_model): the encoder's input, used by steps 4 and 5
total = run.trace["src.input"][0].numpy()

# The base and the number of positions apply to steps 1–3.
left, right = st.columns(2)
base = float(left.select_slider("base", options=BASES, value=int(cfg.pe_base)
                                if int(cfg.pe_base) in BASES else 10000,
                                help="The paper uses 10000. Other values are for exploring only: "
                                     f"the model was trained with base {cfg.pe_base:g}."))
length = int(right.slider("Positions shown", min_value=2, max_value=cfg.max_len,
                          value=views.default_length(run)))
if base != cfg.pe_base:
    st.info(f"Exploring base {base:g}; the model itself (and steps 4–5) uses base {cfg.pe_base:g}.")
chosen = {"length": length, "base": base}  # the options of steps 1–3

matrix_tab, curves_tab, similarity_tab, sum_tab, order_tab = steps.tabs(ctx, [
    "1 · The PE matrix",
    "2 · sin/cos curves",
    "3 · Position similarity",
    "4 · Embedding + PE",
    "5 · Word order",
], key="positional_step")  # short labels: all five tabs fit at 1280 px

if matrix_tab.open:
    with matrix_tab:
        halves = "sin and cos halves side by side"
        layout = st.radio("Columns", [halves, "interleaved, as the model stores them"],
                          horizontal=True, key="positional_columns")
        grouped = layout == halves
        matrix = views.positional(run, "matrix", interleaved=not grouped, **chosen)
        widgets.view_chart(matrix, "positional-matrix")
        shown_bases = sorted({100.0, 1000.0, 10000.0, 100000.0, base})
        fig = widgets.cached_figure(plots.wavelength_figure, d_model, shown_bases, base)
        widgets.chart(fig, pd.DataFrame({f"base {b:g}": plots.wavelengths(d_model, b)
                                         for b in shown_bases}),
                      "positional-wavelengths")

if curves_tab.open:
    with curves_tab:
        dims = st.multiselect("Dimensions", list(range(d_model)),
                              default=views.default_dims(d_model))
        if dims:
            curves = views.positional(run, "curves", dims=dims, **chosen)
            widgets.view_chart(curves, "positional-curves",
                               caption="Lines: the formula evaluated between positions. Markers: "
                                       "the rows of the PE matrix.")

if similarity_tab.open:
    with similarity_tab:
        kind = st.radio("Similarity", ["dot", "cosine"], horizontal=True,
                        format_func=lambda k: "dot product" if k == "dot" else "cosine")
        st.latex(r"PE_p \cdot PE_q = \sum_{i} \cos\!\Big(\frac{p - q}{%g^{2i/%d}}\Big),\qquad "
                 r"\lVert PE_p \rVert^2 = d_{model}/2 = %d" % (base, d_model, d_model // 2))
        st.markdown("The dot product depends only on the distance p − q: nearby positions look "
                    "alike, and the pattern is the same along every diagonal.")
        similarity = views.positional(run, "similarity", kind=kind, **chosen)
        widgets.view_chart(similarity, "positional-similarity")

if sum_tab.open:
    with sum_tab:
        mean_norm = float(np.linalg.norm(embedding, axis=-1).mean())
        st.latex(r"\text{input}_{pos} = E[\text{id}_{pos}]\sqrt{%d} + PE_{pos},\qquad "
                 r"\overline{\lVert E\sqrt{d_{model}} \rVert} = %.3f,\quad \lVert PE_{pos} \rVert "
                 r"= \sqrt{%d/2} = %.3f"
                 % (d_model, mean_norm, d_model, math.sqrt(d_model / 2)))
        parts = {"embedding": embedding, "positional": positional, "input": total}
        widgets.view_chart(views.positional(run, "sum"), "positional-sum")
        fig = widgets.cached_figure(plots.norms_figure, embedding, positional, total,
                                    run.src_tokens)
        widgets.chart(fig, pd.DataFrame({"token": widgets.row_names(run.src_tokens),
                                         **{name: np.linalg.norm(part, axis=-1) for name,
                                            part in parts.items()}}),
                      "positional-norms")

if order_tab.open:
    with order_tab:
        st.markdown("The sentence with its words reversed has the same tokens, so the same "
                    "embedding rows; only the positional encoding differs, so the inputs differ. "
                    "Without it, the encoder could not tell the two sentences apart except by "
                    "shuffling its outputs. A token that occurs several times is paired with its "
                    "occurrences in the other order one by one.")
        reversed_text = plots.reversed_words(run.source_text)
        if reversed_text == run.source_text:
            st.info("Reversing the words gives the same text (a single word?): type a longer "
                    "sentence to compare.")
            st.stop()
        try:
            other = loaders.reversed_inputs(sel.checkpoint, reversed_text)
            other_text, other_tokens, other_embedding, other_input = other
        except InputError as exc:
            st.warning(widgets.escape_markdown(str(exc)))
            st.stop()
        left, right = st.columns(2)
        with left:
            widgets.show_user_text("Original order", run.source_text)
        with right:
            widgets.show_user_text("Reversed word order", other_text)
        if sorted(run.src_tokens) != sorted(other_tokens):
            st.info("The tokenizer cut the reversed text slightly differently; tokens without a "
                    "partner are marked.")
        matches = plots.match_positions(run.src_tokens, other_tokens)
        difference = plots.order_difference(total, other_input, matches)
        emb_difference = plots.order_difference(embedding, other_embedding, matches)
        comparison = plots.order_table(run.src_tokens, matches, emb_difference, difference)
        formula = plots.largest_move_latex(comparison)
        if formula:
            st.latex(formula)
        table = pd.DataFrame(comparison).astype({"position (reversed)": "Int64"})
        st.dataframe(table, hide_index=True)
        fig = widgets.cached_figure(plots.order_difference_heatmap, difference, run.src_tokens,
                                    matches)
        widgets.chart(fig, widgets.token_frame(difference, run.src_tokens), "positional-order")
