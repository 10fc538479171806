"""Before the Transformer: RNNs — GRU encoder–decoders without and with attention on the sentence: hidden states,
the context vector as the only bridge, the decoder unrolled, alignment, sequential time, BLEU by length."""

import streamlit as st

from transformer_viz.app import about, frame, loaders, steps, widgets
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.layers import attention_map
from transformer_viz.plots.rnn import (bucket_bleu_figure, context_figure, hidden_states_figure, steps_figure,
                                       timing_figure, unrolled_figure)
from transformer_viz.text.tokenizer import InputError

EXAMPLE = "Komm her bitte."
LENGTHS = (5, 10, 20, 40, 80)

ctx = frame.page_context(__file__)
sel, _ = frame.page_header(
    ctx,
    "Before the Transformer, translation models were **recurrent**: an encoder reads the source one token at a "
    "time, updating a hidden state; a decoder writes the translation one token at a time from that state. "
    "Without attention the encoder's **last state c is the only bridge** between the two: one fixed-size "
    "vector for the whole sentence. Attention (Bahdanau et al., 2015) lets every decoder step look back at "
    "all encoder states; the Transformer then dropped the recurrence, and with it the S + T steps that "
    "must run one after another.",
    r"\begin{gathered}H_s = \mathrm{GRU}(E[x_s], H_{s-1}),\quad c = H_S,\\ "
    r"s_t = \mathrm{GRU}([E[y_{t-1}];\, c_t], s_{t-1}),\quad "
    r"c_t = \begin{cases} c & \text{no attention} \\ \sum_s \alpha_{ts} H_s & \text{attention}\end{cases}"
    r"\end{gathered}",
    run=False)
names = about.rnn_checkpoints("de", "en")
if set(names) != {"plain", "attention"}:
    st.warning("This page needs the two recurrent de→en checkpoints (`checkpoints/rnn-de-en` and "
               "`checkpoints/rnn-attn-de-en`), which were not found.")
    st.stop()
sentence = sel.sentence
if (sel.src_lang, sel.tgt_lang) != ("de", "en"):
    st.info(f"The recurrent models translate German → English only; the sidebar's direction is {sel.direction}, "
            f"so this page runs the German example “{EXAMPLE}”.")
    sentence = EXAMPLE
transformer = about.transformer_for("de", "en")
try:
    plain, attn = (loaders.get_rnn_run(names[kind], sentence) for kind in ("plain", "attention"))
    ref = loaders.get_translation(transformer, sentence) if transformer else None
except (InputError, CheckpointError) as exc:  # refused input, or a checkpoint that cannot be loaded: say why
    st.warning(widgets.escape_markdown(str(exc)))
    st.stop()

for column, (label, run) in zip(st.columns(3), (("RNN, no attention", plain), ("RNN + attention", attn),
                                                 ("Transformer", ref))):
    with column:
        widgets.show_user_text(label, run.translation or "(empty)" if run else "(no de→en Transformer found)")
src_labels = token_labels(plain.src_tokens)
S, d = len(src_labels), plain.config.d_hidden

encoder_tab, decoder_tab, attention_tab, steps_tab, length_tab = steps.tabs(ctx, [
    "1 · The encoder reads", "2 · The decoder writes", "3 · Attention", "4 · Steps and time",
    "5 · The bottleneck, measured"], key="rnn_step")


def unrolled(run, name: str, key: str) -> None:
    tokens = run.tgt_tokens[1:] + ["</s>"]  # one GreedyStep per written token, </s> included
    probs = [step.chosen_prob[0] for step in run.decoding.steps][: len(tokens)]
    fig = widgets.cached_figure(unrolled_figure, tokens[: len(probs)], probs, title=name)
    widgets.chart(fig, {"step": list(range(1, len(probs) + 1)), "token": tokens[: len(probs)], "p": probs}, key)


if encoder_tab.open:
    with encoder_tab:
        states = loaders.rnn_trace(names["plain"], sentence)["rnn.encoder.hidden"][0].numpy()  # (S, d_hidden)
        fig = widgets.cached_figure(hidden_states_figure, states, src_labels, highlight=S - 1,
                                    title=f"Encoder states H_1 … H_{S}: one row per token read (S = {S}, d = {d})")
        widgets.chart(fig, widgets.token_frame(states, plain.src_tokens), "rnn-encoder-states",
                      caption="Each row is computed from the row above and the next token: step s cannot start "
                              "before step s − 1 ends. The outlined last row is the context vector c.")
        context = loaders.rnn_trace(names["plain"], sentence)["rnn.context"][0].numpy()  # (d_hidden,)
        fig = widgets.cached_figure(context_figure, context, title=f"c: {d} numbers, the only bridge to the decoder")
        widgets.chart(fig, {"unit": list(range(d)), "c": context}, "rnn-context",
                      caption="Without attention the decoder sees the source only through these numbers, however "
                              "long the sentence (a test perturbs every other encoder state: nothing changes).")

