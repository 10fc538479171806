"""The translation loss: cross-entropy with label smoothing over the real target tokens. Training
minimises it; the Training page shows it on the user's own sentence (engine.teacher_forcing_losses):
the same function."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def label_smoothed_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float, pad_id: int,
                        reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy per real target token ("mean") or summed ("sum"), with label smoothing.
    logits (B, T, V), target (B, T); <pad> targets do not count."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                           ignore_index=pad_id, label_smoothing=smoothing, reduction=reduction)
