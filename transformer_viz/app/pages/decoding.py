"""Decoding: the translation written one token at a time (greedy, step by step), and beam search."""

import streamlit as st

from transformer_viz import views
from transformer_viz.app import frame, kv_cache_view, loaders, sections, steps, widgets
from transformer_viz.plots.common import token_text
from transformer_viz.text.analysis import step_candidates

# {(checkpoint, sentence): step}, so each sentence keeps its own place
STEPS_KEY = "_decoding_steps"


ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "The decoder writes the translation one token at a time. At step t its input is `<s>` and the "
    "t − 1 tokens written so far; the causal mask lets each of them see only itself and earlier "
    "positions; the newest position reads the source through cross-attention, and the output layer "
    "gives a probability for every token in the vocabulary. **Greedy** decoding takes the most "
    "probable one; **beam search** keeps the K partial translations with the highest sum of "
    "log-probabilities at every step, and when the search ends ranks the finished ones by that sum "
    "divided by the GNMT length penalty (step 2 gives α).",
    r"\hat y_t = \arg\max_v P(v \mid \hat y_{<t}, x),\qquad \text{final rank}(y) = \sum_t \log "
    r"P(y_t \mid y_{<t}, x)\ \big/\ \Big(\frac{5 + |y|}{6}\Big)^{\alpha}")

i, j = sel.layer, sel.head
ckpt = loaders.get_checkpoint(sel.checkpoint)
tokenizer = ckpt.tokenizer
n_steps = views.steps_shown(run)
key = (sel.checkpoint, run.source_text)

greedy_tab, beam_tab, cache_tab = steps.tabs(ctx, [
    "1 · Greedy decoding, step by step",
    "2 · Greedy versus beam search",
    "3 · The key/value cache",
], key="decoding_step")

if greedy_tab.open:
    with greedy_tab:
        t = steps.stepper(STEPS_KEY, key, n_steps, "decoding")

        candidates = step_candidates(run.decoding.steps[t - 1], tokenizer.convert_ids_to_tokens)
        inputs = run.tgt_tokens[:t]
        chosen_id, chosen_token = candidates["chosen_id"], candidates["chosen_token"]
        # one row: the figures start on the first screen
        inputs_col, chosen_col, prob_col = st.columns([2, 1, 1])
        with inputs_col:
            widgets.show_user_text(f"Decoder input at step {t} (<s> + {t - 1} generated)",
                                   " ".join(token_text(x) for x in inputs))
        with chosen_col:
            end = " (end of sentence)" if chosen_id == run.config.eos_id else ""
            widgets.show_user_text("Chosen next token" + end,
                                   token_text(chosen_token))
        prob_col.latex(r"P(\hat y_{%d} \mid \hat y_{<%d}, x) = %.4f"
                       % (t, t, candidates["chosen_prob"]))

        left, right = st.columns(2)
        options = {"step": t, "layer": i, "head": j,
                   "id_to_tokens": tokenizer.convert_ids_to_tokens}
        with left:
            single = ("At step 1 the only input is <s>: the mask is a single cell, <s> attending "
                      "to itself.")
            widgets.view_chart(views.decoding_step(run, part="mask", **options), "decoding-mask",
                               caption=single if t == 1 else None)
        with right:
            widgets.view_chart(views.decoding_step(run, part="topk", **options), "decoding-topk")
        widgets.view_chart(views.decoding_step(run, part="cross", **options), "decoding-cross-row",
                           caption="Taken from the teacher-forced pass over the finished "
                                   "translation: thanks to the causal mask, row t there equals "
                                   "what the decoder computed at step t.")
        st.subheader("What if the model had chosen another word?", anchor=False)
        sections.what_if(ctx, run, "decoding_what_if")

if beam_tab.open:
    with beam_tab:
        K = st.slider("Beam width K", 2, 5, 3, key="decoding_beam")
        # what get_run's beam search uses for this checkpoint
        alpha = ckpt.generation.length_penalty
        # an imported transformers model decodes as transformers does
        hf_beam = ckpt.generation.beam_scoring == "hf"
        st.markdown(
            ("This model decodes with transformers' beam search: each step keeps the 2K best "
             "continuations; one of the first K that ends in </s> leaves the beam as a finished "
             f"hypothesis, scored by its sum of log P divided by |y|^α with **α = {alpha:g}**, and "
             "the search stops when no running beam can beat the worst of K finished ones. The "
             "tree shows the K running beams; the sums shown are unnormalised."
             if hf_beam else
             "During the search, hypotheses are compared by their plain sum of log P: no length "
             "normalisation. Only the final choice among the K hypotheses divides that sum by ((5 "
             f"+ |y|)/6)^α, with **α = {alpha:g}** (this checkpoint's decoding default; |y| counts "
             "the tokens up to and including </s>). The sums shown below are the unnormalised "
             "ones.")
            + (" The checkpoint's optional repetition guard is on: no unit of up to three subwords "
               f"may occur more than {ckpt.generation.max_loop_repeats} times in a "
               "row." if ckpt.generation.max_loop_repeats else ""))
        beam_run = loaders.get_run(sel.checkpoint, sel.sentence, K)
        left, right = st.columns(2)
        with left:
            widgets.show_user_text("Greedy (K = 1)", run.translation or "(empty)")
            st.metric("sum of log P", f"{run.decoding.scores[0]:.4f}")
        with right:
            widgets.show_user_text(f"Beam search (K = {K})", beam_run.translation or "(empty)")
            # equal to the 4 decimals shown: a neutral "same", not a red "-0.0000" that reads as
            # worse
            change, colour = widgets.score_change(beam_run.decoding.scores[0],
                                                  run.decoding.scores[0])
            st.metric("sum of log P", f"{beam_run.decoding.scores[0]:.4f}", delta=change,
                      delta_color=colour,
                      delta_arrow="off" if change == "same" else "auto",
                      delta_description="vs greedy")
        if beam_run.translation == run.translation:
            st.caption("Here both find the same translation.")

        tree = views.beam_tree(run, K, id_to_tokens=tokenizer.convert_ids_to_tokens,
                               search=lambda _: beam_run)
        widgets.view_chart(tree, "decoding-beam-tree",
                           caption="Squares are finished hypotheses (they produced </s>); hover a "
                                   "node for its token and cumulative log-probability. Finished "
                                   "hypotheses are carried along unchanged, not drawn again.")

if cache_tab.open:
    with cache_tab:
        kv_cache_view.show(sel, run)
