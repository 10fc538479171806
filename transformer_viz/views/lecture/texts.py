"""The live text of each lecture step: two to four sentences, a pure function of the run
(:class:`Context`) that fills in the run's own numbers, so what the lecturer reads out matches the
figure beside it."""

from __future__ import annotations

import math

import numpy as np

from transformer_viz.plots import lecture as lecture_plots
from transformer_viz.plots.common import token_text
from transformer_viz.training.schedule import learning_rate
from transformer_viz.views.lecture.context import (
    Context, detr_queries, encoder_weights, head_drops, lookup_weights, padded_length, traced)
from transformer_viz.views.lecture.figures import HEADS_SHOWN
from transformer_viz.views.lecture.why import lecture_pair


def word(token: str) -> str:
    """A token as a reader says it: without the word-start mark ('▁Hund' -> 'Hund')."""
    return str(token).replace("▁", "").strip() or str(token)


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


FOCUS_WORDS = ("they", "it", "sie", "es", "er")  # a pronoun: what does it attend to?


def focus_query(tokens: list[str]) -> int | None:
    """The position of the first pronoun of FOCUS_WORDS in ``tokens``, or None."""
    lowered = [word(t).lower() for t in tokens]
    return next((i for i, t in enumerate(lowered) if t in FOCUS_WORDS), None)


def strongest_link(weights, self_attention: bool,
                   query: int | None = None) -> tuple[int, int, float]:
    """(query, key, weight) of the largest attention weight, another token than itself in
    self-attention; for the given query only when one is named. weights (L_q, L_k)."""
    w = np.array(weights, dtype=np.float64)
    if self_attention:
        np.fill_diagonal(w, -1.0)
    if query is not None:
        return query, int(w[query].argmax()), float(w[query].max())
    i, j = np.unravel_index(int(w.argmax()), w.shape)
    return int(i), int(j), float(w[i, j])


def text_rnn(ctx: Context) -> str:
    run = ctx.run
    S = len(run.src_tokens)
    return (f"An RNN encoder reads the {S} source tokens one by one, and its last state is the "
            "only thing the decoder gets: one context vector, of the same size whether the "
            f"sentence has {S} tokens or 40. The decoder must write all {len(run.tgt_tokens)} "
            f"tokens of \"{run.translation}\" (with </s>) from it. Attention instead lets every "
            f"output step look back at all {S} encoder states.")


def text_lookup(ctx: Context) -> str:
    dot, scaled, _ = lookup_weights(ctx).values()  # q·k, q·k/√d_k, qᵀGk
    keys = [word(t) for t in ctx.run.src_tokens[: len(dot)]]
    S = len(ctx.run.src_tokens)
    against = (f"the first {len(dot)} of its {S} keys, the softmax over these alone" if len(dot) < S
               else f"its {S} keys")
    return ("A dictionary returns the value whose key equals the query; attention returns a blend "
            f"of all values. Query \"{word(ctx.run.src_tokens[0])}\" (encoder layer {ctx.layer}, "
            f"head {ctx.head}) against {against}: with the plain dot product "
            f"\"{keys[int(dot.argmax())]}\" gets {pct(dot.max())}, "
            f"with the scaled dot product (÷√{ctx.run.config.d_k}) "
            f"\"{keys[int(scaled.argmax())]}\" gets {pct(scaled.max())}. "
            "Scaling flattens the softmax.")


def text_tokens(ctx: Context) -> str:
    run, length = ctx.run, padded_length(ctx)
    shown = ", ".join(f"\"{token_text(t)}\" = {i}"
                      for t, i in list(zip(run.src_tokens, run.src_ids))[:4])
    return (f"The tokenizer cuts \"{run.source_text}\" into {len(run.src_ids)} tokens (subwords, "
            f"ending in </s>) and maps each to an ID: {shown}, …. In a batch every sentence is "
            f"padded to one length; here to {length}, {length - len(run.src_ids)} <pad> positions "
            "that the padding mask hides from attention.")


def text_embeddings(ctx: Context) -> str:
    run, d = ctx.run, ctx.run.config.d_model
    scaled = traced(ctx, "src.embedding")  # (S, d_model)
    norms = np.linalg.norm(scaled, axis=-1)
    return (f"Each ID selects one row of the {run.config.vocab_size} × {d} embedding matrix E. The "
            f"row is multiplied by √d_model = √{d} = {math.sqrt(d):.1f}, so that it is not drowned "
            "by the positional encoding added next: here the scaled rows have lengths from "
            f"{norms.min():.1f} to {norms.max():.1f}, the positional vectors "
            f"{math.sqrt(d / 2):.1f}.")


