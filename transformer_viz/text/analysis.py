"""The numbers the pages show beside their figures: the softmax, what removing the causal mask
changes (the masking lab's comparison, its table and its statement), the weight on later positions,
how a padded batch is made up, the token IDs of one beam, what the beam tree draws and a greedy
step's candidates (the Decoding page and the notebook API read both). Plain numpy: arrays in,
arrays, tables or text out."""

from __future__ import annotations

import numpy as np

from transformer_viz.core.special_tokens import EOS, PAD, output_ids
from transformer_viz.plots.common import token_text
from transformer_viz.plots.decoding import beam_backtrack

# --- the softmax ----------------------------------------------------------------------------------

def log_softmax(logits) -> np.ndarray:
    """log softmax over the last axis, computed stably in float64."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def softmax(logits) -> np.ndarray:
    """softmax over the last axis, in float64."""
    return np.exp(log_softmax(logits))


# --- beam search ----------------------------------------------------------------------------------

def beam_hypothesis(tokens: list[list[int]], parents: list[list[int]], beam: int, eos_id: int = EOS,
                    pad_id: int = PAD) -> list[int]:
    """The token IDs of one final beam, cut before </s> and without <pad> (as the decoder returns
    them)."""
    return output_ids((tokens[step - 1][k]
                       for step, k in beam_backtrack(tokens, parents, beam)[1:]), eos_id, pad_id)


def beam_tree_data(steps, final_ids: list[int], id_to_tokens) -> dict:
    """What the beam tree draws, from a beam search's per-step records (generation.decoding's steps,
    of one sentence) and the translation it chose (``final_ids``): per step s and beam k, ``text``
    (the token), ``parents``, ``scores`` (cumulative log P) and ``finished``, and ``best_beam``, the
    last step's beam that ends in the chosen translation (None when none does)."""
    tokens = [s.tokens[0] for s in steps]
    parents = [s.parents[0] for s in steps]
    best = next((k for k in range(len(tokens[-1]))
                 if beam_hypothesis(tokens, parents, k) == list(final_ids)),
                None) if tokens else None
    return {"text": [id_to_tokens(row) for row in tokens], "parents": parents,
            "scores": [s.scores[0] for s in steps], "finished": [s.finished[0] for s in steps],
            "best_beam": best}


def step_candidates(step, id_to_tokens) -> dict:
    """One greedy decoding step (a record of generation.decoding, one sentence): its top-k
    candidates as ``tokens``, ``ids`` and ``probs``, the token it wrote (``chosen_id``,
    ``chosen_token``, ``chosen_prob``) and ``chosen``, its index among the candidates (None when it
    is not among them)."""
    ids, chosen_id = list(step.top_ids[0]), step.chosen[0]
    return {"tokens": id_to_tokens(ids), "ids": ids, "probs": step.top_probs[0],
            "chosen_id": chosen_id,
            "chosen_token": id_to_tokens([chosen_id])[0], "chosen_prob": step.chosen_prob[0],
            "chosen": ids.index(chosen_id) if chosen_id in ids else None}


# --- the masking lab ------------------------------------------------------------------------------

def compare_predictions(logits_a, logits_b, expected_ids: list[int]) -> dict[str, np.ndarray]:
    """Per position, how two runs' next-token distributions differ. logits (T, V).

    Returns arrays (T,): argmax and its probability for a and b, each run's probability of the
    expected token, and KL(p_a ‖ p_b) = Σ_v p_a(v) (log p_a(v) − log p_b(v)).
    """
    log_a, log_b = log_softmax(logits_a), log_softmax(logits_b)
    rows = np.arange(log_a.shape[0])
    expected = np.asarray(expected_ids)
    argmax_a, argmax_b = log_a.argmax(-1), log_b.argmax(-1)
    p_a = np.exp(log_a)
    return {
        "argmax_a": argmax_a, "p_argmax_a": p_a[rows, argmax_a],
        "argmax_b": argmax_b, "p_argmax_b": np.exp(log_b[rows, argmax_b]),
        "p_expected_a": p_a[rows, expected], "p_expected_b": np.exp(log_b[rows, expected]),
        "kl": (p_a * (log_a - log_b)).sum(-1),
    }