if decoder_tab.open:
    with decoder_tab:
        st.markdown("The decoder writes one token per step, each from the state left by the step before "
                    "(greedy: the most probable token).")
        unrolled(plain, "RNN, no attention: the token chosen at each step and its probability", "rnn-unrolled")
        unrolled(attn, "RNN + attention", "rnn-attn-unrolled")
        hidden = loaders.rnn_trace(names["plain"], sentence)["rnn.decoder.hidden"][0].numpy()  # (T, d_hidden)
        fig = widgets.cached_figure(hidden_states_figure, hidden, token_labels(plain.tgt_tokens),
                                    title="Decoder states s_1 … s_T (no attention), one row per step")
        widgets.chart(fig, widgets.token_frame(hidden, plain.tgt_tokens), "rnn-decoder-states")

if attention_tab.open:
    with attention_tab:
        left, right = st.columns(2)
        with left:
            weights = loaders.rnn_trace(names["attention"], sentence)["rnn.attn.weights"][0].numpy()  # (T, S)
            rows = token_labels(attn.tgt_tokens)
            fig = widgets.cached_figure(attention_map, weights, src_labels, rows, x_title="source (key)",
                                        y_title="decoder step (query)", title="RNN + attention: α (additive)")
            widgets.chart(fig, widgets.long_form(rows, src_labels, {"weight": weights}), "rnn-alignment",
                          caption="Row t: how step t weighs the encoder states; each row sums to 1.")
        if ref is not None:
            with right:
                N, trace = ref.config.N, loaders.get_run(transformer, sentence).trace  # the one step that shows it
                cross = trace[f"decoder.{N - 1}.cross_attn.weights"][0].mean(0).numpy()  # (T, S)
                rows = token_labels(ref.tgt_tokens)
                fig = widgets.cached_figure(attention_map, cross, token_labels(ref.src_tokens), rows,
                                            x_title="source (key)", y_title="decoder position (query)",
                                            title=f"Transformer: cross-attention, last layer ({N - 1}), mean of heads")
                widgets.chart(fig, widgets.long_form(rows, token_labels(ref.src_tokens), {"weight": cross}),
                              "rnn-transformer-cross", caption=f"The {ref.config.h} heads' weights averaged.")

if steps_tab.open:
    with steps_tab:
        T, N = len(plain.tgt_ids), ref.config.N if ref else 3
        fig = widgets.cached_figure(steps_figure, S, T, N, title="Steps one after another for this sentence (training)")
        widgets.chart(fig, {"model": ["RNN", "Transformer"], "encoder": [S, N], "decoder": [T, N]}, "rnn-steps",
                      caption=f"RNN: S + T = {S} + {T} = {S + T} steps, each waiting for the one before. Transformer: "
                              f"N = {N} layers per side, whatever S and T, every position at once. When generating, "
                              f"both decoders still write one token per step.")
        limit = min(plain.config.max_len, attn.config.max_len, ref.config.max_len if ref else 10**9)
        lengths = tuple(n for n in LENGTHS if n < limit)
        models = (("RNN", "rnn", names["plain"]), ("RNN + attention", "rnn", names["attention"])) \
            + ((("Transformer", "transformer", transformer),) if transformer else ())
        seconds = loaders.measured_speed(models, lengths)
        fig = widgets.cached_figure(timing_figure, list(lengths), seconds, title="Time per sentence as it grows")
        widgets.chart(fig, {"tokens": list(lengths), **seconds}, "rnn-timing",
                      caption="Measured on this server when the page first ran: one sentence of S tokens read and S "
                              "tokens written, greedy, incremental decoding, one CPU thread, best of 3. Generating, "
                              "every model writes one token per step, and each of the Transformer's steps runs N "
                              "layers over a growing cache: its gain is in training and in reading the source, all "
                              "positions at once (on parallel hardware).")

if length_tab.open:
    with length_tab:
        cards = {"RNN": about.family_metadata("rnn", names["plain"]),
                 "RNN + attention": about.family_metadata("rnn", names["attention"]),
                 "Transformer": about.checkpoint_info(transformer)[1] if transformer else {}}
        found = about.lengths_on_one_split(cards)
        if not found:
            st.info("No model card holds BLEU by length yet (`python -m transformer_viz bleu-by-length --record`).")
        else:
            first = next(iter(found.values()))
            buckets, counts = ([row[key] for row in first["buckets"]] for key in ("bucket", "sentences"))
            bleu = {label: [row["bleu"] for row in entry["buckets"]] for label, entry in found.items()}
            fig = widgets.cached_figure(bucket_bleu_figure, buckets, bleu, counts,
                                        title=f"BLEU by source length, {first['split']}, greedy")
            widgets.chart(fig, {"bucket": buckets, "sentences": counts, **bleu}, "rnn-bleu-by-length",
                          caption="From the model cards (bleu-by-length). Bahdanau et al. (2015), Figure 2: "
                                  "without attention, BLEU falls fastest as sentences grow (legend: the share of "
                                  "the shortest bucket's BLEU kept on the longest).")
