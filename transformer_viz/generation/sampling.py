"""Choosing the next token by sampling: temperature, top-k and top-p (nucleus), as pure functions of
numpy arrays.

A decoder-only model gives logits z over the vocabulary for the next token. Sampling draws from

    p_i = exp(z_i / T) / Σ_j exp(z_j / T)

after two optional cuts: top-k keeps the k most probable tokens, top-p the smallest set of most
probable tokens whose probability reaches p; what is kept is renormalised to sum to 1. The order is
temperature, then top-k, then top-p (as in transformers' ``generate``). T = 1 leaves the model's
distribution as it is; T → 0 puts all the mass on the most probable token (greedy decoding; T = 0 is
taken to mean exactly that); T > 1 flattens it.

Ties: tokens are ranked by probability, equal probabilities by lower token ID first, so top-k keeps
exactly k tokens and top-p a well-defined set even when probabilities tie.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer_viz.text.analysis import softmax  # noqa: F401  (stable, float64; re-exported for callers)


def with_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(z / T), (V,). T = 0: all mass on the most probable token (the lowest ID among
    equals)."""
    if temperature < 0:
        raise ValueError(f"temperature must be ≥ 0, not {temperature}")
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(z)
        out[int(np.argmax(z))] = 1.0  # argmax returns the first of equal maxima
        return out
    return softmax(z / temperature)


def ranking(probs: np.ndarray) -> np.ndarray:
    """Token IDs from most to least probable; equal probabilities in ID order."""
    return np.lexsort((np.arange(len(probs)), -np.asarray(probs)))


def top_k_mask(probs: np.ndarray, k: int) -> np.ndarray:
    """True for the k most probable tokens (exactly k; ties broken by lower ID). k ≤ 0 or ≥ V keeps
    all."""
    V = len(probs)
    if k <= 0 or k >= V:
        return np.ones(V, dtype=bool)
    keep = np.zeros(V, dtype=bool)
    keep[ranking(probs)[:k]] = True
    return keep


def top_p_mask(probs: np.ndarray, p: float) -> np.ndarray:
    """True for the smallest set of most probable tokens whose total probability reaches p
    (at least one token). p ≥ 1 keeps all."""
    if not 0 < p <= 1:
        raise ValueError(f"top-p must be in (0, 1], not {p}")
    V = len(probs)
    if p >= 1:
        return np.ones(V, dtype=bool)
    order = ranking(probs)
    cumulative = np.cumsum(np.asarray(probs, dtype=np.float64)[order])
    # The first position where the running mass reaches p; a tiny tolerance keeps p = 0.5 with
    # tokens of 0.3 and 0.2 from needing a third one through rounding.
    n = int(np.searchsorted(cumulative, p - 1e-12, side="left")) + 1
    keep = np.zeros(V, dtype=bool)
    keep[order[: min(n, V)]] = True
    return keep


def renormalised(probs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The distribution restricted to ``keep``, summing to 1."""
    out = np.where(keep, probs, 0.0)
    return out / out.sum()


@dataclass
class NextToken:
    """Every stage of one choice of the next token, each (V,)."""

    model: np.ndarray  # softmax(z): the model's own distribution (T = 1)
    tempered: np.ndarray  # softmax(z / T)
    kept: np.ndarray  # bool: survives top-k and top-p
    final: np.ndarray  # tempered, restricted to kept, renormalised: what is sampled from


def next_token_distribution(logits: np.ndarray, temperature: float = 1.0, top_k: int = 0,
                            top_p: float = 1.0) -> NextToken:
    """Temperature, then top-k (0: off), then top-p (1: off) on the logits of one position (V,)."""
    tempered = with_temperature(logits, temperature)
    kept = top_k_mask(tempered, top_k)
    kept &= top_p_mask(renormalised(tempered, kept), top_p)
    return NextToken(softmax(logits), tempered, kept, renormalised(tempered, kept))


def draw(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One token ID drawn from ``probs`` with the given generator (inverse CDF: one uniform number
    per draw)."""
    cumulative = np.cumsum(probs)
    u = rng.random() * cumulative[-1]
    return int(min(np.searchsorted(cumulative, u, side="right"), len(probs) - 1))
