"""What incremental decoding carries from one step of :meth:`Transformer.decode_step` to the next:
the encoder output, the source mask and every decoder layer's key/value caches.

Not part of the paper's model (models/transformer/model.py reads top to bottom like the paper); the
bookkeeping that lets decoding run the same forward pass one position at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class DecoderState:
    """What incremental decoding carries from one step to the next: per-layer key/value caches
    ({"self": …, "cross": …}, each {"k", "v"} of shape (B, h, L, d_k))."""

    memory: torch.Tensor  # (B, S, d_model)
    # (B, 1, 1, S); None when no source is padded (attention then needs no mask)
    src_mask: torch.Tensor | None
    caches: list[dict] = field(default_factory=list)
    length: int = 0  # target positions already processed
    # The products' layouts checked during this decode call (models/products.py's checked_once), one
    # dict for steps of few rows and one for many: shared by every state selected from this one.
    layouts: dict = field(default_factory=dict)

    def select(self, index: torch.Tensor) -> "DecoderState":
        """Reorder/duplicate/drop batch rows: beams of a new source, sentences leaving the batch."""

        def pick(obj):
            if isinstance(obj, dict):
                return {key: pick(value) for key, value in obj.items()}
            return obj.index_select(0, index)

        src_mask = None if self.src_mask is None else self.src_mask.index_select(0, index)
        return DecoderState(self.memory.index_select(0, index), src_mask,
                            [pick(c) for c in self.caches], self.length, self.layouts)

    def select_beams(self, index: torch.Tensor) -> "DecoderState":
        """Reorder rows among the beams of the same source (beam search, every step). Those rows
        share the memory, the mask and the cross-attention keys/values, which therefore stay as they
        are: only the self-attention caches, which differ from beam to beam, are gathered."""
        caches = [{**c, "self": {key: value.index_select(0, index)
                                 for key, value in c["self"].items()}}
                  for c in self.caches]
        return DecoderState(self.memory, self.src_mask, caches, self.length, self.layouts)