def text_positional(ctx: Context) -> str:
    d, S = ctx.run.config.d_model, len(ctx.run.src_ids)
    longest = 2 * math.pi * ctx.run.config.pe_base ** ((d - 2) / d)
    return ("Attention itself ignores word order, so each position p gets a fixed vector PE(p) of "
            f"{d} numbers: sines and cosines whose wavelengths grow from 2π ≈ 6.3 to "
            f"{longest:,.0f} positions (base {ctx.run.config.pe_base:g}). The figure shows the {S} "
            "positions of this sentence: the first dimensions change fast from word to word, the "
            "last hardly at all.")


def text_qkv(ctx: Context) -> str:
    run, cfg = ctx.run, ctx.run.config
    S = len(run.src_ids)
    return ("Every token's vector x is projected three times: a query q (what it looks for), a "
            "key k (what it offers) and a value v (what it passes on). With d_model = "
            f"{cfg.d_model} and h = {cfg.h} heads, each head has d_k = {cfg.d_k} dimensions, so Q, "
            f"K and V of head {ctx.head} are {S} × {cfg.d_k} matrices for this sentence.")


def text_scores(ctx: Context) -> str:
    run = ctx.run
    p = f"decoder.{ctx.layer}.self_attn"
    scores, weights = traced(ctx, f"{p}.scores")[ctx.head], traced(ctx, f"{p}.weights")[ctx.head]
    T = len(run.tgt_tokens)
    masked = T * (T - 1) // 2
    i = min(2, T - 1)
    j = int(weights[i].argmax())
    return (f"Each query is compared with every key, s = q·k/√{run.config.d_k}. In the decoder the "
            f"mask sets the {masked} scores of later positions to −∞ (grey), and the softmax along "
            f"each query's row turns e^−∞ into a weight of exactly 0. Row {i} "
            f"(\"{word(run.tgt_tokens[i])}\") has raw scores from {scores[i, : i + 1].min():.2f} "
            f"to {scores[i, : i + 1].max():.2f}; after the softmax \"{word(run.tgt_tokens[j])}\" "
            f"gets {pct(weights[i, j])}.")


def text_multihead(ctx: Context) -> str:
    run, cfg = ctx.run, ctx.run.config
    weights = encoder_weights(ctx)  # (h, S, S)
    tokens = run.src_tokens
    q = focus_query(tokens)
    qi, kj, w = strongest_link(weights[ctx.head], True, q)
    best_head = int(np.argmax([weights[h][qi, [k for k in range(len(tokens)) if k != qi]].max()
                               for h in range(cfg.h)]))
    _, bk, bw = strongest_link(weights[best_head], True, qi)
    return (f"{cfg.h} heads of d_k = {cfg.d_k} each look at the sentence in their own way; their "
            f"outputs are concatenated back to {cfg.d_model} dimensions and mixed by W_O. In layer "
            f"{ctx.layer}, head {ctx.head}, \"{word(tokens[qi])}\" gives {pct(w)} of its attention "
            f"to \"{word(tokens[kj])}\"; the head where \"{word(tokens[qi])}\" looks hardest at "
            f"another token is head {best_head} ({pct(bw)} to \"{word(tokens[bk])}\").")


def text_add_norm(ctx: Context) -> str:
    cfg = ctx.run.config
    p = f"encoder.{ctx.layer}"
    var = traced(ctx, f"{p}.norm1.var")
    hidden = traced(ctx, f"{p}.ffn.hidden")
    zero = float((hidden == 0).mean())
    return ("Around each sublayer: x + Sublayer(x), then LayerNorm to mean 0 and variance 1 per "
            f"position (here the variance before it ranges from {var.min():.2f} to "
            f"{var.max():.2f}). The feed-forward network widens each position to d_ff = {cfg.d_ff} "
            f"with a ReLU: {pct(zero)} of those units are exactly 0 for this sentence. Dropout "
            f"({cfg.dropout:g}) acts in training only.")


