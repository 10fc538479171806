"""The exercises on the decoder's output: the cross-attention's shape and where it looks, the output
distribution, and decoding at temperature 0."""

from __future__ import annotations

from transformer_viz.views.attention import attention, heads
from transformer_viz.views.decoding import decoding_step
from transformer_viz.views.practice.base import (
    Context, Exercise, Posed, answer_figure, attention_row, label, shown, traced)
from transformer_viz.views.practice.checks import (number_answer, sentence_answer, shape_answer,
                                                   token_answer)


def pose_cross_shape(ctx: Context) -> Posed:
    run, L = ctx.run, ctx.layer
    shape = tuple(ctx.run.trace[f"decoder.{L}.cross_attn.weights"].shape[1:])  # (h, T, S)
    h, T, S = shape
    return Posed(
        "Cross-attention: the decoder's positions ask, the encoder's answer. What is the shape "
        "of one cross-attention layer's weights for your sentence, written (h, T, S)?",
        shape_answer(shape),
        ("h heads, each with one row per decoder position (the queries) and one column per source "
         "token (the keys).",
         "S counts the source tokens with </s>; T the decoder's input: <s> and the tokens "
         f"written. The model has h = {h}."),
        f"(h, T, S) = {shape}: {h} heads, T = {T} decoder positions, S = {S} source tokens; with "
        f"the batch axis in front, (1, {h}, {T}, {S}). Not T × T: the keys are the source's.",
        answer_figure(heads(run, L, "cross", selected=ctx.head),
                      f"Answer: (h, T, S) = ({h}, {T}, {S})"))


def pose_cross_look(ctx: Context) -> Posed:
    run, L, H = ctx.run, ctx.layer, ctx.head
    t, row, best = attention_row(ctx, f"decoder.{L}.cross_attn.weights", len(run.tgt_ids))  # (S,)
    j = best[0]
    src, written = run.src_tokens, run.predicted_ids[t]
    writes = shown(ctx.checkpoint.tokenizer.convert_ids_to_tokens([written])[0])
    return Posed(
        f"In cross-attention, decoder layer {L}, head {H}: decoder position {t} reads "
        f"{shown(run.tgt_tokens[t])} and writes {writes}. Which source token does it weigh most? "
        "Type the token.",
        token_answer([src[k] for k in best], shown(src[j])),
        (f"Rows are decoder positions, columns source tokens: read row {t} of cross-attention, "
         f"layer {L}, head {H} on the Decoder page.",
         f"Its {len(src)} weights sum to 1 and run from {row.min():.2f} to {row.max():.2f}."),
        f"Position {t} gives {row[j]:.3f} of its attention to {shown(src[j])} (source position "
        f"{j}).",
        answer_figure(attention(run, L, H, "cross", "weights"),
                      f"Answer: {label(src[j])} ({row[j]:.2f}, framed)", rows=(t, t), cols=(j, j)))


def _first_step(ctx: Context):
    """The first greedy step's candidates as a figure spec, and the written token's index among
    them."""
    names = ctx.checkpoint.tokenizer.convert_ids_to_tokens
    spec = decoding_step(ctx.run, 1, "topk", id_to_tokens=names)
    chosen = spec.kwargs.get("chosen")
    return spec, ({"rows": (chosen, chosen)} if chosen is not None else {})


def pose_output(ctx: Context) -> Posed:
    run = ctx.run
    written = run.predicted_ids[0]
    token = ctx.checkpoint.tokenizer.convert_ids_to_tokens([written])[0]
    p = float(traced(ctx, "probs")[0, written])  # (T, V): position 0, the token written first
    spec, cell = _first_step(ctx)
    answer = number_answer(p)
    return Posed(
        f"At decoder position 0 (its input is {shown(run.tgt_tokens[0])}), the model writes "
        f"{shown(token)} first. What probability does the output softmax give that token? (2 "
        "decimals)",
        answer,
        (f"The output is softmax(logits) over the whole vocabulary of V = {ctx.config.vocab_size} "
         "tokens; the logits are the decoder's last vector times Eᵀ.",
         "Greedy decoding writes the most probable token, so it is the longest bar at step 1 on "
         "the Decoding page."),
        f"p({shown(token)}) = {p:.4f}.",
        answer_figure(spec, f"Answer: p = {answer.shown} (framed)", **cell))


def pose_temperature(ctx: Context) -> Posed:
    run = ctx.run
    spec, cell = _first_step(ctx)
    return Posed(
        "Sampling divides the logits by a temperature τ before the softmax. What does the model "
        "write for your sentence at temperature 0? Type the whole translation.",
        sentence_answer(run.translation),
        ("softmax(z / τ): a small τ stretches the gaps between the logits, so the most probable "
         "token takes more and more of the probability.",
         "As τ → 0 sampling always picks the most probable token: that is greedy decoding, the "
         "translation the app shows on every page."),
        f"Temperature 0 is greedy decoding: “{run.translation}”.",
        answer_figure(spec, "Answer: τ → 0 always takes the top token (framed), step after step",
                      **cell))


OUTPUT_EXERCISES = (
    Exercise("cross_shape", "The cross-attention's shape", "decoder",
             ("cross-attention", "S, T", "head"), pose_cross_shape),
    Exercise("cross_look", "Where does the decoder look?", "decoder",
             ("cross-attention", "attention weight", "<s>"), pose_cross_look),
    Exercise("output", "The output distribution", "decoder",
             ("logits", "softmax", "greedy decoding"), pose_output),
    Exercise("temperature", "Temperature 0", "decoding",
             ("temperature", "greedy decoding", "logits"), pose_temperature),
)
