"""The figure of each lecture step: a builder per step turns the run (:class:`Context`) into a
:class:`FigureSpec` (the plot function itself, its arguments and the data for a CSV), and
:func:`draw` makes the figure, for a screen or a projector."""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots import attention as attention_plots
from transformer_viz.plots import decoding as decoding_plots
from transformer_viz.plots import embeddings as embedding_plots
from transformer_viz.plots import heads as heads_plots
from transformer_viz.plots import layers as layer_plots
from transformer_viz.plots import lecture as lecture_plots
from transformer_viz.plots import patching as patching_plots
from transformer_viz.plots import positional as positional_plots
from transformer_viz.plots import sampling as sampling_plots
from transformer_viz.plots import training as training_plots
from transformer_viz.plots.common import projector_layout, safe_label, token_labels, token_text
from transformer_viz.text.analysis import beam_tree_data
from transformer_viz.training.schedule import learning_rate
from transformer_viz.views.lecture.context import (
    LOOKUP_KEYS, Context, detr_queries, encoder_weights, head_drops, lookup_weights,
    padded_length, traced)
from transformer_viz.views.lecture.why import lecture_pair
from transformer_viz.views.spec import FigureSpec


def lr_curve(d_model: int, warmup: int, factor: float, total_steps: int,
             points: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Steps (always including ``warmup`` itself, where the schedule peaks) and the learning rate
    there: what lr_schedule_figure draws, here and on the Training page."""
    total_steps = max(int(total_steps), int(warmup) + 1, 2)
    steps = np.unique(np.concatenate([np.linspace(1, total_steps, points).round().astype(int),
                                      [int(warmup)]]))
    steps = steps[steps >= 1]
    return steps, np.array([learning_rate(int(s), d_model, warmup, factor) for s in steps])


def fig_rnn(ctx: Context) -> FigureSpec:
    run = ctx.run
    return FigureSpec(lecture_plots.rnn_context_figure,
                      (list(run.src_tokens), list(run.tgt_tokens[1:]) + ["</s>"]),
                      {"title": "RNN encoder–decoder: the whole source passes "
                                "through one vector c"},
                      {"source": list(run.src_tokens)})


def fig_lookup(ctx: Context) -> FigureSpec:
    weights = lookup_weights(ctx)
    keys = list(ctx.run.src_tokens[:LOOKUP_KEYS])
    S = len(ctx.run.src_tokens)
    # The softmax runs over the keys drawn only: the title says which, so that its shares are not
    # looked for in the next steps' weights, which spread over all S keys.
    shown = f"the first {len(keys)} of {S} keys" if len(keys) < S else f"all {S} keys"
    return FigureSpec(attention_plots.lookup_figure, (weights, keys),
                      {"title": f"Soft lookup over {shown}: the share of each value"},
                      {"key": keys, **{f"weight: {n}": w for n, w in weights.items()}})


def fig_tokens(ctx: Context) -> FigureSpec:
    padded, mask = embedding_plots.pad_ids(ctx.run.src_ids, padded_length(ctx),
                                           ctx.run.config.pad_id)
    return FigureSpec(embedding_plots.padding_figure, (list(ctx.run.src_tokens), padded, mask), {},
                      {"id": padded, "real token": mask})


def fig_embeddings(ctx: Context) -> FigureSpec:
    scaled = traced(ctx, "src.embedding")
    return FigureSpec(embedding_plots.embedding_heatmap, (scaled, list(ctx.run.src_tokens)),
                      {"title": f"E[id] × √{ctx.run.config.d_model}: one row per token"},
                      {"row 0": scaled[0]})


def fig_positional(ctx: Context) -> FigureSpec:
    pe = ctx.run.trace["src.positional"].numpy()
    return FigureSpec(positional_plots.pe_halves_heatmap, (pe,),
                      {"title": f"PE for the {pe.shape[0]} source positions"},
                      {"position 0": pe[0]})


def fig_qkv(ctx: Context) -> FigureSpec:
    q = attention_plots.head_slice(ctx.run.trace[f"encoder.{ctx.layer}.self_attn.q"], ctx.head)
    title = f"Q of encoder layer {ctx.layer}, head {ctx.head}"
    return FigureSpec(attention_plots.vectors_heatmap,
                      (q, list(ctx.run.src_tokens), title, "query token"), {}, {"q0": q[0]})


def fig_scores(ctx: Context) -> FigureSpec:
    p = f"decoder.{ctx.layer}.self_attn"
    scores, masked, weights = (traced(ctx, f"{p}.{n}")[ctx.head]
                               for n in ("scores", "masked_scores", "weights"))
    labels = token_labels(ctx.run.tgt_tokens)
    return FigureSpec(layer_plots.masked_attention_figure,
                      (scores, masked, weights, labels, labels),
                      {"title": f"Decoder layer {ctx.layer}, head {ctx.head}: scores → mask → "
                                "softmax"}, {"weights row 0": weights[0]})


def fig_multihead(ctx: Context) -> FigureSpec:
    weights, labels = encoder_weights(ctx), token_labels(ctx.run.src_tokens)
    return FigureSpec(layer_plots.head_grid, (weights, labels, labels),
                      # 4 panels of 160 px fit a 1280 px projector's figure column (731 px) beside
                      # the text, their token labels at 18 px included
                      {"selected": ctx.head,
                       "title": f"Encoder layer {ctx.layer}: all {len(weights)} heads",
                       "panel_width": 160},
                      {f"head {h}": weights[h].ravel() for h in range(len(weights))})


def fig_add_norm(ctx: Context) -> FigureSpec:
    p = f"encoder.{ctx.layer}.norm1"
    mean_after, var_after = layer_plots.position_stats(traced(ctx, f"{p}.out"))
    mean, var = traced(ctx, f"{p}.mean"), traced(ctx, f"{p}.var")
    return FigureSpec(layer_plots.layernorm_stats_figure,
                      (mean, var, mean_after, var_after, token_labels(ctx.run.src_tokens)),
                      {"title": f"Encoder layer {ctx.layer}, Add & Norm after self-attention"},
                      {"mean before": mean, "variance before": var})


def fig_encoder_stack(ctx: Context) -> FigureSpec:
    labels = token_labels(ctx.run.src_tokens)
    N = ctx.run.config.N
    # (N, S, S)
    weights = np.stack([traced(ctx, f"encoder.{n}.self_attn.weights")[ctx.head] for n in range(N)])
    return FigureSpec(layer_plots.head_grid, (weights, labels, labels),
                      {"title": f"Head {ctx.head} in each of the N = {N} encoder layers",
                       "cols": min(N, 4), "panel_name": "layer"},
                      {f"layer {n}": weights[n].ravel() for n in range(N)})


def fig_masked_self(ctx: Context) -> FigureSpec:
    weights = traced(ctx, f"decoder.{ctx.layer}.self_attn.weights")[ctx.head]
    labels = token_labels(ctx.run.tgt_tokens)
    T = len(labels)
    return FigureSpec(layer_plots.attention_map, (weights, labels, labels),
                      {"title": f"Decoder layer {ctx.layer}, head {ctx.head}: masked "
                                "self-attention",
                       "masked": ~np.tril(np.ones((T, T), dtype=bool))},
                      {"weight": weights.ravel()})


def fig_cross(ctx: Context) -> FigureSpec:
    weights = traced(ctx, f"decoder.{ctx.layer}.cross_attn.weights")[ctx.head]
    return FigureSpec(layer_plots.attention_map,
                      (weights, token_labels(ctx.run.src_tokens), token_labels(ctx.run.tgt_tokens)),
                      {"title": f"Cross-attention, layer {ctx.layer}, head {ctx.head}: T × S",
                       "x_title": "source key (encoder)", "y_title": "target query (decoder)"},
                      {"weight": weights.ravel()})


def _topk(ctx: Context, t: int) -> tuple[list[str], list[float], int | None]:
    step = ctx.run.decoding.steps[t - 1]
    ids = step.top_ids[0]
    return (ctx.id_to_token(ids), step.top_probs[0],
            ids.index(step.chosen[0]) if step.chosen[0] in ids else None)


def fig_output(ctx: Context) -> FigureSpec:
    tokens, probs, chosen = _topk(ctx, 1)
    return FigureSpec(decoding_plots.topk_figure, (tokens, probs),
                      {"chosen": chosen, "title": "Step 1: the most probable tokens"},
                      {"token": tokens, "probability": probs})


def fig_training(ctx: Context) -> FigureSpec:
    training = ctx.metadata.get("training") or {}
    warmup, factor = int(training.get("warmup", 4000)), float(training.get("lr_factor", 1.0))
    total = int(training.get("steps") or 4 * warmup)
    steps, lrs = lr_curve(ctx.run.config.d_model, warmup, factor, total)
    return FigureSpec(training_plots.lr_schedule_figure, (steps, lrs, warmup),
                      {"marker_step": total,
                       "marker_lr": learning_rate(total, ctx.run.config.d_model, warmup, factor),
                       "title": f"Learning rate: {warmup} warm-up steps, then 1/√step"},
                      {"step": steps, "lr": lrs})


def fig_inference(ctx: Context) -> FigureSpec:
    beam = ctx.beam_run
    if beam is not None:
        tree = beam_tree_data(beam.decoding.steps, beam.decoding.tokens[0], ctx.id_to_token)
        K = max((len(row) for row in tree["parents"]), default=1)
        return FigureSpec(decoding_plots.beam_tree_figure,
                          (tree["text"], tree["parents"], tree["scores"], tree["finished"]),
                          {"best_beam": tree["best_beam"], "down": True,
                           "title": f"Beam search, K = {K}: the {K} best partial translations, "
                                    "the chosen one orange"},
                          {"token": [" ".join(row) for row in tree["text"]]})
    t = min(max(ctx.position, 1), len(ctx.run.decoding.steps))
    tokens, probs, chosen = _topk(ctx, t)
    return FigureSpec(decoding_plots.topk_figure, (tokens, probs),
                      {"chosen": chosen, "title": f"Step {t}: the top candidates"},
                      {"token": tokens, "probability": probs})


# bars: the heads that matter most; a projector's column holds no more at a legible size
HEADS_SHOWN = 16


def fig_heads(ctx: Context) -> FigureSpec:
    numbers = head_drops(ctx)
    names = [str(head) for head in numbers.heads]
    # The largest drops, largest first, so the heads the text names lead; the CSV keeps every head.
    shown = f"the {HEADS_SHOWN} of {len(names)} heads" if len(names) > HEADS_SHOWN else "each head"
    return FigureSpec(heads_plots.head_drop_figure, (names, numbers.drops),
                      {"title": f"log p(translation) falls most without {shown}",
                       "top": HEADS_SHOWN},
                      {"head": names, "drop (nats)": numbers.drops})


def why_labels(p) -> list[str]:
    """The patched pair's source tokens, the replaced one as "clean→corrupted" (as the page)."""
    labels = token_labels(p.src_tokens)
    for s in p.changed:
        labels[s] = f"{s} {safe_label(token_text(p.src_tokens[s]))}→" \
                    f"{safe_label(token_text(p.corrupted_tokens[s]))}"
    return labels


def fig_why(ctx: Context) -> FigureSpec:
    p = lecture_pair(ctx).patching
    if p is None:  # no replacement changes a word (the text says so): the heads' drops instead
        return fig_heads(ctx)
    g, labels = p.grids, why_labels(p)
    title = (f"Encoder cells copied from the clean run: how much of "
             f"“{safe_label(token_text(p.clean_token))}” comes back")
    return FigureSpec(patching_plots.encoder_patch_figure,
                      (g.encoder, g.encoder_all, labels, list(p.changed)), {"title": title},
                      {"source": labels + ["all positions"],
                       **{f"layer {i}": list(row) + [g.encoder_all[i]]
                          for i, row in enumerate(g.encoder)}})


def fig_decoder_only(ctx: Context) -> FigureSpec:
    src, tgt = ctx.run.src_tokens, ctx.run.tgt_tokens
    # a decoder-only model that translated would read source and target as one text
    one = token_labels(src + tgt)
    return FigureSpec(sampling_plots.families_figure, (token_labels(src), token_labels(tgt), one),
                      {"title": "Encoder–decoder: three attentions. Decoder-only: one, causal"},
                      {"attention": ["encoder self", "decoder self (masked)", "cross",
                                     "decoder-only (causal)"],
                       "queries": [len(src), len(tgt), len(tgt), len(one)],
                       "keys": [len(src), len(tgt), len(src), len(one)]})


def fig_vit(ctx: Context) -> FigureSpec:
    return FigureSpec(lecture_plots.vit_patches_figure, (224, 16), {},
                      {"patch": list(range(1, 197))})


def fig_detr(ctx: Context) -> FigureSpec:
    n = detr_queries()
    return FigureSpec(lecture_plots.detr_queries_figure, (n,), {}, {"query": list(range(n))})


BUILDERS = (fig_rnn, fig_lookup, fig_tokens, fig_embeddings, fig_positional, fig_qkv, fig_scores,
            fig_multihead, fig_add_norm, fig_encoder_stack, fig_masked_self, fig_cross, fig_output,
            fig_training, fig_inference, fig_heads, fig_why, fig_decoder_only, fig_vit, fig_detr)
# Keyed by the builder itself: `step.figure in FIGURES` checks that a step names one of them.
FIGURES: dict[Callable[[Context], FigureSpec], Callable[[Context], FigureSpec]] = {
    f: f for f in BUILDERS}

PROJECTOR_HEIGHT = 430  # px: with the page's header and navigation row, inside a 1280×720 screen


@functools.cache
def for_projector(plot: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """``plot`` drawing its figure in projector style (projector_layout, PROJECTOR_HEIGHT high)."""
    @functools.wraps(plot)
    def projector_plot(*args, **kwargs) -> go.Figure:
        return projector_layout(plot(*args, **kwargs), PROJECTOR_HEIGHT)

    # The app's figure cache tells figures apart by their function's name: the two
    # styles need two names.
    projector_plot.__qualname__ = f"{plot.__qualname__}.for_projector"
    return projector_plot


def drawer(plot: Callable[..., go.Figure], projector: bool) -> Callable[..., go.Figure]:
    """The function that draws ``plot``'s figure in the style asked for."""
    return for_projector(plot) if projector else plot


def draw(plot: Callable[..., go.Figure], projector: bool, *args, **kwargs) -> go.Figure:
    """The figure plot(*args, **kwargs), in projector style (projector_layout) when asked."""
    return drawer(plot, projector)(*args, **kwargs)