def text_encoder_stack(ctx: Context) -> str:
    cfg, S = ctx.run.config, len(ctx.run.src_ids)
    out = traced(ctx, "encoder.out")
    return (f"The encoder repeats that layer N = {cfg.N} times, each with its own weights; the "
            f"shape stays ({S}, {cfg.d_model}) all the way. Its output, the memory M with rows of "
            f"mean length {np.linalg.norm(out, axis=-1).mean():.1f}, is computed once and read by "
            "every decoder layer.")


def text_masked_self(ctx: Context) -> str:
    run = ctx.run
    T = len(run.tgt_tokens)
    weights = traced(ctx, f"decoder.{ctx.layer}.self_attn.weights")[ctx.head]
    future = float(np.triu(weights, 1).sum())
    return (f"The decoder's input is <s> followed by the translation so far ({T} positions here). "
            "Its self-attention is masked: position t sees only positions ≤ t, so training on the "
            f"whole target at once cannot peek at the next word. In layer {ctx.layer}, head "
            f"{ctx.head} the weight on later positions totals exactly {future:g}, "
            "as the mask demands.")


def text_cross(ctx: Context) -> str:
    run, cfg = ctx.run, ctx.run.config
    weights = traced(ctx, f"decoder.{ctx.layer}.cross_attn.weights")[ctx.head]  # (T, S)
    T, S = weights.shape
    i, j, w = strongest_link(weights[1:], False)
    return ("Cross-attention takes its queries from the decoder and its keys and values from the "
            f"encoder output: the score tensor is (B, h, T, S) = (1, {cfg.h}, {T}, {S}). In layer "
            f"{ctx.layer}, head {ctx.head}, the decoder position reading "
            f"\"{word(run.tgt_tokens[i + 1])}\" gives {pct(w)} of its attention to the source "
            f"token \"{word(run.src_tokens[j])}\".")


def text_output(ctx: Context) -> str:
    run = ctx.run
    probs = traced(ctx, "probs")  # (T, V)
    chosen = run.predicted_ids
    p = probs[np.arange(len(chosen)), chosen]
    first = ctx.id_to_token([chosen[0]])[0]
    return ("The last decoder layer's vector at each position is multiplied by Eᵀ (the embedding "
            f"matrix, tied), giving {run.config.vocab_size} logits, and a softmax turns them into "
            f"probabilities. At position 1 the most probable token is \"{word(first)}\" with "
            f"{pct(p[0])}; over the whole translation the chosen tokens had from {pct(p.min())} to "
            f"{pct(p.max())}.")


def text_training(ctx: Context) -> str:
    training = ctx.metadata.get("training") or {}
    history = ctx.metadata.get("history") or []
    warmup, factor = int(training.get("warmup", 4000)), float(training.get("lr_factor", 1.0))
    d = ctx.run.config.d_model
    # the formula at s = w: where the figure's curve peaks
    peak = learning_rate(warmup, d, warmup, factor)
    steps = training.get("steps") or (history[-1].get("step") if history else None)
    smoothing = training.get("label_smoothing", 0.1)
    last = (" The last recorded epoch ended with a validation loss of "
            f"{history[-1]['val_loss']:.2f}."
            if history and "val_loss" in history[-1] else "")
    return (f"In training the decoder gets the correct target shifted right (<s> y₁ … yₙ₋₁) and "
            f"must predict y₁ … yₙ at every position at once: teacher forcing. The loss is the "
            f"cross-entropy with label smoothing ε = {smoothing:g}; the learning rate rises for "
            f"{warmup} warm-up steps to its peak f · d_model^−0.5 · w^−0.5 = {peak:.1e} "
            f"(d_model = {d}; w = {warmup}; "
            f"f = {factor:g}, this checkpoint's), then decays as 1/√step"
            + (f" (this model: {steps:,} steps)." if steps else ".") + last)


def text_inference(ctx: Context) -> str:
    run = ctx.run
    t = min(max(ctx.position, 1), len(run.decoding.steps))
    step = run.decoding.steps[t - 1]
    top = ctx.id_to_token(step.top_ids[0][:2])
    probs = step.top_probs[0]
    return ("At inference there is no target: the decoder writes one token, appends it to its "
            f"input and runs again, until </s>. At step {t} greedy decoding takes "
            f"\"{word(top[0])}\" ({pct(probs[0])}); the runner-up was "
            f"\"{word(top[1]) if len(top) > 1 else '—'}\" "
            f"({pct(probs[1]) if len(probs) > 1 else '—'}). "
            + (f"Beam search (the figure, K = {beam_width(ctx.beam_run)}) keeps the K best partial "
               f"translations instead of one and writes \"{ctx.beam_run.translation}\". "
               if ctx.beam_run is not None else
               "Beam search keeps the K best partial translations instead of one. ")
            + "Force another candidate below to see where the translation goes.")


