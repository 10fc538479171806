"""The exercises on the model's input: tokens, the pieces of a word, the embedding's scale, the
positional encoding, and the size of one head (d_k)."""

from __future__ import annotations

import math
import re

import numpy as np

from transformer_viz.plots.embeddings import scaling_figure
from transformer_viz.views.attention import attention
from transformer_viz.views.inputs import embeddings, positional
from transformer_viz.views.practice.base import (
    Context, Exercise, Posed, answer_figure, label, shown, traced)
from transformer_viz.views.practice.checks import number_answer, words_answer
from transformer_viz.views.spec import FigureSpec


def pose_tokens(ctx: Context) -> Posed:
    run = ctx.run
    S = len(run.src_ids)
    pieces = " · ".join(shown(t) for t in run.src_tokens)
    figure = answer_figure(embeddings(run, "rows"), f"Answer: S = {S} rows, one per token",
                           rows=(S - 1, S - 1))
    return Posed(
        f"Your sentence “{run.source_text}” goes into the encoder as token IDs. How many tokens "
        "does it become, counting the end-of-sentence token </s>?",
        number_answer(S, exact=True),
        ("The tokenizer cuts the text into pieces from its vocabulary: frequent words stay "
         "whole, rare ones become several pieces, and punctuation is a piece of its own.",
         "The encoder's input always ends with </s>: count it too. The Tokens & embeddings page "
         "lists the pieces with their IDs."),
        f"S = {S}: {pieces}. The embedding matrix has one row per token (framed: </s>).",
        figure)


