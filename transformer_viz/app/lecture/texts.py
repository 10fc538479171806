"""The lecture as data: an ordered list of steps, one per idea, from why translation needs more than an RNN
encoder–decoder to attention beyond text. Each step names its figure builder, its text (a pure function of
the live run that fills in the run's own numbers), its formula, the page it links to and its speaker notes.
One page (transformer_viz/app/pages/lecture.py) renders any step.

No Streamlit here: the texts and the figure builders are plain functions of a :class:`Context`, tested on
a tiny model's run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from transformer_viz.plots import attention as attention_plots
from transformer_viz.plots import decoding as decoding_plots
from transformer_viz.plots import embeddings as embedding_plots
from transformer_viz.plots import layers as layer_plots
from transformer_viz.plots import lecture as lecture_plots
from transformer_viz.plots import positional as positional_plots
from transformer_viz.plots import training as training_plots
from transformer_viz.plots.common import projector_layout, token_labels, token_text
from transformer_viz.training.schedule import learning_rate

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun


@dataclass(frozen=True)
class Context:
    """What a step is drawn from: the sentence's run, the chosen layer and head, the vocabulary (ID -> token)
    and the model card (for the training step)."""
    run: SentenceRun
    layer: int = 0
    head: int = 0
    id_to_token: Callable[[list[int]], list[str]] = lambda ids: [str(i) for i in ids]
    metadata: dict = field(default_factory=dict)
    position: int = 1  # the decoding step the inference step shows (1-based)


@dataclass(frozen=True)
class FigureSpec:
    """A figure to draw: the name of a plot function (in PLOTS), its arguments, and its data for a CSV."""
    plot: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Notes:
    say: str  # what to say
    ask: str  # the question to ask the class
    careful: str = ""  # a misconception slides often carry, stated correctly


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    figure: str  # the name of its figure builder in FIGURES
    text: Callable[[Context], str]  # two to four sentences with the run's own numbers
    formula: str  # LaTeX
    page: str | None  # the url_path of the app page that shows the idea in full (linked only when it exists)
    notes: Notes


# --- live numbers ------------------------------------------------------------------------------------------

def word(token: str) -> str:
    """A token as a reader says it: without the word-start mark ('▁Hund' -> 'Hund')."""
    return str(token).replace("▁", "").strip() or str(token)


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


FOCUS_WORDS = ("they", "it", "sie", "es", "er")  # a pronoun: what does it attend to?


def focus_query(tokens: list[str]) -> int | None:
    """The position of the first pronoun of FOCUS_WORDS in ``tokens``, or None."""
    lowered = [word(t).lower() for t in tokens]
    return next((i for i, t in enumerate(lowered) if t in FOCUS_WORDS), None)


def strongest_link(weights, self_attention: bool, query: int | None = None) -> tuple[int, int, float]:
    """(query, key, weight) of the largest attention weight, another token than itself in self-attention;
    for the given query only when one is named. weights (L_q, L_k)."""
    w = np.array(weights, dtype=np.float64)
    if self_attention:
        np.fill_diagonal(w, -1.0)
    if query is not None:
        return query, int(w[query].argmax()), float(w[query].max())
    i, j = np.unravel_index(int(w.argmax()), w.shape)
    return int(i), int(j), float(w[i, j])


def _trace(ctx: Context, name: str) -> np.ndarray:
    return ctx.run.trace[name][0].numpy()


def encoder_weights(ctx: Context) -> np.ndarray:
    return _trace(ctx, f"encoder.{ctx.layer}.self_attn.weights")  # (h, S, S)


def text_rnn(ctx: Context) -> str:
    run = ctx.run
    S = len(run.src_tokens)
    return (f"An RNN encoder reads the {S} source tokens one by one, and its last state is the only thing the "
            f"decoder gets: one context vector, of the same size whether the sentence has {S} tokens or 40. "
            f"The decoder must write all {len(run.tgt_tokens)} tokens of \"{run.translation}\" (with </s>) from it. "
            f"Attention instead lets every output step look back at all {S} encoder states.")


def text_lookup(ctx: Context) -> str:
    q, k = _attention_lookup_inputs(ctx)
    weights = {name: _softmax(s) for name, s in attention_plots.lookup_scores(q, k, _bilinear(ctx)).items()}
    keys = [word(t) for t in ctx.run.src_tokens[: len(k)]]
    dot, scaled, _ = weights.values()  # q·k, q·k/√d_k, qᵀGk
    return (f"A dictionary returns the value whose key equals the query; attention returns a blend of all values. "
            f"Query \"{word(ctx.run.src_tokens[0])}\" (encoder layer {ctx.layer}, head {ctx.head}) against "
            f"{len(k)} keys: with the plain dot product \"{keys[int(dot.argmax())]}\" gets {pct(dot.max())}, "
            f"with the scaled dot product (÷√{ctx.run.config.d_k}) \"{keys[int(scaled.argmax())]}\" gets "
            f"{pct(scaled.max())}. Scaling flattens the softmax.")


def text_tokens(ctx: Context) -> str:
    run, length = ctx.run, padded_length(ctx)
    shown = ", ".join(f"\"{token_text(t)}\" = {i}" for t, i in list(zip(run.src_tokens, run.src_ids))[:4])
    return (f"The tokenizer cuts \"{run.source_text}\" into {len(run.src_ids)} tokens (subwords, ending in </s>) "
            f"and maps each to an ID: {shown}, …. In a batch every sentence is padded to one length; here "
            f"to {length}, {length - len(run.src_ids)} <pad> positions that the padding mask hides from attention.")


def text_embeddings(ctx: Context) -> str:
    run, d = ctx.run, ctx.run.config.d_model
    scaled = _trace(ctx, "src.embedding")  # (S, d_model)
    norms = np.linalg.norm(scaled, axis=-1)
    return (f"Each ID selects one row of the {run.config.vocab_size} × {d} embedding matrix E. The row is "
            f"multiplied by √d_model = √{d} = {math.sqrt(d):.1f}, so that it is not drowned by the positional "
            f"encoding added next: here the scaled rows have lengths from {norms.min():.1f} to {norms.max():.1f}, "
            f"the positional vectors {math.sqrt(d / 2):.1f}.")


def text_positional(ctx: Context) -> str:
    d, S = ctx.run.config.d_model, len(ctx.run.src_ids)
    longest = 2 * math.pi * ctx.run.config.pe_base ** ((d - 2) / d)
    return (f"Attention itself ignores word order, so each position p gets a fixed vector PE(p) of {d} numbers: "
            f"sines and cosines whose wavelengths grow from 2π ≈ 6.3 to {longest:,.0f} positions "
            f"(base {ctx.run.config.pe_base:g}). The figure shows the {S} positions of this sentence: the first "
            f"dimensions change fast from word to word, the last hardly at all.")


def text_qkv(ctx: Context) -> str:
    run, cfg = ctx.run, ctx.run.config
    S = len(run.src_ids)
    return (f"Every token's vector x is projected three times: a query q (what it looks for), a key k (what it "
            f"offers) and a value v (what it passes on). With d_model = {cfg.d_model} and h = {cfg.h} heads, each "
            f"head has d_k = {cfg.d_k} dimensions, so Q, K and V of head {ctx.head} are {S} × {cfg.d_k} "
            f"matrices for this sentence.")


def text_scores(ctx: Context) -> str:
    run = ctx.run
    p = f"decoder.{ctx.layer}.self_attn"
    scores, weights = _trace(ctx, f"{p}.scores")[ctx.head], _trace(ctx, f"{p}.weights")[ctx.head]
    T = len(run.tgt_tokens)
    masked = T * (T - 1) // 2
    i = min(2, T - 1)
    j = int(weights[i].argmax())
    return (f"Each query is compared with every key, s = q·k/√{run.config.d_k}. In the decoder the mask sets the "
            f"{masked} scores of later positions to −∞ (grey), and the softmax along each query's row turns "
            f"e^−∞ into a weight of exactly 0. Row {i} (\"{word(run.tgt_tokens[i])}\") has raw scores from "
            f"{scores[i, : i + 1].min():.2f} to {scores[i, : i + 1].max():.2f}; after the softmax "
            f"\"{word(run.tgt_tokens[j])}\" gets {pct(weights[i, j])}.")


def text_multihead(ctx: Context) -> str:
    run, cfg = ctx.run, ctx.run.config
    weights = encoder_weights(ctx)  # (h, S, S)
    tokens = run.src_tokens
    q = focus_query(tokens)
    qi, kj, w = strongest_link(weights[ctx.head], True, q)
    best_head = int(np.argmax([weights[h][qi, [k for k in range(len(tokens)) if k != qi]].max()
                               for h in range(cfg.h)]))
    _, bk, bw = strongest_link(weights[best_head], True, qi)
    return (f"{cfg.h} heads of d_k = {cfg.d_k} each look at the sentence in their own way; their outputs are "
            f"concatenated back to {cfg.d_model} dimensions and mixed by W_O. In layer {ctx.layer}, head "
            f"{ctx.head}, \"{word(tokens[qi])}\" gives {pct(w)} of its attention to \"{word(tokens[kj])}\"; "
            f"the head where \"{word(tokens[qi])}\" looks hardest at another token is head {best_head} "
            f"({pct(bw)} to \"{word(tokens[bk])}\").")


def text_add_norm(ctx: Context) -> str:
    cfg = ctx.run.config
    p = f"encoder.{ctx.layer}"
    var = _trace(ctx, f"{p}.norm1.var")
    hidden = _trace(ctx, f"{p}.ffn.hidden")
    zero = float((hidden == 0).mean())
    return (f"Around each sublayer: x + Sublayer(x), then LayerNorm to mean 0 and variance 1 per position (here "
            f"the variance before it ranges from {var.min():.2f} to {var.max():.2f}). The feed-forward network "
            f"widens each position to d_ff = {cfg.d_ff} with a ReLU: {pct(zero)} of those units are exactly 0 "
            f"for this sentence. Dropout ({cfg.dropout:g}) acts in training only.")


def text_encoder_stack(ctx: Context) -> str:
    cfg, S = ctx.run.config, len(ctx.run.src_ids)
    out = _trace(ctx, "encoder.out")
    return (f"The encoder repeats that layer N = {cfg.N} times, each with its own weights; the shape stays "
            f"({S}, {cfg.d_model}) all the way. Its output, the memory M with rows of mean length "
            f"{np.linalg.norm(out, axis=-1).mean():.1f}, is computed once and read by every decoder layer.")


def text_masked_self(ctx: Context) -> str:
    run = ctx.run
    T = len(run.tgt_tokens)
    weights = _trace(ctx, f"decoder.{ctx.layer}.self_attn.weights")[ctx.head]
    future = float(np.triu(weights, 1).sum())
    return (f"The decoder's input is <s> followed by the translation so far ({T} positions here). Its "
            f"self-attention is masked: position t sees only positions ≤ t, so training on the whole target at "
            f"once cannot peek at the next word. In layer {ctx.layer}, head {ctx.head} the weight on later "
            f"positions totals exactly {future:g}, as the mask demands.")


def text_cross(ctx: Context) -> str:
    run, cfg = ctx.run, ctx.run.config
    weights = _trace(ctx, f"decoder.{ctx.layer}.cross_attn.weights")[ctx.head]  # (T, S)
    T, S = weights.shape
    i, j, w = strongest_link(weights[1:], False)
    return (f"Cross-attention takes its queries from the decoder and its keys and values from the encoder output: "
            f"the score tensor is (B, h, T, S) = (1, {cfg.h}, {T}, {S}). In layer {ctx.layer}, head {ctx.head}, "
            f"the decoder position reading \"{word(run.tgt_tokens[i + 1])}\" gives {pct(w)} of its attention to "
            f"the source token \"{word(run.src_tokens[j])}\".")


def text_output(ctx: Context) -> str:
    run = ctx.run
    probs = _trace(ctx, "probs")  # (T, V)
    chosen = run.predicted_ids
    p = probs[np.arange(len(chosen)), chosen]
    first = ctx.id_to_token([chosen[0]])[0]
    return (f"The last decoder layer's vector at each position is multiplied by Eᵀ (the embedding matrix, tied), "
            f"giving {run.config.vocab_size} logits, and a softmax turns them into probabilities. At position 1 "
            f"the most probable token is \"{word(first)}\" with {pct(p[0])}; over the whole translation the "
            f"chosen tokens had from {pct(p.min())} to {pct(p.max())}.")


def text_training(ctx: Context) -> str:
    training = ctx.metadata.get("training") or {}
    history = ctx.metadata.get("history") or []
    warmup = int(training.get("warmup", 4000))
    steps = training.get("steps") or (history[-1].get("step") if history else None)
    smoothing = training.get("label_smoothing", 0.1)
    last = (f" The last recorded epoch ended with a validation loss of {history[-1]['val_loss']:.2f}."
            if history and "val_loss" in history[-1] else "")
    return (f"In training the decoder gets the correct target shifted right (<s> y₁ … y_{{n−1}}) and must "
            f"predict "
            f"y₁ … y_n at every position at once: teacher forcing. The loss is the cross-entropy with label "
            f"smoothing ε = {smoothing:g}; the learning rate rises for {warmup} warm-up steps, then decays as "
            f"1/√step" + (f" (this model: {steps:,} steps)." if steps else ".") + last)


def text_inference(ctx: Context) -> str:
    run = ctx.run
    t = min(max(ctx.position, 1), len(run.decoding.steps))
    step = run.decoding.steps[t - 1]
    top = ctx.id_to_token(step.top_ids[0][:2])
    probs = step.top_probs[0]
    return (f"At inference there is no target: the decoder writes one token, appends it to its input and runs "
            f"again, until </s>. At step {t} greedy decoding takes \"{word(top[0])}\" ({pct(probs[0])}); the "
            f"runner-up was \"{word(top[1]) if len(top) > 1 else '—'}\" "
            f"({pct(probs[1]) if len(probs) > 1 else '—'}). "
            f"Beam search keeps the K best partial translations instead of one. Force another candidate below "
            f"to see where the translation goes.")


def text_vit(ctx: Context) -> str:
    image, n = lecture_plots.patch_grid(224, 16)
    return (f"Attention needs tokens, not words. A Vision Transformer cuts a 224 × 224 image into 16 × 16 patches: "
            f"{n} tokens of 16·16·3 = 768 numbers each, projected to d_model, plus a [CLS] token and positional "
            f"encodings. Then it is the encoder of this lecture, unchanged: {n + 1} tokens instead of "
            f"{len(ctx.run.src_ids)}.")


def text_detr(ctx: Context) -> str:
    return ("DETR detects objects with the full encoder–decoder: the encoder reads the image's feature patches, "
            "and the decoder's queries are N = 100 learned object queries instead of words. Cross-attention "
            "lets each query look at the image; each query then outputs a class and a box, or ∅ (no object). "
            "Training matches queries to the true objects one to one (Hungarian matching). The toy DETR of this "
            "app does the same with 8 queries on 32 × 32 canvases of handwritten digits.")


# --- helpers of the figures --------------------------------------------------------------------------

LOOKUP_KEYS = 8


def _softmax(x) -> np.ndarray:
    z = np.asarray(x, dtype=np.float64)
    z = np.exp(z - z.max())
    return z / z.sum()


def _bilinear(ctx: Context) -> np.ndarray:
    return attention_plots.random_bilinear(ctx.run.config.d_k, seed=0)


def _attention_lookup_inputs(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    p = f"encoder.{ctx.layer}.self_attn"
    q = attention_plots.head_slice(ctx.run.trace[f"{p}.q"], ctx.head)
    k = attention_plots.head_slice(ctx.run.trace[f"{p}.k"], ctx.head)
    return q[0], k[:LOOKUP_KEYS]


def padded_length(ctx: Context) -> int:
    """The length the tokens step pads to: the next multiple of 8 above the sentence (at least 2 <pad>)."""
    return int(math.ceil((len(ctx.run.src_ids) + 2) / 8) * 8)


def fig_rnn(ctx: Context) -> FigureSpec:
    run = ctx.run
    return FigureSpec("rnn_context_figure", (list(run.src_tokens), list(run.tgt_tokens[1:]) + ["</s>"]),
                      {"title": "RNN encoder–decoder: the whole source passes through one vector c"},
                      {"source": list(run.src_tokens)})


def fig_lookup(ctx: Context) -> FigureSpec:
    q, k = _attention_lookup_inputs(ctx)
    weights = {name: _softmax(s) for name, s in attention_plots.lookup_scores(q, k, _bilinear(ctx)).items()}
    keys = list(ctx.run.src_tokens[: len(k)])
    return FigureSpec("lookup_figure", (weights, keys), {},
                      {"key": keys, **{f"weight: {n}": w for n, w in weights.items()}})


def fig_tokens(ctx: Context) -> FigureSpec:
    padded, mask = embedding_plots.pad_ids(ctx.run.src_ids, padded_length(ctx), ctx.run.config.pad_id)
    return FigureSpec("padding_figure", (list(ctx.run.src_tokens), padded, mask), {},
                      {"id": padded, "real token": mask})


def fig_embeddings(ctx: Context) -> FigureSpec:
    scaled = _trace(ctx, "src.embedding")
    return FigureSpec("embedding_heatmap", (scaled, list(ctx.run.src_tokens)),
                      {"title": f"E[id] × √{ctx.run.config.d_model}: one row per token"}, {"row 0": scaled[0]})


def fig_positional(ctx: Context) -> FigureSpec:
    pe = ctx.run.trace["src.positional"].numpy()
    return FigureSpec("pe_halves_heatmap", (pe,), {"title": f"PE for the {pe.shape[0]} source positions"},
                      {"position 0": pe[0]})


def fig_qkv(ctx: Context) -> FigureSpec:
    q = attention_plots.head_slice(ctx.run.trace[f"encoder.{ctx.layer}.self_attn.q"], ctx.head)
    title = f"Q of encoder layer {ctx.layer}, head {ctx.head}"
    return FigureSpec("vectors_heatmap", (q, list(ctx.run.src_tokens), title, "query token"), {}, {"q0": q[0]})


def fig_scores(ctx: Context) -> FigureSpec:
    p = f"decoder.{ctx.layer}.self_attn"
    scores, masked, weights = (_trace(ctx, f"{p}.{n}")[ctx.head] for n in ("scores", "masked_scores", "weights"))
    labels = token_labels(ctx.run.tgt_tokens)
    return FigureSpec("masked_attention_figure", (scores, masked, weights, labels, labels),
                      {"title": f"Decoder layer {ctx.layer}, head {ctx.head}: scores → mask → softmax"},
                      {"weights row 0": weights[0]})


def fig_multihead(ctx: Context) -> FigureSpec:
    weights, labels = encoder_weights(ctx), token_labels(ctx.run.src_tokens)
    return FigureSpec("head_grid", (weights, labels, labels),
                      {"selected": ctx.head, "title": f"Encoder layer {ctx.layer}: all {len(weights)} heads"},
                      {f"head {h}": weights[h].ravel() for h in range(len(weights))})


def fig_add_norm(ctx: Context) -> FigureSpec:
    p = f"encoder.{ctx.layer}.norm1"
    mean_after, var_after = layer_plots.position_stats(_trace(ctx, f"{p}.out"))
    mean, var = _trace(ctx, f"{p}.mean"), _trace(ctx, f"{p}.var")
    return FigureSpec("layernorm_stats_figure", (mean, var, mean_after, var_after, token_labels(ctx.run.src_tokens)),
                      {"title": f"Encoder layer {ctx.layer}, Add & Norm after self-attention"},
                      {"mean before": mean, "variance before": var})


def fig_encoder_stack(ctx: Context) -> FigureSpec:
    labels = token_labels(ctx.run.src_tokens)
    N = ctx.run.config.N
    weights = np.stack([_trace(ctx, f"encoder.{n}.self_attn.weights")[ctx.head] for n in range(N)])  # (N, S, S)
    return FigureSpec("head_grid", (weights, labels, labels),
                      {"title": f"Head {ctx.head} in each of the N = {N} encoder layers (panel n = layer n)",
                       "cols": min(N, 4)}, {f"layer {n}": weights[n].ravel() for n in range(N)})


def fig_masked_self(ctx: Context) -> FigureSpec:
    weights = _trace(ctx, f"decoder.{ctx.layer}.self_attn.weights")[ctx.head]
    labels = token_labels(ctx.run.tgt_tokens)
    T = len(labels)
    return FigureSpec("attention_map", (weights, labels, labels),
                      {"title": f"Decoder layer {ctx.layer}, head {ctx.head}: masked self-attention",
                       "masked": ~np.tril(np.ones((T, T), dtype=bool))}, {"weight": weights.ravel()})


def fig_cross(ctx: Context) -> FigureSpec:
    weights = _trace(ctx, f"decoder.{ctx.layer}.cross_attn.weights")[ctx.head]
    return FigureSpec("attention_map", (weights, token_labels(ctx.run.src_tokens), token_labels(ctx.run.tgt_tokens)),
                      {"title": f"Cross-attention, layer {ctx.layer}, head {ctx.head}: T × S",
                       "x_title": "source key (encoder)", "y_title": "target query (decoder)"},
                      {"weight": weights.ravel()})


def _topk(ctx: Context, t: int) -> tuple[list[str], list[float], int | None]:
    step = ctx.run.decoding.steps[t - 1]
    ids = step.top_ids[0]
    return ctx.id_to_token(ids), step.top_probs[0], ids.index(step.chosen[0]) if step.chosen[0] in ids else None


def fig_output(ctx: Context) -> FigureSpec:
    tokens, probs, chosen = _topk(ctx, 1)
    return FigureSpec("topk_figure", (tokens, probs), {"chosen": chosen, "title": "Step 1: the most probable tokens"},
                      {"token": tokens, "probability": probs})


def fig_training(ctx: Context) -> FigureSpec:
    training = ctx.metadata.get("training") or {}
    warmup, factor = int(training.get("warmup", 4000)), float(training.get("lr_factor", 1.0))
    total = int(training.get("steps") or 4 * warmup)
    steps, lrs = training_plots.lr_curve(ctx.run.config.d_model, warmup, factor, total)
    return FigureSpec("lr_schedule_figure", (steps, lrs, warmup),
                      {"marker_step": total, "marker_lr": learning_rate(total, ctx.run.config.d_model, warmup, factor),
                       "title": f"Learning rate: {warmup} warm-up steps, then 1/√step"}, {"step": steps, "lr": lrs})


def fig_inference(ctx: Context) -> FigureSpec:
    t = min(max(ctx.position, 1), len(ctx.run.decoding.steps))
    tokens, probs, chosen = _topk(ctx, t)
    return FigureSpec("topk_figure", (tokens, probs), {"chosen": chosen, "title": f"Step {t}: the top candidates"},
                      {"token": tokens, "probability": probs})


def fig_vit(ctx: Context) -> FigureSpec:
    return FigureSpec("vit_patches_figure", (224, 16), {}, {"patch": list(range(1, 197))})


def fig_detr(ctx: Context) -> FigureSpec:
    return FigureSpec("detr_queries_figure", (10,), {}, {"query": list(range(10))})


FIGURES: dict[str, Callable[[Context], FigureSpec]] = {
    f.__name__.removeprefix("fig_"): f for f in (
        fig_rnn, fig_lookup, fig_tokens, fig_embeddings, fig_positional, fig_qkv, fig_scores, fig_multihead,
        fig_add_norm, fig_encoder_stack, fig_masked_self, fig_cross, fig_output, fig_training, fig_inference,
        fig_vit, fig_detr)}

PLOTS: dict[str, Callable] = {f.__name__: f for f in (
    lecture_plots.rnn_context_figure, lecture_plots.vit_patches_figure, lecture_plots.detr_queries_figure,
    attention_plots.lookup_figure, attention_plots.vectors_heatmap, embedding_plots.padding_figure,
    embedding_plots.embedding_heatmap, positional_plots.pe_halves_heatmap, layer_plots.masked_attention_figure,
    layer_plots.head_grid, layer_plots.attention_map, layer_plots.layernorm_stats_figure,
    decoding_plots.topk_figure, training_plots.lr_schedule_figure)}

PROJECTOR_HEIGHT = 430  # px: with the page's header and navigation row, inside a 1280×720 screen


def draw(plot: str, projector: bool, *args, **kwargs):
    """The figure PLOTS[plot](*args, **kwargs), in projector style (projector_layout) when asked."""
    fig = PLOTS[plot](*args, **kwargs)
    return projector_layout(fig, PROJECTOR_HEIGHT) if projector else fig


# --- the steps ------------------------------------------------------------------------------------------

def lines(*parts: str) -> str:
    """A formula on several centred lines, each short enough for the text column beside the figure."""
    return r"\begin{gathered}" + r" \\ ".join(parts) + r"\end{gathered}"



STEPS: tuple[Step, ...] = (
    Step("rnn", "Why more than an RNN encoder–decoder", "rnn", text_rnn,
         lines(r"h_t = f(h_{t-1}, x_t),\quad c = h_S", r"s_t = g(s_{t-1}, y_{t-1}, c)"), "rnn",
         Notes("Start from the slide's RNN: the encoder squeezes the sentence into c, the decoder unrolls from it.",
               "What happens to the first words of a 40-word sentence by the time the encoder reaches the end?")),
    Step("lookup", "Attention as a soft database lookup", "lookup", text_lookup,
         lines(r"\text{sim}(q,k) \in \Big\{q^\top k,\ \frac{q^\top k}{\sqrt{d_k}},\ q^\top W k\Big\}",
               r"\text{result} = \sum_j \text{softmax}_j(\text{sim}(q, k_j))\, v_j"), "attention",
         Notes("A lookup with soft matches: every key matches a little, the softmax decides how much.",
               "What would a hard lookup return if no key equals the query?",
               "The softmax runs over each query's keys: one row of the weight matrix sums to 1. In this app's "
               "figures queries are rows and keys are columns (some slides draw queries as columns).")),
    Step("tokens", "Tokens, IDs and padding", "tokens", text_tokens,
         lines(r"\text{text} \to (t_1, \dots, t_S)", r"\to (\text{id}_1, \dots, \text{id}_S) \in \{0, \dots, V-1\}^S"),
         "tokens",
         Notes("Subwords, not words: rare words are spelled from pieces; </s> ends every source.",
               "Why pad at all, if the padding is masked away anyway?")),
    Step("embeddings", "Word embeddings × √d_model", "embeddings", text_embeddings,
         r"x_i = E[\text{id}_i] \cdot \sqrt{d_{model}}", "tokens",
         Notes("A lookup table, learned; the same matrix (transposed) is the output layer here.",
               "Why multiply by √d_model rather than leave the rows as they are?")),
    Step("positional", "Sinusoidal positional encodings", "positional", text_positional,
         lines(r"PE_{(p, 2i)} = \sin\!\big(p / 10000^{2i/d_{model}}\big)",
               r"PE_{(p, 2i+1)} = \cos\!\big(p / 10000^{2i/d_{model}}\big)"), "positional",
         Notes("Each pair of dimensions is a clock at its own speed; together they give every position a unique code.",
               "Without them, would 'dog bites man' and 'man bites dog' look different to attention?",
               "The base is 10000 (the paper's; the text gives this model's); some slides write 1000.")),
    Step("qkv", "Self-attention: queries, keys and values", "qkv", text_qkv,
         lines(r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V", r"Q, K, V \in \mathbb{R}^{S \times d_k}"), "attention",
         Notes("Three learned projections of the same X: self-attention.",
               "Why not compare the embeddings x_i · x_j directly?")),
    Step("scores", "Scores, scaling, the −∞ mask and the softmax", "scores", text_scores,
         lines(r"A = \text{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)",
               r"M_{ij} = \begin{cases}0 & j \le i\\ -\infty & j > i\end{cases}"), "attention",
         Notes("Scale, mask, softmax, in that order; e^−∞ = 0 is why the mask uses −∞ and not 0.",
               "What would a mask of 0 instead of −∞ do to the weights?",
               "The softmax runs along each query's row (over the keys); the figure draws queries as rows.")),
    Step("multihead", "Multi-head attention", "multihead", text_multihead,
         lines(r"\text{MultiHead}(Q,K,V)", r"= \text{Concat}(\text{head}_1, \dots, \text{head}_h)\,W_O",
               r"d_k = d_{model}/h"), "encoder",
         Notes("h small attentions in parallel, each in d_k dimensions: the cost of one full-width head.",
               "Look at the heads: do some of them attend to the previous token, or to the sentence end?")),
    Step("add_norm", "Add & Norm, feed-forward, dropout", "add_norm", text_add_norm,
         lines(r"x' = \text{LayerNorm}(x + \text{Sublayer}(x))", r"\text{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2"),
         "encoder",
         Notes("The residual keeps the input; LayerNorm keeps the scale; the FFN works on each position alone.",
               "Which sublayer mixes information between positions, and which never does?")),
    Step("encoder_stack", "The encoder stack", "encoder_stack", text_encoder_stack,
         lines(r"M = \text{Enc}_N(\cdots \text{Enc}_1(X + PE))", r"M \in \mathbb{R}^{S \times d_{model}}"), "encoder",
         Notes("N identical layers, different weights; the output M is the decoder's memory.",
               "Why can all source positions be computed at once here, unlike in the RNN?")),
    Step("masked_self", "The decoder's masked self-attention", "masked_self", text_masked_self,
         lines(r"A = \text{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M_{\text{causal}}\Big)",
               r"A \in \mathbb{R}^{T \times T}"), "decoder",
         Notes("In training the whole target is fed at once; the mask makes that equal to writing it word by word.",
               "What would the model learn if it could see the next word while predicting it?")),
    Step("cross", "Cross-attention", "cross", text_cross,
         lines(r"\text{softmax}\Big(\frac{Q_{dec} K_{enc}^\top}{\sqrt{d_k}}\Big) V_{enc}",
               r"\text{scores: } (B, h, T, S)"), "decoder",
         Notes("Here the decoder consults the source: the role the RNN's single c played, now per output step.",
               "Which source word should the decoder look at when it writes the next word?",
               "Q comes from the decoder, K and V from the encoder (some slides swap them); the score tensor is "
               "(B, h, T_target, S_source), not (B, T, T).")),
    Step("output", "The output layer and the softmax", "output", text_output,
         r"P(y_t \mid y_{<t}, x) = \text{softmax}(h_t E^\top)", "decoder",
         Notes("One probability per vocabulary entry; the model is a next-token classifier.",
               "Is the most probable token always the right one?")),
    Step("training", "Training: teacher forcing, label smoothing, the schedule", "training", text_training,
         lines(r"\mathcal{L} = -\sum_t \log P(y_t \mid y_{<t}, x)",
               r"lr = d_{model}^{-0.5} \min(s^{-0.5},\ s \cdot w^{-1.5})",
               r"s = \text{step},\ w = \text{warm-up steps}"), "training",
         Notes("Teacher forcing: the correct previous words are fed in, never the model's own mistakes.",
               "What goes wrong at inference when the model only ever saw correct prefixes?")),
    Step("inference", "Inference: greedy and beam search", "inference", text_inference,
         r"\hat y_t = \arg\max_v P(v \mid \hat y_{<t}, x)", "decoding",
         Notes("One token at a time; each choice becomes input. Force another word and watch the rest change.",
               "If the class picks the second-best word here, will the translation get worse or just different?")),
    Step("vit", "Attention beyond text: the Vision Transformer", "vit", text_vit,
         lines(r"N = \frac{HW}{P^2} = \frac{224 \cdot 224}{16^2} = 196",
               r"z_0 = [x_{cls};\, x_p^1 E; \dots; x_p^N E] + E_{pos}"), "vit",
         Notes("Same encoder, other tokens: an image is a sequence of patches.",
               "What plays the role of word order for patches?")),
    Step("detr", "Attention beyond text: DETR", "detr", text_detr,
         lines(r"\hat y_i = (\hat c_i, \hat b_i),\quad i = 1, \dots, N",
               r"\hat\sigma = \arg\min_\sigma \sum_i \mathcal{L}_{match}(y_i, \hat y_{\sigma(i)})"), "detr",
         Notes("The decoder's queries are learned slots, not words; each finds one object or says ∅.",
               "Why does DETR need no non-maximum suppression?")),
)


def step_number(raw, n: int = len(STEPS)) -> int:
    """The 1-based step a URL's ``step`` names; 1 when it is missing, malformed or out of range."""
    text = str(raw).strip() if raw is not None else ""
    return int(text) if re.fullmatch(r"[0-9]{1,4}", text) and 1 <= int(text) <= n else 1


