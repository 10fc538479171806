"""The short glossary the exercises share: each exercise names the terms it uses, and the page lists
only those, so that a definition is written once."""

from __future__ import annotations

GLOSSARY: dict[str, str] = {
    "token": "a piece of text the model reads or writes as one unit: a word, part of a word, or "
             "punctuation.",
    "subword": "a piece of a word from the tokenizer's vocabulary (BPE): a rare word is built from"
               " several.",
    "word start ␣": "the mark on a piece that begins a word (▁ in the tokenizer, ␣ in the app); a "
                    "piece without it continues the word before.",
    "</s>": "the end-of-sentence token: the encoder's input always ends with it, and the decoder "
            "writes it to stop.",
    "<s>": "the start token: the decoder's first input, before it has written anything.",
    "S, T": "S: the number of source tokens (with </s>); T: the decoder's positions (<s> and the "
            "tokens written).",
    "embedding": "the learned vector of d_model numbers that a token ID looks up in the matrix E.",
    "d_model": "the width of every vector that flows through the model (embeddings, residual "
               "stream).",
    "positional encoding": "fixed sin/cos waves PE(pos, ·) added to the embeddings, so that the "
                           "model knows each token's place.",
    "head": "one of the h attentions run side by side in a layer, each in its own space of d_k "
            "numbers.",
    "d_k": "the size of one head's queries and keys: d_model / h.",
    "query, key, value": "Q asks, K is matched against the query (scores Q·Kᵀ/√d_k), V is what is "
                         "mixed by the resulting weights.",
    "attention weight": "softmax of one query's scores over the keys: how much of each value it "
                        "takes; a row sums to 1.",
    "softmax": "exp(x_i) / Σ_j exp(x_j): positive numbers that sum to 1.",
    "causal mask": "in the decoder's self-attention, the scores of later positions are set to −∞, "
                   "so a position cannot see the future.",
    "ablation": "switching a part off (here a head's output set to 0 before W_O) to see what it "
                "was for.",
    "log-probability": "log p: the model's log-probability of the whole translation, a sum over "
                       "its tokens.",
    "residual": "x + Sublayer(x): the sublayer's output added to its input.",
    "LayerNorm": "subtract the mean of the d_model numbers, divide by their standard deviation, "
                 "then scale by γ and shift by β.",
    "feed-forward network": "max(0, x W_1 + b_1) W_2 + b_2, the same for every position.",
    "d_ff": "the feed-forward network's inner width (4 · d_model in the paper).",
    "parameter": "one learned number: an entry of a weight matrix or of a bias.",
    "cross-attention": "the decoder's queries (T of them) attending over the encoder's output (S "
                       "keys).",
    "logits": "the decoder's score for every token of the vocabulary, before the softmax.",
    "greedy decoding": "writing the most probable token at every step.",
    "temperature": "τ divides the logits before the softmax: small τ sharpens the distribution, "
                   "large τ flattens it; τ → 0 is greedy.",
}


def terms(names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(term, definition) for each of ``names``, in that order."""
    return [(name, GLOSSARY[name]) for name in names]
