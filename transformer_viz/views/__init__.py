"""The figures of a run, one way for every client: a view takes a sentence's run
(engine.SentenceRun) and its options and returns a :class:`FigureSpec`, the plot function with its
arguments (titles, colour bounds, arrays) and the figure's data for a CSV; ``spec.figure()`` draws
it. The app's pages draw these figures through the views (caching the call), and so does the
notebook (transformer_viz/notebook.py):

    >>> spec = views.VIEWS["attention"](run, layer=0, head=2, kind="cross")
    >>> spec.figure(), spec.data

No Streamlit here: the views sit above the engine and below the clients
(tests/unit/test_layers.py)."""

from __future__ import annotations

import inspect
from typing import Callable

from transformer_viz.views.attention import (ATTENTION_PARTS, KIND_OF_LABEL, KINDS, Head, attention,
                                             attention_head, attention_part, heads)
from transformer_viz.views.decoding import beam_tree, decoding_step, steps_shown
from transformer_viz.views.inputs import (default_dims, default_length, embeddings, pe_matrix,
                                          positional, shape_flow, shapes)
from transformer_viz.views.spec import FigureSpec
from transformer_viz.views.tables import long_form, row_names, token_frame

# Figure name -> its view, view(run, **options) -> FigureSpec.
VIEWS: dict[str, Callable[..., FigureSpec]] = {
    "attention": attention,
    "heads": heads,
    "positional": positional,
    "embeddings": embeddings,
    "shapes": shapes,
    "decoding_step": decoding_step,
    "beam_tree": beam_tree,
}


def view(name: str) -> Callable[..., FigureSpec]:
    """The view called ``name``; ValueError names them all."""
    if name not in VIEWS:
        raise ValueError(f"no figure {name!r}; the figures are {', '.join(VIEWS)}")
    return VIEWS[name]


def needs(name: str) -> set[str]:
    """What the view ``name`` needs besides the run and its options, which its client supplies: its
    keyword-only parameters (``id_to_tokens``, the tokenizer's; ``search``, a beam search of the
    sentence)."""
    parameters = inspect.signature(view(name)).parameters.values()
    return {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


__all__ = ["ATTENTION_PARTS", "KINDS", "KIND_OF_LABEL", "VIEWS", "FigureSpec", "Head", "attention",
           "attention_head", "attention_part", "beam_tree", "decoding_step", "default_dims",
           "default_length", "embeddings", "heads", "long_form", "needs", "pe_matrix", "positional",
           "row_names", "shape_flow", "shapes", "steps_shown", "token_frame", "view"]
