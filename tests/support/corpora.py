"""A synthetic corpus for tests that train: no data files, no network."""

from __future__ import annotations

import random

GERMAN = ["ein", "mann", "eine", "frau", "hund", "läuft", "spielt", "im", "park", "auf",
          "der", "straße", "zwei", "kinder", "sitzen", "am", "strand", "mit", "einem", "ball",
          "rot", "blau"]
ENGLISH = ["a", "man", "woman", "dog", "runs", "plays", "in", "the", "park", "on", "street", "two",
           "children", "sit", "at", "beach", "with", "ball", "red", "blue"]


def synthetic_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Sentence pairs in which the 'translation' is a fixed word mapping: learnable in a few hundred
    steps."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        idx = [rng.randrange(len(ENGLISH)) for _ in range(rng.randint(2, 7))]
        pairs.append((" ".join(GERMAN[i] for i in idx) + " .",
                      " ".join(ENGLISH[i] for i in idx) + " ."))
    return pairs