# --- the lecture's own examples ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Preset:
    label: str
    src_lang: str
    sentence: str
    reference: str  # the translation the lecture's slide gives


PRESETS: tuple[Preset, ...] = (
    Preset("RNN slide (de→en)", "de", "Komm her bitte.", "Please come here."),
    Preset("RNN slide (en→de)", "en", "Please come here.", "Komm her bitte."),
    Preset("What does “they” attend to? (en→de)", "en",
           "The kids were scared of the lions, so they left right away.",
           "Die Kinder hatten Angst vor den Löwen, also gingen sie sofort."),
    Preset("Masking slide (en→de)", "en", "Where there is a will, there is a way.",
           "Wo ein Wille ist, ist auch ein Weg."),
)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def chosen_probabilities(run: SentenceRun) -> np.ndarray:
    """The probability the model gave each token it wrote (and the final </s>), from the traced pass. (T,)"""
    probs = run.trace["probs"][0].numpy()  # (T, V)
    return probs[np.arange(len(run.predicted_ids)), run.predicted_ids]


UNSURE = 0.25  # a written token with less probability than this: the model was guessing there


def preset_verdict(preset: Preset, run: SentenceRun, id_to_token: Callable[[list[int]], list[str]]) -> str:
    """An honest line on the model's translation of a preset: the slide's translation beside it, how many of
    the slide's words it shares, and the word the model was least sure of. When it shares under 60 % of the
    words and some word was written with p < UNSURE, it says plainly that the translation is likely wrong."""
    wanted = _words(preset.reference)
    shared = len(wanted & _words(run.translation))
    p = chosen_probabilities(run)
    weakest = int(p.argmin())
    token = word(id_to_token([run.predicted_ids[weakest]])[0])
    line = (f"The slide translates it as “{preset.reference}”; this model writes “{run.translation}” "
            f"({shared} of the slide's {len(wanted)} words; its least sure word, “{token}”, "
            f"had p = {pct(p[weakest])}).")
    if shared < 0.6 * len(wanted) and p[weakest] < UNSURE:
        line += (" This translation is likely wrong in places, and the model was unsure there: say so. It is a "
                 "small model trained on captions and short everyday sentences.")
    elif shared < 0.6 * len(wanted):
        line += " Other words than the slide's, written confidently: another wording, or a mistake? Ask the class."
    return line


def preset_for(sentence: str) -> Preset | None:
    return next((p for p in PRESETS if p.sentence == sentence.strip()), None)
