"""torch.compile for the GPU run's updates, at one of two scopes.

- ``model``: the whole forward pass as one graph (embeddings, 2·N layers, the output projection).
- ``layers``: one compiled ``EncoderLayer.forward`` that all N encoder layers run, and one
  compiled ``DecoderLayer.forward`` for the decoder's. Two graphs whatever N is: the layers'
  weights are the graphs' inputs, and every layer hands the compiled forward the same name (""),
  so nothing tells one layer of a stack from another. Handing each layer's own name to a forward
  that never reads it without hooks (models/transformer/model.py, ``_layer_names``) was enough
  for torch 2.13; torch 2.11, the GPU's, guarded on the name all the same and compiled the base
  model's layers one by one until its limit of 8 graphs a function (tools/gpu/README.md).
  Inductor then generates each stack's kernels once rather than N times. Compiling the base model
  (N = 6) on 2 CPU cores, one forward and backward pass, empty inductor cache: 44.6 s against the
  whole forward's 119.7 s, with about the same time per update after it (bench/compile_scope.py;
  tools/gpu/README.md, "Compiling each layer"). What it leaves uncompiled: the embeddings and the
  output projection.

Either way the model's own forward runs: nothing is copied, and the evaluations, which run under
``torch.compiler.set_stance("force_eager")``, read the same weights uncompiled.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable

import torch
from torch import nn

# What one compiled graph covers, as the model card says it
SCOPES = {"layers": "each stack's layer forward, one graph its N layers share",
          "model": "the whole forward as one graph"}


def compile_layers(model: nn.Module, **options) -> Callable[[], None]:
    """Make every layer of ``model.encoder_layers`` and ``model.decoder_layers`` run its class's
    forward compiled by one ``torch.compile(..., **options)`` per class; returns the function
    that puts the plain forwards back.

    The compiled forward is set on each layer as an instance attribute, which Python finds before
    the class's method, so the model's own calls (``layer.forward(...)``) run it. A call with hooks
    runs the plain forward (hook points need their names). It is the training process's model
    alone (the app's cached models are never compiled)."""
    layers = [*model.encoder_layers, *model.decoder_layers]
    compiled = {kind: torch.compile(kind.forward, **options)
                for kind in {type(layer) for layer in layers}}
    for layer in layers:
        layer.forward = functools.partial(_call, compiled[type(layer)], layer)

    def uncompile() -> None:
        for layer in layers:
            layer.__dict__.pop("forward", None)

    return uncompile


@functools.cache
def _signature(kind: type) -> inspect.Signature:
    return inspect.signature(kind.forward)


def _call(compiled: Callable, layer: nn.Module, *args, **kwargs):
    """A layer's call, with the same constant name for every layer of its class. The name only
    names hook points (a call with hooks runs the plain forward)."""
    kind = type(layer)
    bound = _signature(kind).bind(layer, *args, **kwargs)
    if bound.arguments.get("hooks") is not None:
        return kind.forward(layer, *args, **kwargs)
    bound.arguments["name"] = ""
    return compiled(*bound.args, **bound.kwargs)


def compile_forward(model: nn.Module, scope: str) -> tuple[Callable, Callable[[], None]]:
    """(what the updates call, the function that undoes it) for ``scope`` (SCOPES), with dynamic
    shapes: one graph for every batch shape. Compiling happens at the first call."""
    if scope == "model":
        return torch.compile(model, dynamic=True), lambda: None
    if scope == "layers":
        return model, compile_layers(model, dynamic=True)
    raise ValueError(f"compile scope {scope!r}: choose one of {', '.join(SCOPES)}")


def eager():
    """A context in which compiled functions run their Python uncompiled (the evaluations)."""
    return torch.compiler.set_stance("force_eager")
