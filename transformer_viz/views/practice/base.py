"""What an exercise is made of: the run it is asked about (:class:`Context`), the question posed on
that run with its answer, hints and figure (:class:`Posed`), and the exercise itself
(:class:`Exercise`), with the helpers every exercise uses to read the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from transformer_viz.plots.common import safe_label, token_text
from transformer_viz.plots.marks import mark_answer
from transformer_viz.views.practice.checks import Answer
from transformer_viz.views.spec import FigureSpec

if TYPE_CHECKING:
    from transformer_viz.checkpoints import Checkpoint
    from transformer_viz.engine import SentenceRun

# Values within 1 % of the largest count as largest too: the student reads them off a colour.
TIE = 0.01


@dataclass(frozen=True)
class Context:
    """The student's sentence run through the loaded model, and the sidebar's layer and head."""
    run: SentenceRun
    checkpoint: Checkpoint  # the model (heads switched off), its tokenizer, its decoding settings
    layer: int = 0
    head: int = 0

    @property
    def config(self):
        return self.run.config


@dataclass(frozen=True)
class Posed:
    """An exercise asked about one run: the question, its answer, two hints in words, and a third
    that works the answer out (``solution``) beside a figure with the answer marked on it."""
    question: str
    answer: Answer
    hints: tuple[str, str]
    solution: str
    figure: FigureSpec


@dataclass(frozen=True)
class Exercise:
    """One exercise: its title, the page that explains it (its url_path), the glossary terms it
    uses, and how it is posed on a run."""
    id: str
    title: str
    page: str
    terms: tuple[str, ...]
    pose: Callable[[Context], Posed]
    # what makes posing it slow on a large model (one line), None when nothing does (the app then
    # poses it when the reader asks: app/on_request.py)
    slow: str | None = None


def traced(ctx: Context, name: str) -> np.ndarray:
    """The traced tensor ``name`` (models/transformer/names.py) of the run's only sentence."""
    return ctx.run.trace[name][0].numpy()


def shown(token: str) -> str:
    """A token as the app writes it in text: the word-start mark as ␣, in quotes."""
    return f"“{token_text(token)}”"


def label(token: str) -> str:
    """A token as a figure's title may carry it (plotly reads a little HTML)."""
    return safe_label(token_text(token))


def attention_row(ctx: Context, name: str, query_len: int) -> tuple[int, np.ndarray, list[int]]:
    """The sidebar's head at ``name`` (an attention's weights): the query asked about (position 1,
    or 0 for a one-token side), its row of weights and the keys tied for its largest."""
    query = min(1, query_len - 1)
    row = traced(ctx, name)[ctx.head, query]  # (keys,)
    return query, row, largest(row)


def largest(values) -> list[int]:
    """The indices of the largest value and of every value within TIE (1 %) of it."""
    values = np.asarray(values, dtype=np.float64)
    top = float(values.max())
    return [int(i) for i in np.flatnonzero(values >= top - TIE * abs(top))]


def _marked(spec: FigureSpec, note: str, rows, cols):
    return mark_answer(spec.figure(), note, rows, cols)


def answer_figure(spec: FigureSpec, note: str, rows: tuple[int, int] | None = None,
                  cols: tuple[int, int] | None = None) -> FigureSpec:
    """``spec``'s figure with the answer ``note`` above it and a frame around the cells that hold
    it; the same CSV data."""
    return FigureSpec(_marked, (spec, note, rows, cols), {}, spec.data)
