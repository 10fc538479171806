"""The key/value cache that decoding really uses, read out for a sentence, and what it saves.

At step t the decoder runs one new position (the token written at step t − 1). Its self-attention
needs the keys and values of every earlier position: they were computed at earlier steps and are
kept in the cache, so each step computes one new key and value per layer and appends them.
Cross-attention's keys and values come from the encoder output alone: computed once per sentence,
read at every step.

:func:`record_cache` runs the model's own cached decoding (``start_state`` / ``decode_step``, the
code every translation runs) over a sentence's translation and returns the caches it built;
:func:`multiply_adds` counts the multiply–adds of a step with the cache and without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class CacheRecord:
    """One sentence's caches after decoding its translation (T steps, source of S tokens).

    self_k, self_v (N, h, T, d_k): decoder self-attention's keys and values; row t was appended at
    step t + 1. cross_k, cross_v (N, h, S, d_k): cross-attention's, computed once before step 1.
    appended_only: every step left the rows already in the cache as they were (it only appended).
    cross_reused: every step read the very tensors computed before step 1 (nothing recomputed)."""

    self_k: np.ndarray
    self_v: np.ndarray
    cross_k: np.ndarray
    cross_v: np.ndarray
    appended_only: bool
    cross_reused: bool


@torch.no_grad()
def record_cache(model, src_ids: list[int], tgt_ids: list[int]) -> CacheRecord:
    """Decode ``tgt_ids`` (<s> + translation) one position at a time with the model's cache."""
    device = next(model.parameters()).device
    state = model.start_state(torch.tensor([src_ids], device=device))  # (1, S) encoded once
    cross = [(cache["cross"]["k"], cache["cross"]["v"]) for cache in state.caches]
    appended_only, before = True, None
    for token in tgt_ids:
        model.decode_step(torch.tensor([token], device=device), state)
        now = [cache["self"]["k"] for cache in state.caches]  # each (1, h, t, d_k)
        if before is not None:
            appended_only &= all(torch.equal(b, n[:, :, : b.size(2)]) for b, n in zip(before, now))
        before = now
    cross_reused = all(cache["cross"]["k"] is k and cache["cross"]["v"] is v
                       for cache, (k, v) in zip(state.caches, cross))

    def stack(tensors) -> np.ndarray:
        return torch.stack([t[0] for t in tensors]).float().cpu().numpy()  # (N, h, L, d_k)

    return CacheRecord(stack(c["self"]["k"] for c in state.caches),
                       stack(c["self"]["v"] for c in state.caches), stack(k for k, _ in cross),
                       stack(v for _, v in cross), appended_only, cross_reused)


@dataclass
class MultiplyAdds:
    """Multiply–adds per decoding step t = 1 … T of one sentence (source of S tokens), arrays (T,).

    with_cache: one new position per step; once: cross-attention's keys and values, before step 1.
    without_cache: every step runs the decoder over the whole prefix of t positions again, cross-
    attention's keys and values included (the encoder's output is kept either way); the output layer
    still scores only the newest position."""

    with_cache: np.ndarray
    without_cache: np.ndarray
    once: int


def multiply_adds(cfg, S: int, T: int) -> MultiplyAdds:
    """Counted from the shapes: d = d_model; per layer and position, Q, K, V and W_O cost d² each,
    the feed-forward 2·d·d_ff; attention over L keys costs L·d for the scores (h heads of d_k) and
    L·d for the weighted values; the output layer d·V."""
    d, d_ff, N, V = cfg.d_model, cfg.d_ff, cfg.N, cfg.vocab_size
    t = np.arange(1, T + 1)  # positions the step attends over
    per_position = 4 * d * d + 2 * d * d + 2 * d * d_ff  # self Q K V W_O, cross Q W_O, the FFN
    with_cache = N * (per_position + 2 * t * d + 2 * S * d) + d * V
    # Q K V W_O for t positions, t × t scores and values
    self_attention = 4 * t * d * d + 2 * t * t * d
    # Q W_O, K V of the source, t × S
    cross_attention = 2 * t * d * d + 2 * S * d * d + 2 * t * S * d
    without_cache = N * (self_attention + cross_attention + 2 * t * d * d_ff) + d * V
    return MultiplyAdds(with_cache, without_cache, N * 2 * S * d * d)
