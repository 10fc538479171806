"""Before the Transformer: RNNs — GRU encoder–decoders without and with attention on the sentence:
hidden states, the context vector as the only bridge, the decoder unrolled, alignment, sequential
time, BLEU by length."""

import streamlit as st

from transformer_viz.app import about, frame, loaders, rnn_view, steps, widgets
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import attention_map
from transformer_viz.plots.rnn import context_figure, hidden_states_figure
from transformer_viz.text.tokenizer import InputError

EXAMPLE = "Komm her bitte."

ctx = frame.page_context(__file__)
sel, _ = frame.page_header(
    ctx,
    "Before the Transformer, translation models were **recurrent**: an encoder reads the source "
    "one token at a time, updating a hidden state; a decoder writes the translation one token at a "
    "time from that state. Without attention the encoder's **last state c is the only bridge** "
    "between the two: one fixed-size vector for the whole sentence. Attention (Bahdanau et al., "
    "2015) lets every decoder step look back at all encoder states; the Transformer then dropped "
    "the recurrence, and with it the S + T steps that must run one after another.",
    r"\begin{gathered}H_s = \mathrm{GRU}(E[x_s], H_{s-1}),\quad c = H_S,\\ s_t = "
    r"\mathrm{GRU}([E[y_{t-1}];\, c_t], s_{t-1}),\quad c_t = \begin{cases} c & \text{no attention} "
    r"\\ \sum_s \alpha_{ts} H_s & \text{attention}\end{cases}\end{gathered}",
    run=False)
names = about.rnn_checkpoints("de", "en")
if set(names) != {"plain", "attention"}:
    st.warning("This page needs the two recurrent de→en checkpoints (`checkpoints/rnn-de-en` and "
               "`checkpoints/rnn-attn-de-en`), which were not found.")
    st.stop()
sentence = sel.sentence
if (sel.src_lang, sel.tgt_lang) != ("de", "en"):
    st.info("The recurrent models translate German → English only; the sidebar's direction is "
            f"{sel.direction}, so this page runs the German example “{EXAMPLE}”.")
    sentence = EXAMPLE
transformer = about.transformer_for("de", "en")
try:
    plain, attn = (loaders.get_rnn_run(names[kind], sentence) for kind in ("plain", "attention"))
    ref = loaders.get_translation(transformer, sentence) if transformer else None
# refused input, or a checkpoint that cannot be loaded: say why
except (InputError, CheckpointError) as exc:
    st.warning(widgets.escape_markdown(str(exc)))
    st.stop()

runs = (("RNN, no attention", plain), ("RNN + attention", attn), ("Transformer", ref))
for column, (label, run) in zip(st.columns(3), runs):
    with column:
        text = run.translation or "(empty)" if run else "(no de→en Transformer found)"
        widgets.show_user_text(label, text)
src_labels = token_labels(plain.src_tokens)
S, d = len(src_labels), plain.config.d_hidden

encoder_tab, decoder_tab, attention_tab, steps_tab, length_tab = steps.tabs(ctx, [
    "1 · The encoder reads", "2 · The decoder writes", "3 · Attention", "4 · Steps and time",
    "5 · The bottleneck, measured"], key="rnn_step")

if encoder_tab.open:
    with encoder_tab:
        # (S, d_hidden)
        states = loaders.rnn_trace(names["plain"], sentence)["rnn.encoder.hidden"][0].numpy()
        fig = widgets.cached_figure(hidden_states_figure, states, src_labels, highlight=S - 1,
                                    title=f"Encoder states H_1 … H_{S}: one row per token read "
                                          f"(S = {S}, d = {d})")
        widgets.chart(fig, widgets.token_frame(states, plain.src_tokens), "rnn-encoder-states",
                      caption="Each row is computed from the row above and the next token: step s "
                              "cannot start before step s − 1 ends. The outlined last row is the "
                              "context vector c.")
        # (d_hidden,)
        context = loaders.rnn_trace(names["plain"], sentence)["rnn.context"][0].numpy()
        fig = widgets.cached_figure(context_figure, context,
                                    title=f"c: {d} numbers, the only bridge to the decoder")
        widgets.chart(fig, {"unit": list(range(d)), "c": context}, "rnn-context",
                      caption="Without attention the decoder sees the source only through these "
                              "numbers, however long the sentence (a test perturbs every other "
                              "encoder state: nothing changes).")

if decoder_tab.open:
    with decoder_tab:
        st.markdown("The decoder writes one token per step, each from the state left by the step "
                    "before (greedy: the most probable token).")
        rnn_view.unrolled(plain, "RNN, no attention: the token chosen at each step and its "
                                 "probability", "rnn-unrolled")
        rnn_view.unrolled(attn, "RNN + attention", "rnn-attn-unrolled")
        # (T, d_hidden)
        hidden = loaders.rnn_trace(names["plain"], sentence)["rnn.decoder.hidden"][0].numpy()
        fig = widgets.cached_figure(hidden_states_figure, hidden, token_labels(plain.tgt_tokens),
                                    title="Decoder states s_1 … s_T (no attention), one row "
                                          "per step")
        widgets.chart(fig, widgets.token_frame(hidden, plain.tgt_tokens), "rnn-decoder-states")

if attention_tab.open:
    with attention_tab:
        left, right = st.columns(2)
        with left:
            # (T, S)
            weights = loaders.rnn_trace(names["attention"], sentence)["rnn.attn.weights"][0].numpy()
            rows = token_labels(attn.tgt_tokens)
            fig = widgets.cached_figure(attention_map, weights, src_labels, rows,
                                        x_title="source (key)", y_title="decoder step (query)",
                                        title="RNN + attention: α (additive)")
            widgets.chart(fig, widgets.long_form(rows, src_labels, {"weight": weights}),
                          "rnn-alignment",
                          caption="Row t: how step t weighs the encoder states; each row sums "
                                  "to 1.")
        if ref is not None:
            with right:
                # the one step that shows it
                N, trace = ref.config.N, loaders.get_run(transformer, sentence).trace
                cross = trace[f"decoder.{N - 1}.cross_attn.weights"][0].mean(0).numpy()  # (T, S)
                rows = token_labels(ref.tgt_tokens)
                fig = widgets.cached_figure(attention_map, cross, token_labels(ref.src_tokens),
                                            rows, x_title="source (key)",
                                            y_title="decoder position (query)",
                                            title="Transformer: cross-attention, last layer "
                                                  f"({N - 1}), mean of heads")
                widgets.chart(fig, widgets.long_form(rows, token_labels(ref.src_tokens),
                                                     {"weight": cross}),
                              "rnn-transformer-cross",
                              caption=f"The {ref.config.h} heads' weights averaged.")


if steps_tab.open:
    with steps_tab:
        rnn_view.steps_and_time(plain, attn, ref, names, transformer, S)

if length_tab.open:
    with length_tab:
        rnn_view.bleu_by_length(names, transformer)
