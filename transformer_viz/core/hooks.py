"""Hook points: the named places in a forward pass where a caller reads a tensor or replaces it.

Every model family calls ``point(hooks, name, tensor)`` at each documented name
(docs/trace_names.md). ``hooks`` is None (nothing to do: the call returns the tensor), a
:class:`~transformer_viz.core.trace.Trace` (record every point), or a :class:`Hooks`: functions on
chosen names, and optionally a Trace as well. A function returns the tensor to go on with, or None
to leave it as it is; whatever it returns is what the rest of the pass computes from, so switching a
head off, patching in another run's activation and reading a layer's stream are all hooks on the one
forward pass (as TransformerLens's hook points are), never a second copy of the model's arithmetic.
Nothing is kept on a module: each call brings its own hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import torch

from transformer_viz.core.trace import Trace

HookFn = Callable[[torch.Tensor, str], "torch.Tensor | None"]

# The steps of attention that exist only when it is computed step by step (the fused kernel has no
# scores or weights to read); a hook on one of them asks for the explicit softmax(QKᵀ/√d_k)·V.
EXPLICIT_STEPS = ("scores", "mask", "masked_scores", "weights")


class Hooks:
    """Functions on hook-point names, run in the order given, and an optional Trace of every point.

    ``Hooks({"decoder.1.cross_attn.heads": fn})``; several functions on one name:
    ``Hooks({name: [fn, gn]})``; :meth:`merged` joins two sets.
    """

    def __init__(self, fns: Mapping[str, HookFn | Iterable[HookFn]] | None = None,
                 trace: Trace | None = None) -> None:
        self.fns: dict[str, list[HookFn]] = {}
        for name, fn in (fns or {}).items():
            self.fns[name] = [fn] if callable(fn) else list(fn)
        self.trace = trace

    def __call__(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        for fn in self.fns.get(name, ()):
            replaced = fn(tensor, name)
            if replaced is not None:
                tensor = replaced
        if self.trace is not None:
            self.trace.record(name, tensor)
        return tensor

    def explicit(self, prefix: str) -> bool:
        """Whether the attention at ``prefix`` ("encoder.0.self_attn") must be
        computed step by step."""
        if self.trace is not None:
            return True
        return any(f"{prefix}.{step}" in self.fns for step in EXPLICIT_STEPS)

    def merged(self, other: "Hooks | Mapping[str, HookFn | Iterable[HookFn]]") -> "Hooks":
        """These hooks, then ``other``'s on the same names; the trace of whichever has one."""
        other = other if isinstance(other, Hooks) else Hooks(other)
        out = Hooks(self.fns, self.trace if self.trace is not None else other.trace)
        for name, fns in other.fns.items():
            out.fns[name] = out.fns.get(name, []) + fns
        return out


def combine(trace: Trace | None, hooks: "Hooks | Trace | None") -> "Hooks | Trace | None":
    """One object for a forward pass that was given a trace, hooks, both or neither."""
    if trace is None:
        return hooks
    if hooks is None:
        return trace
    if isinstance(hooks, Trace):
        raise ValueError("give one Trace: either trace= or hooks=")
    return Hooks(hooks.fns, trace)


def point(hooks: "Hooks | Trace | None", name: str, tensor: torch.Tensor) -> torch.Tensor:
    """A hook point: the tensor the pass goes on with (the hooks' replacement, or ``tensor``)."""
    return tensor if hooks is None else hooks(name, tensor)


def explicit(hooks: "Hooks | Trace | None", prefix: str) -> bool:
    """Whether the attention at ``prefix`` must be written out (a trace, or a hook on
    one of its steps)."""
    return hooks is not None and hooks.explicit(prefix)


class Recorder:
    """Keeps the tensors at chosen names as they are (not detached, not copied): what a caller reads
    from inside a pass, gradients included. ``Recorder(names).hooks()`` -> the Hooks that fill
    it."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(names)
        self.tensors: dict[str, torch.Tensor] = {}

    def _keep(self, tensor: torch.Tensor, name: str) -> None:
        self.tensors[name] = tensor

    def hooks(self) -> Hooks:
        return Hooks({name: self._keep for name in self.names})

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]
