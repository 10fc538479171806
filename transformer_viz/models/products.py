"""The weight products of a forward pass, laid out for speed when no gradient is wanted.

A step of decoding multiplies one row (or a few: the beams) by every weight matrix, and its time
goes into fetching the weights from memory. Two layouts make that faster without changing what is
computed:

- A weight at least as tall as wide is read transposed, (d_in, d_out) in memory: the product of one
  row with the 8000 × 256 output projection took 1.1 ms from a cold cache row-major, 0.38 ms
  transposed (bench/layout_speed.py, 2-core AMD EPYC, MKL). With 32 rows the two layouts are alike;
  the FFN's W_2, (d_model, d_ff), ran slower transposed, so it is not.
- Products that read the same input run as one: self-attention's X [W_Q | W_K | W_V],
  cross-attention's memory [W_K | W_V].

These copies are built once per weight and rebuilt when a weight changes (training and
``load_state_dict`` update weights in place, which bumps the tensor's version counter); they live in
a weak dictionary beside the model, never on it. With gradients enabled (training, attributions) the
plain ``F.linear`` runs on the parameters themselves.

Checking the weights' versions at every product costs a decoding step as much as a few of its
products, so a decode call checks each layout once: within :class:`checked_once` (each decoding
step, models/transformer/model.py) a layout already checked during that decode call is used as it
is.
"""

from __future__ import annotations

import threading
import weakref

import torch
import torch.nn.functional as F
from torch import nn

# Up to this many rows a product reads the transposed copy (bench/layout_speed.py, the shipped
# model's shapes: one row 1.2–2.9× faster, 5–16 rows up to 1.4×, 32 rows 0.97–1.06×). Beam search
# with 5 beams of one sentence has 5 rows.
FEW_ROWS = 8

# (id(first weight), number of weights, transposed) -> (stamp, weight, bias, each weight's d_out);
# an entry goes when its first weight is freed. (Not a WeakKeyDictionary: that compares keys with
# ==, which a tensor answers element by element.)
_layouts: dict[tuple, tuple] = {}


def _stamp(tensors: tuple) -> tuple:
    """Changes when any of the tensors is updated in place (its version counter) or the model moves
    to another device or dtype (which gives every tensor new memory: the first one's address stands
    for all, as one address per tensor would cost a decoding step as much again)."""
    return (tensors[0].data_ptr(), *[t._version for t in tensors])


class _Checked(threading.local):
    """What the decode call whose step this thread runs has checked (:class:`checked_once`), else
    None: (id(first layer), number of layers) -> :func:`linear`'s group, (id(first weight), number
    of weights) -> :func:`project`'s layout. No row count in the key: a decode call keeps one record
    for steps of few rows and one for many."""

    layouts: dict | None = None


_checked = _Checked()


class checked_once:
    """``with checked_once(record):`` a layout (or group of layers) in ``record``, a dict that lives
    as long as one decode call (one for its steps of few rows, one for many), is used without
    checking its weights again; one checked inside is added to it. None: every one is checked. A
    weight updated in place during a decode call goes unseen until the next call."""

    def __init__(self, record: dict | None) -> None:
        self.record = record

    def __enter__(self) -> None:
        _checked.layouts = self.record

    def __exit__(self, *exc) -> None:
        _checked.layouts = None


def _build(key: tuple, stamp: tuple, weights: tuple, biases: tuple, transposed: bool) -> tuple:
    """The weights side by side, (Σ d_out, d_in), stored as they are or transposed; the biases
    likewise."""
    if key not in _layouts:
        weakref.finalize(weights[0], _layouts.pop, key, None)
    # Ordinary tensors even when first used in inference mode (a decoding step), as they are kept.
    with torch.inference_mode(False), torch.no_grad():
        weight = torch.cat(weights) if len(weights) > 1 else weights[0]  # (Σ d_out, d_in)
        if transposed:
            # Stored (d_in, Σ d_out), read through a (Σ d_out, d_in) view: F.linear hands BLAS the
            # transposed storage as it is, so a row's product streams the weight in its memory
            # order.
            weight = weight.t().contiguous().t()
        bias = None
        if biases[0] is not None:
            bias = torch.cat(biases) if len(biases) > 1 else biases[0]
    _layouts[key] = entry = (stamp, weight, bias, [w.shape[0] for w in weights])
    return entry


def project(x: torch.Tensor, weights: tuple, biases: tuple) -> tuple[torch.Tensor, ...]:
    """x (..., d_in) times each weight (d_out, d_in), plus its bias -> one (..., d_out) per
    weight."""
    checked = _checked.layouts
    entry = None if checked is None else checked.get((id(weights[0]), len(weights)))
    if entry is None:
        # linear() has already taken this way under autograd, yet torch.compile traces into
        # here, and without it the trace reaches _build's weakref.finalize and fails its guards
        # (tests/unit/test_gpu_step.py, the compiled update).
        if torch.is_grad_enabled():
            return tuple([F.linear(x, w, b) for w, b in zip(weights, biases)])
        entry = _layout(x, weights, biases)
        if checked is not None:
            checked[id(weights[0]), len(weights)] = entry
    out = F.linear(x, entry[1], entry[2])  # (..., Σ d_out)
    if len(weights) == 1:
        return (out,)
    return out.split_with_sizes(entry[3], dim=-1)


def _layout(x: torch.Tensor, weights: tuple, biases: tuple) -> tuple:
    """The layout for products of x's rows with the weights, checked against the weights' stamps
    (built again where one changed)."""
    d_in = x.shape[-1]
    transposed = x.numel() <= FEW_ROWS * d_in and weights[0].shape[0] * len(weights) >= d_in
    key = (id(weights[0]), len(weights), transposed)
    stamp = _stamp(weights + biases if biases[0] is not None else weights)
    entry = _layouts.get(key)
    if entry is None or entry[0] != stamp:
        entry = _build(key, stamp, weights, biases, transposed)
    return entry


# id(first layer), number of layers -> (first layer's weight, the layers' weights, their biases):
# the parameters of a group of layers, looked up once (a module's attribute lookup costs as much as
# a one-row product's bookkeeping here).
_groups: dict[tuple, tuple] = {}


def linear(x: torch.Tensor, *layers: nn.Linear) -> tuple[torch.Tensor, ...]:
    """x (..., d_in) through each of ``layers`` (which read the same input) -> one output per
    layer."""
    if torch.is_grad_enabled():  # the parameters themselves, and no bookkeeping to trace
        return tuple([F.linear(x, layer.weight, layer.bias) for layer in layers])
    key = (id(layers[0]), len(layers))
    checked = _checked.layouts
    group = None if checked is None else checked.get(key)
    if group is None:
        group = _group(key, layers)
        if checked is not None:
            checked[key] = group
    return project(x, group[1], group[2])


def _group(key: tuple, layers: tuple) -> tuple:
    """The layers' entry in ``_groups``, made again where the first layer's weight was replaced."""
    group = _groups.get(key)
    first = layers[0].weight
    if group is None or group[0] is not first:
        if group is None:
            weakref.finalize(layers[0], _groups.pop, key, None)
        group = (first, tuple([layer.weight for layer in layers]),
                 tuple([layer.bias for layer in layers]))
        _groups[key] = group
    return group
