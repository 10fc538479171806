"""Attention masks as explicit boolean tensors: True means "may attend", False means "masked out".

Masks are shaped to broadcast against attention scores (B, h, T_query, T_key).
"""

from __future__ import annotations

import torch


def padding_mask(token_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys that are real tokens. token_ids (B, S) -> (B, 1, 1, S)."""
    return (token_ids != pad_id)[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(length: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Position t may attend to positions <= t (no peeking at later words). -> (1, 1, T, T)."""
    return torch.ones(length, length, dtype=torch.bool,
                      device=device).tril()[None, None]  # (1, 1, T, T)


def target_mask(token_ids: torch.Tensor, pad_id: int, causal: bool = True) -> torch.Tensor:
    """Decoder self-attention mask: padding mask AND causal mask. token_ids (B, T) -> (B, 1, T, T).

    The first position is the decoder's start token, never padding, even when it is the <pad> token
    itself (Marian models start decoding with <pad>): it stays visible."""
    pad = padding_mask(token_ids, pad_id).clone()  # (B, 1, 1, T)
    pad[..., 0] = True
    T = token_ids.size(1)
    if not causal:
        return pad.expand(-1, 1, T, T)  # (B, 1, T, T)
    return pad & causal_mask(T, token_ids.device)  # (B, 1, T, T)
