"""What a lecture step is drawn from (:class:`Context`), and the arrays of the run that a step's
text and its figure both read, so that the numbers the text quotes are the ones the figure draws."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from transformer_viz.plots import attention as attention_plots
from transformer_viz.text.analysis import softmax

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun


@dataclass(frozen=True)
class Context:
    """What a step is drawn from: the sentence's run, the chosen layer and head, the vocabulary (ID
    -> token) and the model card (for the training step)."""
    run: SentenceRun
    layer: int = 0
    head: int = 0
    id_to_token: Callable[[list[int]], list[str]] = lambda ids: [str(i) for i in ids]
    metadata: dict = field(default_factory=dict)
    position: int = 1  # the decoding step the inference step shows (1-based)
    # the run's Transformer: the "what does a head do?" step switches its heads off
    model: object = None
    # the same sentence by beam search: the inference step draws its beams
    beam_run: SentenceRun | None = None
    checkpoint: object = None  # the loaded checkpoint: "Why this word?" translates its preset pair


BEAM_K = 4  # the beams the inference step's figure draws


def traced(ctx: Context, name: str) -> np.ndarray:
    """The traced tensor ``name`` of the run's only sentence."""
    return ctx.run.trace[name][0].numpy()


def encoder_weights(ctx: Context) -> np.ndarray:
    return traced(ctx, f"encoder.{ctx.layer}.self_attn.weights")  # (h, S, S)


LOOKUP_KEYS = 8  # the soft lookup compares the first token's query with at most this many keys


def lookup_weights(ctx: Context) -> dict[str, np.ndarray]:
    """The soft lookup's weights over the keys, one array per similarity (q·k, q·k/√d_k, qᵀGk): the
    query of the first source token against the keys of the first LOOKUP_KEYS, in the chosen
    encoder layer and head."""
    p = f"encoder.{ctx.layer}.self_attn"
    q = attention_plots.head_slice(ctx.run.trace[f"{p}.q"], ctx.head)[0]
    k = attention_plots.head_slice(ctx.run.trace[f"{p}.k"], ctx.head)[:LOOKUP_KEYS]
    G = attention_plots.random_bilinear(ctx.run.config.d_k, seed=0)
    return {name: softmax(s) for name, s in attention_plots.lookup_scores(q, k, G).items()}


def detr_queries() -> int:
    """The object queries of the app's toy DETR (its configuration's, as shipped): the DETR step
    draws and names that many, not the paper's 100."""
    from transformer_viz.models.detr.config import DETRConfig

    return DETRConfig().n_queries


def padded_length(ctx: Context) -> int:
    """The length the tokens step pads to: the next multiple of 8 above the sentence (at least 2
    <pad>)."""
    return int(math.ceil((len(ctx.run.src_ids) + 2) / 8) * 8)


# [(run, HeadsRun)] of the last few runs: the step's text and figure share one pass
_HEAD_DROPS: list = []


def head_drops(ctx: Context):
    """The run's per-head drops of log p(translation) (text.explain.heads_run), computed once per
    run."""
    from transformer_viz.interpret.explain import heads_run

    for run, numbers in _HEAD_DROPS:
        if run is ctx.run:
            return numbers
    numbers = heads_run(ctx.model, ctx.run.src_ids, ctx.run.tgt_ids)
    _HEAD_DROPS[:] = [(ctx.run, numbers)] + _HEAD_DROPS[:3]
    return numbers