def word_pieces(text: str, tokenizer) -> list[tuple[str, list[int]]]:
    """Each word of ``text`` (a run of letters or digits) with the indices of the tokens that
    cover it."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = []
    for start, end in encoded["offset_mapping"]:
        while start < end and text[start].isspace():  # a piece's span may hold the space before it
            start += 1
        spans.append((start, end))
    return [(m.group(0), [k for k, (a, b) in enumerate(spans) if a < m.end() and b > m.start()])
            for m in re.finditer(r"\w+", text)]


def pose_pieces(ctx: Context) -> Posed:
    run = ctx.run
    words = word_pieces(run.source_text, ctx.checkpoint.tokenizer)
    split = [(w, ks) for w, ks in words if len(ks) > 1]
    S = len(run.src_ids)
    if split:
        word, ks = split[0]
        kept = [k for k in ks if k < S]
        rows = (min(kept), max(kept)) if kept else None
        parts = "; ".join(f"“{w}” = " + " + ".join(shown(run.src_tokens[k]) for k in ks if k < S)
                          for w, ks in split)
        solution = f"Split into several pieces: {parts}."
        note = f"Answer: “{label(word)}” is {len(ks)} pieces (framed)"
        shown_answer = ", ".join(f"“{w}”" for w, _ in split)
    else:
        rows = None
        solution = "Every word of this sentence is one piece of the vocabulary: the answer is none."
        note, shown_answer = "Answer: none, every word is one token", "none"
    return Posed(
        "Which word of your sentence does the tokenizer cut into more than one piece? Type one "
        "such word (or “none” if every word stays whole).",
        words_answer([w for w, _ in split], shown_answer),
        ("A piece that starts a word carries the word-start mark ␣; a piece without it continues "
         "the word before it.",
         "Look for a token without ␣ right after one with it: the two belong to one word. Long "
         "compounds, rare words and inflected forms are split most often."),
        solution,
        answer_figure(embeddings(run, "rows"), note, rows=rows))


def pose_scale(ctx: Context) -> Posed:
    run, cfg = ctx.run, ctx.config
    token_id = run.src_ids[0]
    raw = ctx.checkpoint.model.src_embed.weight[token_id].detach().double().numpy()
    scaled = traced(ctx, "src.embedding")[0].astype(np.float64)  # (d_model,), the first token's row
    factor = float(np.linalg.norm(scaled) / np.linalg.norm(raw))  # the live ratio, not the formula
    # An imported model may leave its embeddings unscaled (ModelConfig.scale_embedding): factor 1.
    paper = abs(factor - math.sqrt(cfg.d_model)) < 1e-3 * factor
    formula = f"Factor = √{cfg.d_model} = " if paper else "This model does not scale them: factor "
    spec = FigureSpec(scaling_figure, (raw, scaled, run.src_tokens[0], cfg.d_model), {},
                      {"raw": raw, "scaled": scaled})
    return Posed(
        "Before the positional encoding is added, every embedding row E[id] is multiplied by one "
        "constant factor. What is that factor for this model? (2 decimals)",
        number_answer(factor),
        ("The paper: “In the embedding layers, we multiply those weights by √d_model.”",
         f"d_model, the width of every vector in the model, is {cfg.d_model} here."),
        f"{formula}{factor:.4f}: the traced row of {shown(run.src_tokens[0])} is {factor:.4f} "
        f"times its row of E.",
        answer_figure(spec, f"Answer: × {factor:.2f}"))


def pose_positional(ctx: Context) -> Posed:
    run, cfg = ctx.run, ctx.config
    S = len(run.src_ids)
    pos, dim = min(3, S - 1), 2 if cfg.d_model > 2 else 0
    value = float(run.trace["src.positional"].numpy()[pos, dim])  # (S, d_model): no batch axis
    angle = pos / cfg.pe_base ** (dim / cfg.d_model)
    spec = positional(run, "matrix", length=max(S, 8), interleaved=True)
    answer = number_answer(value)
    return Posed(
        f"The positional encoding added at position pos = {pos} (the token "
        f"{shown(run.src_tokens[pos])}), dimension {dim} (2i = {dim}): what is PE({pos}, {dim})? "
        "(2 decimals)",
        answer,
        ("PE(pos, 2i) = sin(pos / base^(2i/d_model)) and PE(pos, 2i+1) = cos(pos / "
         "base^(2i/d_model)).",
         f"Here base = {cfg.pe_base:g} and d_model = {cfg.d_model}: the angle is {pos} / "
         f"{cfg.pe_base:g}^({dim}/{cfg.d_model}) = {angle:.4f} radians (not degrees)."),
        f"PE({pos}, {dim}) = sin({angle:.4f}) = {value:.4f}.",
        answer_figure(spec, f"Answer: PE({pos}, {dim}) = {answer.shown} (framed)", rows=(pos, pos),
                      cols=(dim, dim)))


def pose_d_k(ctx: Context) -> Posed:
    cfg = ctx.config
    d_k = int(ctx.run.trace[f"encoder.{ctx.layer}.self_attn.q"].shape[-1])  # (B, h, S, d_k)
    spec = attention(ctx.run, ctx.layer, ctx.head, "encoder", "q")
    return Posed(
        "Each of the h heads of a layer computes its queries, keys and values in a smaller space "
        "of d_k numbers. What is d_k for this model?",
        number_answer(d_k, exact=True),
        ("The h heads split d_model between them, so that all heads together cost about what one "
         "head of full width would.",
         f"d_k = d_model / h, and here d_model = {cfg.d_model}, h = {cfg.h}."),
        f"d_k = {cfg.d_model} / {cfg.h} = {d_k}: each head's Q has {d_k} columns.",
        answer_figure(spec, f"Answer: d_k = {d_k} columns"))


INPUT_EXERCISES = (
    Exercise("tokens", "How many tokens?", "tokens", ("token", "</s>", "S, T"), pose_tokens),
    Exercise("pieces", "A word in pieces", "tokens", ("token", "subword", "word start ␣"),
             pose_pieces),
    Exercise("scale", "The embedding's factor", "tokens", ("embedding", "d_model"), pose_scale),
    Exercise("positional", "A positional encoding by hand", "positional",
             ("positional encoding", "d_model"), pose_positional),
    Exercise("d_k", "The size of a head", "attention",
             ("head", "d_k", "d_model", "query, key, value"), pose_d_k),
)
