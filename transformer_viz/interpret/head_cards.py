"""An identity card per attention head: what its attention looks like on a sentence and what
switching it off costs, and a type for the map of heads over layers.

Pattern scores follow TransformerLens's head detector ("mul" measure): for a pattern P that marks
the keys a head of that type attends to, score = Σ A ⊙ P / Σ A over the query rows that have such a
key, so 1 means every row puts all its weight there. Patterns: previous token (key t − 1), itself
(key t, self-attention only), first position (key 0: <s> in the decoder, the first source token in
the encoder), end of the source (the key </s>, where cross-attention heads often park their weight),
and the same token seen earlier (duplicate-token heads). Entropy is the mean over query rows of
−Σ a log a, as a share of the most a row over its keys can have (1: uniform, 0: one key).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer_viz.interpret.ablation import KINDS

# A head is of the type whose score is highest, when it reaches this; below it the head is "mixed".
TYPE_THRESHOLD = 0.5
BROAD_ENTROPY = 0.8  # a head whose rows spread at least this much (of the most possible) is "broad"
PATTERNS = ("previous", "self", "first", "end", "duplicate")
TYPES = ("previous token", "itself", "first position", "end of source", "same token earlier",
         "broad", "mixed")


@dataclass
class HeadCard:
    """One head on one sentence: ``scores`` per pattern (NaN where the pattern has no key), the
    entropy share, for cross-attention the share of target positions where its most-attended source
    token is the most attributed one (NaN for self-attention), the drop of log p(translation) when
    it alone is off, and its type."""

    name: str
    scores: dict[str, float]
    entropy: float
    attribution_agreement: float
    drop: float
    type: str


def _patterns(kind: str, q_tokens: list[int], k_tokens: list[int], eos_id: int) -> dict:
    """Boolean (Lq, Lk) patterns of the keys each type attends to."""
    Lq, Lk = len(q_tokens), len(k_tokens)
    rows, cols = np.arange(Lq)[:, None], np.arange(Lk)[None, :]
    out = {"first": np.broadcast_to(cols == 0, (Lq, Lk)).copy()}
    if kind == "cross":
        out["end"] = np.broadcast_to(np.asarray(k_tokens)[None, :] == eos_id, (Lq, Lk)).copy()
        return out
    same = np.asarray(q_tokens)[:, None] == np.asarray(k_tokens)[None, :]
    out.update(previous=cols == rows - 1, self=cols == rows, duplicate=same & (cols < rows))
    return out


def pattern_score(weights: np.ndarray, pattern: np.ndarray) -> float:
    """Σ A ⊙ P / Σ A over the rows of ``weights`` (Lq, Lk) that have a key in ``pattern``; NaN when
    none has one."""
    rows = pattern.any(-1)
    if not rows.any():
        return float("nan")
    return float((weights[rows] * pattern[rows]).sum() / weights[rows].sum())


def entropy_share(weights: np.ndarray, allowed: np.ndarray) -> float:
    """Mean over rows of the entropy of each row as a share of log(keys it may attend to); a row
    with one key has no choice and is left out (NaN when every row is such)."""
    rows = allowed.sum(-1) > 1
    if not rows.any():
        return float("nan")
    w = weights[rows]
    entropy = -(w * np.log(np.clip(w, 1e-12, None))).sum(-1)  # (rows,)
    return float((entropy / np.log(allowed[rows].sum(-1))).mean())


def head_type(scores: dict[str, float], entropy: float) -> str:
    """The type whose pattern score is highest and at least TYPE_THRESHOLD, else broad or mixed."""
    known = {k: v for k, v in scores.items() if not np.isnan(v)}
    entropy = 0.0 if np.isnan(entropy) else entropy
    best = max(known, key=known.get) if known else None
    if best is not None and known[best] >= TYPE_THRESHOLD:
        return TYPES[PATTERNS.index(best)]
    return "broad" if entropy >= BROAD_ENTROPY else "mixed"


def head_cards(trace, src_ids: list[int], tgt_ids: list[int], cfg, drops: np.ndarray,
               attribution: np.ndarray | None = None) -> list[HeadCard]:
    """Every head's card, in KINDS order, then layer, then head (interpret.ablation.all_heads order,
    as ``drops`` from explain.heads_run). ``trace``: one sentence's traced forward pass;
    ``attribution`` (T, S): e.g. integrated gradients, for cross-attention's agreement."""
    sides = {"enc": ("encoder", "self_attn", src_ids, src_ids),
             "dec": ("decoder", "self_attn", tgt_ids, tgt_ids),
             "cross": ("decoder", "cross_attn", tgt_ids, src_ids)}
    cards, n = [], 0
    for kind in KINDS:
        stack, part, q_tokens, k_tokens = sides[kind]
        patterns = _patterns(kind, q_tokens, k_tokens, cfg.eos_id)
        for i in range(cfg.N):
            name = f"{stack}.{i}.{part}"
            weights = trace[f"{name}.weights"][0].numpy()  # (h, Lq, Lk)
            allowed = trace[f"{name}.mask"][0, 0].numpy().astype(bool)  # (Lq|1, Lk)
            allowed = np.broadcast_to(allowed, weights.shape[1:])
            for j in range(cfg.h):
                w = weights[j]
                scores = {p: pattern_score(w, patterns[p]) if p in patterns else float("nan")
                          for p in PATTERNS}
                agree = float("nan")
                if kind == "cross" and attribution is not None:
                    agree = float((w.argmax(-1) == np.asarray(attribution).argmax(-1)).mean())
                entropy = entropy_share(w, allowed)
                cards.append(HeadCard(f"{kind}.{i}.{j}", scores, entropy, agree, float(drops[n]),
                                      head_type(scores, entropy)))
                n += 1
    return cards