def beam_width(run) -> int:
    """The beams a beam-search run kept at its widest step."""
    return max((len(step.parents[0]) for step in run.decoding.steps), default=1)


def text_heads(ctx: Context) -> str:
    numbers = head_drops(ctx)
    order = np.argsort(-numbers.drops)
    first, second = numbers.heads[order[0]], numbers.heads[order[1]]
    small = int((np.abs(numbers.drops) < 0.05).sum())
    n = len(numbers.drops)
    bars = (f"one of the {n} heads" if n <= HEADS_SHOWN
            else f"one of the {HEADS_SHOWN} of {n} heads that matter most,")
    return (f"Each bar is {bars} switched off alone, the translation fed back in as in training. "
            f"Without {first} ({first.label}) its log-probability falls by "
            f"{numbers.drops[order[0]]:.2f} nats, without {second} by "
            f"{numbers.drops[order[1]]:.2f}; "
            f"{small} heads change it by less than 0.05. "
            f"A head's attention map alone does not say which of these it is.")


def text_why(ctx: Context) -> str:
    from transformer_viz.interpret.patching import summary_text

    pair = lecture_pair(ctx)
    p = pair.patching
    if p is None:
        return ("Activation patching needs two sentences one word apart that translate "
                "differently. No single token of this sentence, replaced by another of its tokens, "
                "changes a word of the translation here: the bars show what switching heads "
                "off costs instead.")
    X, Y = word(p.clean_token), word(p.corrupted_token)
    if pair.preset is not None:
        opening = (f"The lecture's pair “{pair.clean}” and “{pair.corrupted}” differ in one word, "
                   f"and at position {p.position} the clean run writes “{X}” where the corrupted "
                   f"run prefers “{Y}”.")
    else:
        s = p.changed[0]
        opening = (f"This model has no pair of the lecture's, so here “{word(p.src_tokens[s])}” is "
                   f"replaced by “{word(p.corrupted_tokens[s])}”: at position {p.position} the "
                   f"clean run writes “{X}”, the corrupted run prefers “{Y}”.")
    return (f"{opening} Copying one activation of the clean run into the corrupted run shows how "
            f"much of that preference it carries. {summary_text(p)}")


def text_decoder_only(ctx: Context) -> str:
    cfg = ctx.run.config
    return ("A decoder-only model (GPT) keeps one stack: no encoder, no cross-attention, one "
            "causal mask. It reads a prompt and samples the next token from softmax(z / T), "
            "appends it and runs again. GPT-3 has a vocabulary of 50,257 tokens, d_model = 12,288, "
            "96 layers of 96 heads (d_k = 128), 2,048 positions and 175 billion parameters; this "
            f"translation model has V = {cfg.vocab_size:,} and d_model = {cfg.d_model}. "
            "Translating with one would mean reading \"source, then target\" as one text: "
            f"{len(ctx.run.src_ids) + len(ctx.run.tgt_ids)} positions here.")


def text_vit(ctx: Context) -> str:
    image, n = lecture_plots.patch_grid(224, 16)
    return ("Attention needs tokens, not words. A Vision Transformer cuts a 224 × 224 image into "
            f"16 × 16 patches: {n} tokens of 16·16·3 = 768 numbers each, projected to d_model, "
            "plus a [CLS] token and positional encodings. Then it is the encoder of this lecture, "
            f"unchanged: {n + 1} tokens instead of {len(ctx.run.src_ids)}.")


def text_detr(ctx: Context) -> str:
    n = detr_queries()
    return ("DETR detects objects with the full encoder–decoder: the encoder reads the image's "
            "feature patches, and the decoder's queries are N learned object queries instead of "
            f"words (100 in the paper; N = {n} in this app's toy DETR, as drawn). Cross-attention "
            "lets each query look at the image; each query then outputs a class and a box, "
            "or ∅ (no object). "
            "Training matches queries to the true objects one to one (Hungarian matching). The toy "
            "DETR does this on 32 × 32 canvases of handwritten digits.")
