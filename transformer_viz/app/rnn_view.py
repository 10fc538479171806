"""The RNN page's later steps: the sequential steps and the time they take, measured on this server,
and the bottleneck as the model cards measured it (BLEU by source length)."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import about, loaders, widgets
from transformer_viz.plots.rnn import (bucket_bleu_figure, steps_figure, timing_figure,
                                       unrolled_figure)

LENGTHS = (5, 10, 20, 40, 80)


def unrolled(run, name: str, key: str) -> None:
    """The token the decoder chose at each step, and its probability."""
    tokens = run.tgt_tokens[1:] + ["</s>"]  # one GreedyStep per written token, </s> included
    probs = [step.chosen_prob[0] for step in run.decoding.steps][: len(tokens)]
    fig = widgets.cached_figure(unrolled_figure, tokens[: len(probs)], probs, title=name)
    widgets.chart(fig, {"step": list(range(1, len(probs) + 1)), "token": tokens[: len(probs)],
                        "p": probs}, key)


def steps_and_time(plain, attn, ref, names: dict[str, str], transformer: str | None,
                   S: int) -> None:
    """Steps one after another for this sentence, and the time per sentence as it grows."""
    T = len(plain.tgt_ids)
    N = ref.config.N if ref else 3
    fig = widgets.cached_figure(steps_figure, S, T, N,
                                title="Steps one after another for this sentence (training)")
    widgets.chart(fig, {"model": ["RNN", "Transformer"], "encoder": [S, N], "decoder": [T, N]},
                  "rnn-steps",
                  caption=f"RNN: S + T = {S} + {T} = {S + T} steps, each waiting for the one "
                          f"before. Transformer: N = {N} layers per side, whatever S and T, "
                          "every position at once. When generating, both decoders still write "
                          "one token per step.")
    limit = min(plain.config.max_len, attn.config.max_len, ref.config.max_len if ref else 10**9)
    lengths = tuple(n for n in LENGTHS if n < limit)
    models = (("RNN", "rnn", names["plain"]), ("RNN + attention", "rnn", names["attention"]))
    if transformer:
        models += (("Transformer", "transformer", transformer),)
    seconds = loaders.measured_speed(models, lengths)
    fig = widgets.cached_figure(timing_figure, list(lengths), seconds,
                                title="Time per sentence as it grows")
    widgets.chart(fig, {"tokens": list(lengths), **seconds}, "rnn-timing",
                  caption="Measured on this server when the page first ran: one sentence of S "
                          "tokens read and S tokens written, greedy, incremental decoding, one "
                          "CPU thread, best of 3. Generating, every model writes one token per "
                          "step, and each of the Transformer's steps runs N layers over a "
                          "growing cache: its gain is in training and in reading the source, "
                          "all positions at once (on parallel hardware).")


def bleu_by_length(names: dict[str, str], transformer: str | None) -> None:
    """BLEU by source length, from the model cards (bleu-by-length --record)."""
    cards = {"RNN": about.family_metadata("rnn", names["plain"]),
             "RNN + attention": about.family_metadata("rnn", names["attention"]),
             "Transformer": about.checkpoint_info(transformer)[1] if transformer else {}}
    found = about.lengths_on_one_split(cards)
    if not found:
        st.info("No model card holds BLEU by length yet (`python -m transformer_viz "
                "bleu-by-length --record`).")
        return
    first = next(iter(found.values()))
    buckets, counts = ([row[key] for row in first["buckets"]] for key in ("bucket", "sentences"))
    bleu = {label: [row["bleu"] for row in entry["buckets"]] for label, entry in found.items()}
    fig = widgets.cached_figure(bucket_bleu_figure, buckets, bleu, counts,
                                title=f"BLEU by source length, {first['split']}, greedy")
    widgets.chart(fig, {"bucket": buckets, "sentences": counts, **bleu}, "rnn-bleu-by-length",
                  caption="From the model cards (bleu-by-length). Bahdanau et al. (2015), "
                          "Figure 2: without attention, BLEU falls fastest as sentences "
                          "grow (legend: the share of the shortest bucket's BLEU kept on "
                          "the longest).")