# The table's columns as headed on the page, with what each holds (shown on hover): the full names
# made nine columns wider than the page at 1280 px. The data and its CSV keep the full names.
PREDICTION_HEADERS = {
    "decoder input": ("input", "the decoder's input token at this position"),
    "expected next": ("expected", "the next token of the translation"),
    "argmax (mask)": ("argmax, mask", "the most probable next token, with the causal mask"),
    "p (mask)": ("p, mask", "its probability, with the causal mask"),
    "argmax (no mask)": ("argmax, no mask", "the most probable next token, without the mask"),
    "p (no mask)": ("p, no mask", "its probability, without the mask"),
    "p(expected), mask": ("p(exp.), mask",
                          "the probability of the expected next token, with the causal mask"),
    "p(expected), no mask": ("p(exp.), no mask",
                             "the probability of the expected next token, without the mask"),
    "KL(mask ‖ no mask)": ("KL",
                           "KL(mask ‖ no mask) between the two next-token distributions, in nats"),
}


def prediction_table(compare: dict, input_tokens: list[str], expected_tokens: list[str],
                     to_tokens) -> dict[str, list]:
    """The table of :func:`compare_predictions`, one row per decoder position: its input token, the
    expected next token, each run's argmax with its probability, each run's probability of the
    expected token, and the KL. ``to_tokens`` turns IDs into tokens; a table shows text as is
    (not escaped), only the word-start mark as in the figures."""
    argmax_a, argmax_b = (to_tokens(compare["argmax_a"].tolist()),
                          to_tokens(compare["argmax_b"].tolist()))
    return {"decoder input": [f"{t} {token_text(token)}" for t, token in enumerate(input_tokens)],
            "expected next": list(map(token_text, expected_tokens)),
            "argmax (mask)": list(map(token_text, argmax_a)), "p (mask)": compare["p_argmax_a"],
            "argmax (no mask)": list(map(token_text, argmax_b)),
            "p (no mask)": compare["p_argmax_b"],
            "p(expected), mask": compare["p_expected_a"],
            "p(expected), no mask": compare["p_expected_b"], "KL(mask ‖ no mask)": compare["kl"]}


def mask_effect_text(compare: dict) -> str:
    """What removing the causal mask at inference did to a model trained with it (markdown), in the
    direction :func:`compare_predictions` shows: the mean probability of the expected token, and how
    many argmaxes change."""
    before, after = compare["p_expected_a"].mean(), compare["p_expected_b"].mean()
    changed, T = int((compare["argmax_a"] != compare["argmax_b"]).sum()), len(compare["kl"])
    direction = "falls" if after < before else "rises"
    return ("This model was **trained with** the causal mask, so it never learned to use the "
            "future: removing the mask at inference feeds it inputs it has never seen. Averaged "
            f"over the {T} positions, the probability of the expected next token **{direction} "
            f"from {before:.3f} to {after:.3f}**, and {changed} of {T} argmax tokens change. A "
            "model *trained* without the mask would instead learn to copy the next token from its "
            "input — and could not generate, where no next token exists yet.")


def future_mass(weights) -> np.ndarray:
    """Per query row, the attention weight on later positions (strictly above the diagonal). (T, T)
    -> (T,)"""
    return np.triu(np.asarray(weights, dtype=np.float64), k=1).sum(-1)


def batch_row_labels(src_tokens: list[list[str]], tgt_tokens: list[list[str]]) -> list[str]:
    """How each row of a padded batch is made up: its source and target tokens, and the <pad> that
    fill each to the batch's longest ("row 1: 5 source tokens + 3 <pad>, 7 target tokens + 0
    <pad>")."""
    S_max, T_max = max(map(len, src_tokens)), max(map(len, tgt_tokens))
    return [f"row {b}: {len(src)} source tokens + {S_max - len(src)} <pad>, "
            f"{len(tgt)} target tokens + {T_max - len(tgt)} <pad>"
            for b, (src, tgt) in enumerate(zip(src_tokens, tgt_tokens))]
