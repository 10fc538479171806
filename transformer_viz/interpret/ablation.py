"""Switching attention heads off: which heads there are, how to name them, and the hooks that do it.

A head is switched off by zeroing its output head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i), the
head's d_k columns of Concat(head_1, …, head_h), before the product with W_O: a hook on the
attention's ``heads`` point (core/hooks.py) multiplies them by 0, in the model's own forward pass,
never through something stored on the module (the app shares one model between sessions). W_O's bias
b_O still flows: it belongs to no head. Each batch row may switch off heads of its own
(:func:`keep_mask`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from transformer_viz.core.hooks import Hooks

# Where a head sits: encoder self-attention, decoder (masked) self-attention, or cross-attention.
KINDS = ("enc", "dec", "cross")
KIND_NAMES = {"enc": "encoder self-attention", "dec": "decoder self-attention",
              "cross": "cross-attention"}


@dataclass(frozen=True, order=True)
class Head:
    """One attention head: ``kind`` (one of KINDS),
    decoder or encoder ``layer`` and ``head``, from 0."""

    kind: str
    layer: int
    head: int

    def __str__(self) -> str:  # the command line's and the URL's spelling: "cross.2.5"
        return f"{self.kind}.{self.layer}.{self.head}"

    @property
    def label(self) -> str:
        return f"{KIND_NAMES[self.kind]}, layer {self.layer}, head {self.head}"


def all_heads(cfg) -> list[Head]:
    """Every head of the model, in KINDS order, then layer, then head: 3 · N · h of them."""
    return [Head(kind, i, j) for kind in KINDS for i in range(cfg.N) for j in range(cfg.h)]


def parse_heads(spec: str | Iterable[str], cfg) -> list[Head]:
    """"enc.0.3,cross.2.5" (or a list of such names) -> sorted, distinct heads; ValueError naming a
    head that is malformed or outside the model (N layers, h heads)."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    heads = set()
    for name in (n.strip() for n in names):
        if not name:
            continue
        parts = name.split(".")
        if len(parts) != 3 or parts[0] not in KINDS or not all(p.isdigit() for p in parts[1:]):
            raise ValueError(f"{name!r} is not a head: write KIND.LAYER.HEAD with KIND one of "
                             f"{', '.join(KINDS)}, e.g. cross.0.3")
        head = Head(parts[0], int(parts[1]), int(parts[2]))
        if head.layer >= cfg.N or head.head >= cfg.h:
            raise ValueError(f"{name!r} is outside the model: layers 0–{cfg.N - 1}, "
                             f"heads 0–{cfg.h - 1}")
        heads.add(head)
    return sorted(heads)


def keep_mask(cfg, rows: list[Iterable[Head]], device=None,
              dtype=torch.float32) -> dict[str, torch.Tensor]:
    """The kept heads of each batch row (``rows``: the heads switched off in that row): per kind a
    tensor (B, N, h) of ones with 0 where a head is off. One row serves a whole batch by
    broadcasting."""
    keep = {kind: torch.ones(len(rows), cfg.N, cfg.h, device=device, dtype=dtype)  # (B, N, h)
            for kind in KINDS}
    for b, off in enumerate(rows):
        for head in off:
            keep[head.kind][b, head.layer, head.head] = 0.0
    return keep


# Where each kind of head sits in the model: its attention's hook-point prefix for layer i.
_PREFIX = {"enc": "encoder.{}.self_attn", "dec": "decoder.{}.self_attn",
           "cross": "decoder.{}.cross_attn"}


def heads_point(kind: str, layer: int) -> str:
    """The hook point of a layer's heads, (B, h, L, d_k):
    "decoder.2.cross_attn.heads" for ("cross", 2)."""
    return _PREFIX[kind].format(layer) + ".heads"


def ablation_hooks(keep: dict[str, torch.Tensor]) -> Hooks:
    """Hooks that switch heads off as ``keep`` (from :func:`keep_mask`) says: each layer's heads are
    multiplied by its (B, h, 1, 1) factor, 0 for a head that is off, before W_O."""
    fns = {}
    for kind, factors in keep.items():  # (B, N, h)
        for i in range(factors.size(1)):
            factor = factors[:, i, :, None, None]  # (B, h, 1, 1), broadcast over (L, d_k)
            fns[heads_point(kind, i)] = lambda heads, name, factor=factor: heads * factor
    return Hooks(fns)


def heads_off_hooks(cfg, heads_off: Iterable[Head], device=None, dtype=torch.float32) -> Hooks:
    """Hooks that switch ``heads_off`` off in every batch row."""
    return ablation_hooks(keep_mask(cfg, [list(heads_off)], device, dtype))
