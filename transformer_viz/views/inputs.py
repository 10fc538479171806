"""The views of the model's input and of its sizes: the positional encoding, the embedding rows, and
the shape of the tensors on the way through."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from transformer_viz.models.transformer.names import trace_names
from transformer_viz.plots import embeddings as embedding_plots
from transformer_viz.plots import positional as positional_plots
from transformer_viz.plots import shapes as shape_plots
from transformer_viz.views.spec import FigureSpec
from transformer_viz.views.tables import token_frame

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun

POSITIONAL_PARTS = ("matrix", "curves", "similarity", "sum")
EMBEDDING_PARTS = ("rows", "cosine")


@functools.lru_cache(maxsize=32)
def pe_matrix(length: int, d_model: int, base: float) -> np.ndarray:
    """The sinusoidal encoding, length × d_model, computed once per (length, d_model, base)."""
    # Imported here: importing the views does not import torch (the app's pages import them before
    # a cold process has loaded it, app/coldstart.py).
    from transformer_viz.models.transformer.model import sinusoidal_positional_encoding

    return sinusoidal_positional_encoding(length, d_model, base).numpy()


def default_length(run: SentenceRun) -> int:
    """The positions shown unless asked otherwise: max(S, 50), at most the model's max_len."""
    return min(run.config.max_len, max(len(run.src_tokens), 50))


def default_dims(d_model: int) -> list[int]:
    """Fast, medium and slow waves: wavelength 2π, 2π·base^(1/8) and 2π·base^(1/2) positions."""
    return sorted({0, 1, d_model // 8, d_model // 2})


def _check(part: str, parts: tuple[str, ...]) -> None:
    if part not in parts:
        raise ValueError(f"no part {part!r}; the parts are {', '.join(parts)}")


def positional(run: SentenceRun, part: str = "matrix", length: int | None = None,
               base: float | None = None, interleaved: bool = False, dims: list[int] | None = None,
               kind: str = "dot") -> FigureSpec:
    """The Positional encoding page's figures. ``part``: "matrix" (PE, length × d_model; the sin
    and cos halves side by side unless ``interleaved``), "curves" (the columns ``dims`` of PE
    against the position), "similarity" (PE_p · PE_q, or cosine with kind="cosine", length ×
    length) or "sum" (embedding + PE = the encoder's input, S × d_model each). ``length``:
    positions (default max(S, 50), at most the model's max_len); ``base``: the formula's base
    (default the model's)."""
    import pandas as pd  # here: importing the views does not wait for pandas

    _check(part, POSITIONAL_PARTS)
    if part == "sum":
        parts = {"embedding": run.trace["src.embedding"][0].numpy(),  # (S, d_model) each
                 "positional": run.trace["src.positional"].numpy(),
                 "input": run.trace["src.input"][0].numpy()}
        table = pd.concat({name: pd.DataFrame(values) for name, values in parts.items()})
        return FigureSpec(positional_plots.embedding_plus_pe_figure,
                          (*parts.values(), run.src_tokens), {}, table)
    d_model = run.config.d_model
    length = length or default_length(run)
    base = float(base or run.config.pe_base)
    pe = pe_matrix(length, d_model, base)  # (length, d_model)
    if part == "matrix":
        # The formula is unchanged: grouping only reorders the columns, so the view has no moiré.
        plot = positional_plots.pe_heatmap if interleaved else positional_plots.pe_halves_heatmap
        title = f"PE, {length} positions × d_model = {d_model} (base {base:g})"
        return FigureSpec(plot, (pe, title), {}, pd.DataFrame(pe))
    if part == "curves":
        chosen = dims if dims is not None else default_dims(d_model)
        return FigureSpec(positional_plots.pe_curves_figure, (pe, chosen, d_model, base), {},
                          pd.DataFrame({f"dim {d}": pe[:, d] for d in chosen}))
    similarity = positional_plots.position_similarity(pe, kind)
    return FigureSpec(positional_plots.position_similarity_heatmap,
                      (similarity, kind, f"PE_p · PE_q ({kind}), base {base:g}"), {},
                      pd.DataFrame(similarity))


def embeddings(run: SentenceRun, part: str = "rows") -> FigureSpec:
    """The Tokens & embeddings page's figures of this sentence: "rows", the embedding
    E[id]·√d_model (S × d_model), or "cosine", the cosine similarity of those rows (S × S)."""
    _check(part, EMBEDDING_PARTS)
    embedding = run.trace["src.embedding"][0].numpy()  # (S, d_model), already × √d_model
    tokens = run.src_tokens
    if part == "rows":
        return FigureSpec(embedding_plots.embedding_heatmap,
                          (embedding, tokens, "src.embedding = E[id]·√d_model  (S × d_model)"), {},
                          token_frame(embedding, tokens))
    similarity = embedding_plots.cosine_similarity_matrix(embedding)
    return FigureSpec(embedding_plots.cosine_heatmap,
                      (similarity, tokens, "Cosine similarity of the embedding rows"), {},
                      token_frame(similarity, tokens, tokens))


def shape_flow(shapes: dict[str, tuple[int, ...]], N: int, title: str) -> FigureSpec:
    """The flow through layer 0 of a model of N layers, with the sizes of ``shapes`` (traced name
    -> shape); its data: one row per step (plots.shapes.flow_steps)."""
    steps = shape_plots.flow_steps(shapes, trace_names(N))
    return FigureSpec(shape_plots.shape_flow_figure, (steps, title), {}, steps)


def shapes(run: SentenceRun) -> FigureSpec:
    """The Shapes page's flow: the shape of the tensors on the way through layer 0, with this run's
    sizes."""
    title = "Loaded model, layer 0 (every layer has the same shapes)"
    return shape_flow(run.trace.shapes(), run.config.N, title)
