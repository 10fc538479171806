"""The recorder: an optional object passed into ``forward`` that keeps every intermediate tensor by
name.

Nothing is ever stored on a module, so one cached model can serve many callers at once; each call
brings its own ``Trace``. Each model family documents the names it records, with their shapes, in
its own ``trace_names()`` (the Transformer's in models/transformer/model.py), which the tests check
against a real forward pass; ``docs/trace_names.md`` is written from them by
``python -m transformer_viz.models.trace_docs > docs/trace_names.md``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

import torch


class Trace:
    """An ordered name -> tensor record of one forward pass (detached, on the CPU; floats
    read as float32)."""

    def __init__(self) -> None:
        self._tensors: "OrderedDict[str, torch.Tensor]" = OrderedDict()

    def record(self, name: str, tensor: torch.Tensor) -> None:
        # A view may share memory with something that lives on after the call (the
        # positional-encoding buffer, a key/value cache), so it is copied. Any other tensor is a
        # fresh result that the model never writes to again: keeping it as it is saves a copy of
        # every intermediate.
        if tensor._is_view() or tensor.device.type != "cpu":
            tensor = tensor.detach().to("cpu", copy=True)
        self._tensors[name] = tensor.detach()

    def __call__(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """A Trace is the hook that records every point (core/hooks.py) and replaces none."""
        self.record(name, tensor)
        return tensor

    def explicit(self, prefix: str) -> bool:
        """A trace records attention's every step, so attention is written out everywhere."""
        return True

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            tensor = self._tensors[name]
        except KeyError:
            raise KeyError(f"{name!r} was not recorded; "
                           "see docs/trace_names.md for the names") from None
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            # A bfloat16 model's tensors are handed out as float32 (numpy and the plots need it),
            # converted on first use rather than while recording, which would slow every traced
            # forward pass.
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
