"""The recorder: an optional object passed into ``forward`` that keeps every intermediate tensor by name.

Nothing is ever stored on a module, so one cached model can serve many callers at once; each call
brings its own ``Trace``. The names and their shapes are listed in ``docs/trace_names.md`` and in
:func:`trace_names`, which the tests check against a real forward pass.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

import torch


class Trace:
    """An ordered name -> tensor record of one forward pass (detached, on the CPU; floats read as float32)."""

    def __init__(self) -> None:
        self._tensors: "OrderedDict[str, torch.Tensor]" = OrderedDict()

    def record(self, name: str, tensor: torch.Tensor) -> None:
        # A view may share memory with something that lives on after the call (the positional-encoding
        # buffer, a key/value cache), so it is copied. Any other tensor is a fresh result that the model
        # never writes to again: keeping it as it is saves a copy of every intermediate.
        if tensor._is_view() or tensor.device.type != "cpu":
            tensor = tensor.detach().to("cpu", copy=True)
        self._tensors[name] = tensor.detach()

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            tensor = self._tensors[name]
        except KeyError:
            raise KeyError(f"{name!r} was not recorded; see docs/trace_names.md for the names") from None
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            # A bfloat16 model's tensors are handed out as float32 (numpy and the plots need it), converted
            # on first use rather than while recording, which would slow every traced forward pass.
            tensor = self._tensors[name] = tensor.float()
        return tensor

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def names(self) -> list[str]:
        return list(self._tensors)

    def items(self):
        return [(name, self[name]) for name in self._tensors]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(t.shape) for name, t in self._tensors.items()}


def _attention_names(prefix: str, q_len: str, k_len: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.q", f"(B, h, {q_len}, d_k)", "Q = X W_Q, split into h heads"),
        (f"{prefix}.k", f"(B, h, {k_len}, d_k)", "K = X W_K (cross-attention: encoder output W_K)"),
        (f"{prefix}.v", f"(B, h, {k_len}, d_k)", "V = X W_V (cross-attention: encoder output W_V)"),
        (f"{prefix}.scores", f"(B, h, {q_len}, {k_len})", "Q Kᵀ / √d_k, before masking"),
        (f"{prefix}.mask", f"broadcastable to (B, h, {q_len}, {k_len})", "True = may attend"),
        (f"{prefix}.masked_scores", f"(B, h, {q_len}, {k_len})", "scores with masked cells set to −∞"),
        (f"{prefix}.weights", f"(B, h, {q_len}, {k_len})", "softmax over the last axis; masked cells exactly 0"),
        (f"{prefix}.heads", f"(B, h, {q_len}, d_k)", "weights · V, one result per head"),
        (f"{prefix}.out", f"(B, {q_len}, d_model)", "Concat(head_1, …, head_h) W_O"),
    ]


def _norm_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.residual", f"(B, {length}, d_model)", "x + Sublayer(x), the input of LayerNorm (Post-LN)"),
        (f"{prefix}.mean", f"(B, {length})", "per-position mean of the residual over d_model"),
        (f"{prefix}.var", f"(B, {length})", "per-position (biased) variance of the residual over d_model"),
        (f"{prefix}.out", f"(B, {length}, d_model)", "LayerNorm(residual) = γ ⊙ (residual − mean)/√(var + ε) + β"),
    ]


def _ffn_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.hidden", f"(B, {length}, d_ff)", "max(0, x W_1 + b_1)"),
        (f"{prefix}.out", f"(B, {length}, d_model)", "hidden W_2 + b_2"),
    ]


def trace_names(N: int = 6) -> list[tuple[str, str, str]]:
    """Every recorded name with its shape and formula, for a model of N layers (Post-LN)."""
    rows: list[tuple[str, str, str]] = []

    def embedding_rows(side: str, length: str) -> list[tuple[str, str, str]]:
        return [
            (f"{side}.token_ids", f"(B, {length})", "token IDs from the tokenizer, padded with <pad>"),
            (f"{side}.embedding", f"(B, {length}, d_model)", "E[token_ids] × √d_model"),
            (f"{side}.positional", f"({length}, d_model)",
             "PE(pos, 2i) = sin(pos/base^(2i/d_model)), PE(pos, 2i+1) = cos(pos/base^(2i/d_model))"),
            (f"{side}.input", f"(B, {length}, d_model)", "embedding + positional (dropout in training)"),
        ]

    rows += embedding_rows("src", "S")
    for i in range(N):
        p = f"encoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "S", "S") + _norm_names(f"{p}.norm1", "S")
        rows += _ffn_names(f"{p}.ffn", "S") + _norm_names(f"{p}.norm2", "S")
        rows.append((f"{p}.out", "(B, S, d_model)", "output of encoder layer i (= norm2.out in Post-LN)"))
    rows.append(("encoder.out", "(B, S, d_model)", "output of the last encoder layer (the 'memory')"))
    rows += embedding_rows("tgt", "T")
    for i in range(N):
        p = f"decoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "T", "T") + _norm_names(f"{p}.norm1", "T")
        rows += _attention_names(f"{p}.cross_attn", "T", "S") + _norm_names(f"{p}.norm2", "T")
        rows += _ffn_names(f"{p}.ffn", "T") + _norm_names(f"{p}.norm3", "T")
        rows.append((f"{p}.out", "(B, T, d_model)", "output of decoder layer i (= norm3.out in Post-LN)"))
    rows += [
        ("decoder.out", "(B, T, d_model)", "output of the last decoder layer"),
        ("logits", "(B, T, V)", "decoder.out Eᵀ (output projection tied to the embeddings)"),
        ("probs", "(B, T, V)", "softmax(logits) over the vocabulary"),
    ]
    return rows
