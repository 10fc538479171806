"""The app's figures in a Jupyter (or VS Code) notebook: load a checkpoint once, run a sentence, and ask for
any figure by name; every figure is a plotly ``Figure``, which a notebook draws inline.

    >>> from transformer_viz import notebook as tv
    >>> model = tv.load()                                  # the shipped de-en checkpoint, or a name or a path
    >>> run = model.run("Ein Hund läuft im Park.")
    >>> run.translation
    >>> run.figure("attention", layer=0, head=2, kind="cross")       # or run.attention(0, 2, "cross")
    >>> run.tensor("decoder.0.cross_attn.weights").shape              # (1, h, T, S), a numpy array

Figures (:data:`FIGURES`, the names :meth:`Run.figure` takes): ``attention`` (one head, any of the Attention
page's steps), ``heads`` (all heads of a layer), ``positional``, ``embeddings``, ``shapes``,
``decoding_step`` and ``beam_tree``. Each calls the plot function its page calls, with the arrays the page
passes it (the functions in transformer_viz.plots, the arrays through the helpers the pages share, e.g.
plots.attention.head_arrays, text.analysis.beam_tree_data): the same figure, no second copy of it.

Tensors: :meth:`Run.tensor` returns a traced tensor by its documented name (docs/trace_names.md) as numpy,
with its batch axis B = 1. Dimensions below: S source tokens (ending in </s>), T target positions (<s> and
the translation), h heads, d_k = d_model / h, V the vocabulary.

A client of the library, like the app and the command line: no Streamlit here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from transformer_viz import engine
from transformer_viz.checkpoints import Checkpoint, CheckpointError, checkpoint_arch, load_checkpoint
from transformer_viz.core.paths import CHECKPOINTS_DIR
from transformer_viz.models.registry import DEFAULT_ARCH
from transformer_viz.models.transformer import sinusoidal_positional_encoding
from transformer_viz.models.transformer_names import trace_names
from transformer_viz.plots import attention as attention_plots
from transformer_viz.plots import embeddings as embedding_plots
from transformer_viz.plots import positional as positional_plots
from transformer_viz.plots import shapes as shape_plots
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import attention_row_figure, beam_tree_figure, causal_mask_figure, topk_figure
from transformer_viz.plots.layers import head_grid
from transformer_viz.text.analysis import beam_tree_data, step_candidates

DEFAULT_CHECKPOINT = "de-en"
# The short names of the three attentions -> the Attention page's names (plots.attention.ATTENTION_KINDS).
KINDS = {"encoder": "Encoder self-attention", "decoder": "Decoder masked self-attention",
         "cross": "Decoder cross-attention"}
ATTENTION_PARTS = ("q", "k", "v", "scores", "mask", "masked_scores", "weights", "heads")


def checkpoint_path(checkpoint: str | Path = DEFAULT_CHECKPOINT) -> Path:
    """A checkpoint directory: a path, or the name of one of the shipped checkpoints (core.paths)."""
    path = Path(checkpoint)
    if path.is_dir():
        return path
    shipped = CHECKPOINTS_DIR / str(checkpoint)
    if shipped.is_dir():
        return shipped
    names = sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if p.is_dir()) if CHECKPOINTS_DIR.is_dir() else []
    raise CheckpointError(f"no checkpoint {str(checkpoint)!r}: give a checkpoint directory, or one of the names in "
                          f"{CHECKPOINTS_DIR}: {', '.join(names) or '(none found)'}")


def load(checkpoint: str | Path = DEFAULT_CHECKPOINT, dtype: str = "float32") -> Model:
    """Load a Transformer checkpoint once (a shipped name such as "de-en" or "en-de", or a directory, ours or a
    transformers Marian one); run sentences with :meth:`Model.run`. Raises CheckpointError with a one-line
    reason for a missing or unreadable checkpoint, or one of another model family."""
    path = checkpoint_path(checkpoint)
    if checkpoint_arch(path) not in (DEFAULT_ARCH, ""):
        raise CheckpointError(f"{path} is not an encoder–decoder Transformer (config.json's \"arch\" is "
                              f"{checkpoint_arch(path)!r}); the notebook draws the Transformer's figures")
    return Model(load_checkpoint(path, dtype=dtype), path)


@dataclass(frozen=True)
class Model:
    """A loaded checkpoint (``checkpoint``: model, tokenizer, config, decoding defaults) and its directory."""
    checkpoint: Checkpoint
    path: Path

    def run(self, sentence: str, beam: int = 1) -> Run:
        """Translate ``sentence`` (greedy for beam = 1, else beam search of that width, with the checkpoint's
        decoding defaults, as the app does) and trace the forward pass over the translation. Raises InputError
        for text that cannot be run (empty, too long)."""
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

    # --- what was run ----------------------------------------------------------------------------------

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
        return f"Run({self.sentence!r} -> {self.translation!r}, S={len(self.src_tokens)}, T={len(self.tgt_tokens)})"

    # --- tensors ---------------------------------------------------------------------------------------

    def tensor_names(self) -> list[str]:
        """Every traced name, in the order the forward pass records them (docs/trace_names.md)."""
        return list(self.result.trace.shapes())

    def tensor(self, name: str) -> np.ndarray:
        """The traced tensor ``name`` as a numpy array, with the shape docs/trace_names.md gives (B = 1), e.g.
        "src.embedding" (1, S, d_model), "encoder.0.self_attn.weights" (1, h, S, S),
        "decoder.1.cross_attn.weights" (1, h, T, S), "logits" (1, T, V). KeyError names the known ones."""
        if name not in self.result.trace.shapes():
            raise KeyError(f"no traced tensor {name!r}; see tensor_names() or docs/trace_names.md")
        return self.result.trace[name].numpy()

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Traced name -> its shape."""
        return dict(self.result.trace.shapes())

    # --- figures ---------------------------------------------------------------------------------------

    def figure(self, name: str, **options) -> go.Figure:
        """The figure ``name`` (a key of :data:`FIGURES`) with its options, e.g.
        ``figure("heads", layer=1, kind="cross")``."""
        if name not in FIGURES:
            raise ValueError(f"no figure {name!r}; the figures are {', '.join(FIGURES)}")
        return FIGURES[name](self, **options)

    def attention(self, layer: int = 0, head: int = 0, kind: str = "encoder", part: str = "weights") -> go.Figure:
        """One head of one attention, as the Attention page draws it (``kind``: "encoder", "decoder" (masked
        self-attention) or "cross"). ``part``: "q" (Lq, d_k), "k", "v" (Lk, d_k), "scores" QKᵀ/√d_k (Lq, Lk),
        "mask" (True = may attend), "masked_scores" (−∞ grey), "weights" (softmax, masked cells grey) or
        "heads" = weights · V (Lq, d_k); Lq, Lk: S or T by the kind (cross: T queries, S keys)."""
        if part not in ATTENTION_PARTS:
            raise ValueError(f"no part {part!r}; the parts are {', '.join(ATTENTION_PARTS)}")
        template, q_side, k_side = attention_plots.ATTENTION_KINDS[_kind(kind)]
        q_tokens, k_tokens = self._tokens(q_side), self._tokens(k_side)
        arrays = attention_plots.head_arrays(self.result.trace, template.format(layer=_layer(self, layer)),
                                             _head(self, head), len(q_tokens), len(k_tokens))
        if part in ("q", "k", "v"):  # one colour range for Q, K and V, as on the page
            bound = float(max(np.abs(arrays[n]).max() for n in ("q", "k", "v")))
            return attention_plots.vectors_heatmap(arrays[part], q_tokens if part == "q" else k_tokens,
                                                   f"{part.upper()} (head {head})",
                                                   "query token" if part == "q" else "key token", bound=bound)
        if part == "scores":
            return attention_plots.scores_heatmap(arrays["scores"], q_tokens, k_tokens, "raw scores QKᵀ/√d_k")
        if part == "mask":
            return attention_plots.mask_heatmap(arrays["mask"], q_tokens, k_tokens)
        if part == "masked_scores":
            return attention_plots.scores_heatmap(arrays["masked_scores"], q_tokens, k_tokens,
                                                  "masked scores S + M (−∞ grey)")
        if part == "weights":
            return attention_plots.weights_heatmap(arrays["weights"], q_tokens, k_tokens, masked=~arrays["mask"])
        return attention_plots.vectors_heatmap(arrays["heads"], q_tokens, f"head {head} = weights · V", "query token")

    def heads(self, layer: int = 0, kind: str = "encoder", selected: int | None = None) -> go.Figure:
        """All h heads of one attention of a layer side by side, as the Encoder page ("encoder": (h, S, S))
        and the Decoder page ("cross": (h, T, S)) draw them; "decoder": the masked self-attention (h, T, T).
        ``selected``: a head to outline."""
        template, q_side, k_side = attention_plots.ATTENTION_KINDS[_kind(kind)]
        layer = _layer(self, layer)
        weights = self.tensor(f"{template.format(layer=layer)}.weights")[0]  # (h, Lq, Lk)
        x_labels, y_labels = token_labels(self._tokens(k_side)), token_labels(self._tokens(q_side))
        what = {"encoder": "", "decoder": "masked self-attention, ", "cross": "cross-attention, "}[kind]
        rows = "(row = target token, column = source token)" if kind == "cross" else "(row = query, column = key)"
        return head_grid(weights, x_labels, y_labels, selected=selected,
                         title=f"Layer {layer}: {what}all {len(weights)} heads {rows}")

    def positional(self, part: str = "matrix", length: int | None = None, base: float | None = None,
                   interleaved: bool = False, dims: list[int] | None = None, kind: str = "dot") -> go.Figure:
        """The Positional encoding page's figures. ``part``: "matrix" (PE, length × d_model; the sin and cos
        halves side by side unless ``interleaved``), "curves" (the columns ``dims`` of PE against the
        position), "similarity" (PE_p · PE_q, or cosine with kind="cosine", length × length) or "sum"
        (embedding + PE = the encoder's input, S × d_model each). ``length``: positions (default
        max(S, 50), at most the model's max_len); ``base``: the formula's base (default the model's)."""
        cfg = self.result.config
        length = length or min(cfg.max_len, max(len(self.src_tokens), 50))
        base = float(base or cfg.pe_base)
        if part == "sum":
            return positional_plots.embedding_plus_pe_figure(self.tensor("src.embedding")[0],
                                                             self.tensor("src.positional"),
                                                             self.tensor("src.input")[0], self.src_tokens)
        pe = _pe_matrix(length, cfg.d_model, base)  # (length, d_model)
        if part == "matrix":
            plot = positional_plots.pe_heatmap if interleaved else positional_plots.pe_halves_heatmap
            return plot(pe, f"PE, {length} positions × d_model = {cfg.d_model} (base {base:g})")
        if part == "curves":
            chosen = dims if dims is not None else sorted({0, 1, cfg.d_model // 8, cfg.d_model // 2})
            return positional_plots.pe_curves_figure(pe, chosen, cfg.d_model, base)
        if part == "similarity":
            return positional_plots.position_similarity_heatmap(positional_plots.position_similarity(pe, kind), kind,
                                                                f"PE_p · PE_q ({kind}), base {base:g}")
        raise ValueError(f"no part {part!r}; the parts are matrix, curves, similarity, sum")

    def embeddings(self, part: str = "rows") -> go.Figure:
        """The Tokens & embeddings page's figures of this sentence: "rows", the embedding E[id]·√d_model
        (S × d_model), or "cosine", the cosine similarity of those rows (S × S)."""
        embedding = self.tensor("src.embedding")[0]  # (S, d_model)
        if part == "rows":
            return embedding_plots.embedding_heatmap(embedding, self.src_tokens,
                                                     "src.embedding = E[id]·√d_model  (S × d_model)")
        if part == "cosine":
            return embedding_plots.cosine_heatmap(embedding_plots.cosine_similarity_matrix(embedding),
                                                  self.src_tokens, "Cosine similarity of the embedding rows")
        raise ValueError(f"no part {part!r}; the parts are rows, cosine")

    def shapes_figure(self) -> go.Figure:
        """The Shapes page's flow: the shape of the tensors on the way through layer 0, with this run's sizes."""
        steps = shape_plots.flow_steps(self.shapes(), trace_names(self.result.config.N))
        return shape_plots.shape_flow_figure(steps, "Loaded model, layer 0 (every layer has the same shapes)")

    def decoding_step(self, step: int = 1, part: str = "topk", layer: int = 0, head: int = 0) -> go.Figure:
        """Greedy decoding at ``step`` (1 … the number of tokens written, </s> included), as the Decoding page
        draws it: "topk", the candidates' probabilities (the one written in orange); "mask", the causal mask
        (step × step); "cross", the newest position's cross-attention over the S source tokens, in ``layer``
        and ``head``."""
        steps = self.result.decoding.steps
        if self.beam != 1 or not steps:
            raise ValueError("the steps are greedy decoding's: run the sentence with beam=1")
        t = min(max(int(step), 1), min(len(steps), len(self.tgt_tokens)))
        labels = token_labels(self.tgt_tokens[:t])
        if part == "topk":
            c = step_candidates(steps[t - 1], self.model.tokens)
            return topk_figure(c["tokens"], c["probs"], chosen=c["chosen"],
                               title=f"Top {len(c['ids'])} candidates at step {t}")
        if part == "mask":
            return causal_mask_figure(labels, title=f"Causal mask at step {t}: {t}×{t}")
        if part == "cross":
            layer, head = _layer(self, layer), _head(self, head)
            row = self.tensor(f"decoder.{layer}.cross_attn.weights")[0, head, t - 1]  # (S,)
            return attention_row_figure(row, token_labels(self.src_tokens), title=f"Cross-attention of the newest "
                                        f"position ({labels[-1]}), layer {layer}, head {head}")
        raise ValueError(f"no part {part!r}; the parts are topk, mask, cross")

    def beam_tree(self, beam: int = 3) -> go.Figure:
        """The beam-search tree of this sentence with ``beam`` hypotheses, as the Decoding page draws it
        (x: step, y: beam; the chosen translation's path thick)."""
        run = self if self.beam == beam else self.model.run(self.sentence, beam=beam)
        tree = beam_tree_data(run.result.decoding.steps, run.result.decoding.tokens[0], self.model.tokens)
        return beam_tree_figure(tree["text"], tree["parents"], tree["scores"], tree["finished"],
                                best_beam=tree["best_beam"], title=f"Beam tree, K = {beam}: a line from each "
                                                                   "hypothesis to the one it extends")

    def _tokens(self, side: str) -> list[str]:
        return self.src_tokens if side == "src" else self.tgt_tokens


@functools.lru_cache(maxsize=16)
def _pe_matrix(length: int, d_model: int, base: float) -> np.ndarray:
    return sinusoidal_positional_encoding(length, d_model, base).numpy()


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"no attention {kind!r}; the kinds are {', '.join(KINDS)}")
    return KINDS[kind]


def _layer(run: Run, layer: int) -> int:
    if not 0 <= layer < run.result.config.N:
        raise ValueError(f"layer {layer} does not exist: the model has N = {run.result.config.N} (0 … N − 1)")
    return layer


def _head(run: Run, head: int) -> int:
    if not 0 <= head < run.result.config.h:
        raise ValueError(f"head {head} does not exist: the model has h = {run.result.config.h} (0 … h − 1)")
    return head


# Figure name -> the function that draws it; Run.figure(name, **options) calls it with the run.
FIGURES = {
    "attention": Run.attention,
    "heads": Run.heads,
    "positional": Run.positional,
    "embeddings": Run.embeddings,
    "shapes": Run.shapes_figure,
    "decoding_step": Run.decoding_step,
    "beam_tree": Run.beam_tree,
}
