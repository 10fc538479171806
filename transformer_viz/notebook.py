"""The app's figures in a Jupyter (or VS Code) notebook: load a checkpoint once, run a sentence, and
ask for any figure by name; every figure is a plotly ``Figure``, which a notebook draws inline.

    >>> from transformer_viz import notebook as tv
    >>> model = tv.load()         # the shipped de-en checkpoint, or a name or a path
    >>> run = model.run("Ein Hund läuft im Park.")
    >>> run.translation
    >>> run.figure("attention", layer=0, head=2, kind="cross")
    >>> run.tensor("decoder.0.cross_attn.weights").shape     # (1, h, T, S), a numpy array

Figures (:data:`FIGURES`, the names :meth:`Run.figure` takes), each with the options of its view in
transformer_viz.views, the one its page draws it with:

- ``attention``: one head at any of the Attention page's steps; ``layer``, ``head``, ``kind``
  ("encoder", "decoder" (masked self-attention) or "cross") and ``part`` ("q", "k", "v", "scores",
  "mask", "masked_scores", "weights" or "heads" = weights · V).
- ``heads``: all heads of a layer; ``layer``, ``kind`` and ``selected`` (a head to outline).
- ``positional``: ``part`` "matrix" (``interleaved``), "curves" (``dims``), "similarity" (``kind``
  "dot" or "cosine") or "sum"; ``length`` (positions) and ``base``.
- ``embeddings``: ``part`` "rows" or "cosine".
- ``shapes``: the shape of the tensors on the way through layer 0.
- ``decoding_step``: greedy decoding at ``step``; ``part`` "topk", "mask" or "cross" (``layer``,
  ``head``).
- ``beam_tree``: the beam-search tree with ``beam`` hypotheses.

Tensors: :meth:`Run.tensor` returns a traced tensor by its documented name (docs/trace_names.md)
as numpy, with its batch axis B = 1. Dimensions: S source tokens (ending in </s>), T target
positions (<s> and the translation), h heads, d_k = d_model / h, V the vocabulary.

A client of the library, like the app and the command line: no Streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from transformer_viz import engine, views
from transformer_viz.checkpoints import (
    Checkpoint, CheckpointError, checkpoint_arch, load_checkpoint)
from transformer_viz.core.paths import CHECKPOINTS_DIR
from transformer_viz.models.registry import DEFAULT_ARCH
# The options' names, for a notebook's user: tv.KINDS, tv.ATTENTION_PARTS.
from transformer_viz.views import ATTENTION_PARTS, KINDS  # noqa: F401

DEFAULT_CHECKPOINT = "de-en"


def checkpoint_path(checkpoint: str | Path = DEFAULT_CHECKPOINT) -> Path:
    """A checkpoint directory: a path, or the name of one of the shipped checkpoints
    (core.paths)."""
    path = Path(checkpoint)
    if path.is_dir():
        return path
    shipped = CHECKPOINTS_DIR / str(checkpoint)
    if shipped.is_dir():
        return shipped
    names = (sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if p.is_dir())
             if CHECKPOINTS_DIR.is_dir() else [])
    raise CheckpointError(f"no checkpoint {str(checkpoint)!r}: give a checkpoint directory, or one "
                          f"of the names in {CHECKPOINTS_DIR}: "
                          f"{', '.join(names) or '(none found)'}")


def load(checkpoint: str | Path = DEFAULT_CHECKPOINT, dtype: str = "float32") -> Model:
    """Load a Transformer checkpoint once (a shipped name such as "de-en" or "en-de", or a
    directory, ours or a transformers Marian one); run sentences with :meth:`Model.run`. Raises
    CheckpointError with a one-line reason for a missing or unreadable checkpoint, or one of
    another model family."""
    path = checkpoint_path(checkpoint)
    if checkpoint_arch(path) not in (DEFAULT_ARCH, ""):
        raise CheckpointError(f"{path} is not an encoder–decoder Transformer (config.json's "
                              f"\"arch\" is {checkpoint_arch(path)!r}); the notebook draws the "
                              "Transformer's figures")
    return Model(load_checkpoint(path, dtype=dtype), path)


@dataclass(frozen=True)
class Model:
    """A loaded checkpoint (``checkpoint``: model, tokenizer, config, decoding defaults) and its
    directory."""
    checkpoint: Checkpoint
    path: Path

    def run(self, sentence: str, beam: int = 1) -> Run:
        """Translate ``sentence`` (greedy for beam = 1, else beam search of that width, with the
        checkpoint's decoding defaults, as the app does) and trace the forward pass over the
        translation. Raises InputError for text that cannot be run (empty, too long)."""
        return Run(self, engine.run_sentence(self.checkpoint, sentence, beam_size=beam), beam)

    def tokens(self, ids: list[int]) -> list[str]:
        """Token IDs -> the tokenizer's tokens."""
        return self.checkpoint.tokenizer.convert_ids_to_tokens([int(i) for i in ids])


@dataclass(frozen=True)
class Run:
    """One sentence through the model: its translation, tokens, traced tensors and figures.

    ``result`` is the engine's SentenceRun (src_ids, tgt_ids, decoding steps, trace, config)."""
    model: Model
    result: engine.SentenceRun
    beam: int = 1

    # --- what was run -----------------------------------------------------------------------------

    @property
    def sentence(self) -> str:
        """The source as it was run (cleaned)."""
        return self.result.source_text

    @property
    def translation(self) -> str:
        return self.result.translation

    @property
    def src_tokens(self) -> list[str]:
        """The encoder's input tokens, S of them, ending in </s>."""
        return list(self.result.src_tokens)

    @property
    def tgt_tokens(self) -> list[str]:
        """The decoder's input tokens, T of them: <s> and the translation."""
        return list(self.result.tgt_tokens)

    def __repr__(self) -> str:
        return (f"Run({self.sentence!r} -> {self.translation!r}, S={len(self.src_tokens)}, "
                f"T={len(self.tgt_tokens)})")

    # --- tensors ----------------------------------------------------------------------------------

    def tensor_names(self) -> list[str]:
        """Every traced name, in the order the forward pass records them (docs/trace_names.md)."""
        return list(self.result.trace.shapes())

    def tensor(self, name: str) -> np.ndarray:
        """The traced tensor ``name`` as a numpy array, with the shape docs/trace_names.md gives (B
        = 1), e.g. "src.embedding" (1, S, d_model), "encoder.0.self_attn.weights" (1, h, S, S),
        "decoder.1.cross_attn.weights" (1, h, T, S), "logits" (1, T, V). KeyError
        names the known ones."""
        if name not in self.result.trace.shapes():
            raise KeyError(f"no traced tensor {name!r}; see tensor_names() or docs/trace_names.md")
        return self.result.trace[name].numpy()

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Traced name -> its shape."""
        return dict(self.result.trace.shapes())

    # --- figures ----------------------------------------------------------------------------------

    def figure(self, name: str, **options) -> go.Figure:
        """The figure ``name`` (one of :data:`FIGURES`) with its options, drawn by the view its page
        draws it with (transformer_viz.views), e.g. ``figure("heads", layer=1, kind="cross")``. The
        options are the view's: see the module's docstring, or ``help(views.VIEWS[name])``."""
        supplied = {"id_to_tokens": self.model.tokens, "search": self._search}
        needed = {key: supplied[key] for key in views.needs(name)}
        return views.view(name)(self.result, **needed, **options).figure()

    def _search(self, beam: int) -> engine.SentenceRun:
        """This sentence by beam search of width ``beam``: this run when it is one."""
        return self.result if self.beam == beam else self.model.run(self.sentence, beam=beam).result


# The figures' names, which Run.figure takes.
FIGURES = tuple(views.VIEWS)
