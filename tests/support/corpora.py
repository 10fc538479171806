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


def prepare_synthetic(out) -> None:
    """The GPU run's prepared folder (gpu_run prepare) for synthetic pairs: both training corpora
    and both dev sets, with a joint BPE of 120 tokens."""
    from transformer_viz.training.gpu_run import prepare

    pairs = {"train": synthetic_pairs(200, seed=1), "val": synthetic_pairs(20, seed=2),
             "tatoeba_train": synthetic_pairs(100, seed=3),
             "tatoeba_dev": synthetic_pairs(20, seed=4)}
    prepare(out, pairs=pairs, vocab_size=120, log=lambda *_: None)
