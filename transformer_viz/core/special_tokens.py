"""The special tokens and their fixed IDs, and what a decoder's output means: the one place that
every layer (models, text, plots) takes them from.
"""

from __future__ import annotations

from typing import Iterable

SPECIAL_TOKENS = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>",
                  "unk_token": "<unk>"}
# IDs fixed by training order (the tokenizer's trainer checks them); ModelConfig's pad_id, bos_id,
# eos_id and unk_id default to them.
PAD, BOS, EOS, UNK = 0, 1, 2, 3


def output_ids(ids: Iterable[int], eos_id: int = EOS, pad_id: int = PAD) -> list[int]:
    """What a decoder wrote: the IDs before the first </s>, without the <pad> that a finished row of
    a batch, or a finished beam, goes on emitting."""
    out = []
    for i in ids:
        i = int(i)
        if i == eos_id:
            break
        if i != pad_id:
            out.append(i)
    return out
