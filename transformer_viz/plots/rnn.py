"""Figures for the recurrent encoder–decoders: hidden states step by step, the context vector as the
only bridge, the decoder unrolled, sequential steps, time per sentence and BLEU by sentence
length."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (BLUE, DIVERGING, GREEN, GUIDE, LIGHT_BLUE, ORANGE, PURPLE,
                                          category_axes, heatmap_traces, make_figure, safe_label,
                                          token_text)

MODEL_COLOURS = {"RNN": LIGHT_BLUE, "RNN + attention": BLUE, "Transformer": ORANGE}


def hidden_states_figure(states, labels: list[str], title: str | None = None,
                         highlight: int | None = None,
                         highlight_text: str = "context c") -> go.Figure:
    """GRU states (positions × units), one row per step, on a diverging scale centred on 0 (a GRU
    state lies in (−1, 1)); the row ``highlight`` (the encoder's last state) is outlined."""
    states = np.asarray(states, dtype=np.float64)
    units = list(range(states.shape[1]))
    traces = heatmap_traces(states, units, list(labels), "state", colorscale=DIVERGING, zmin=-1.0,
                            zmax=1.0, colorbar={"title": {"text": "state"}})
    layout = category_axes(units, "hidden unit", "step (token read)")
    layout["xaxis"].update(type="linear", tickangle=0)
    if highlight is not None:
        layout["shapes"] = [{"type": "rect", "xref": "x", "yref": "y", "x0": -0.5,
                             "x1": states.shape[1] - 0.5, "y0": highlight - 0.5,
                             "y1": highlight + 0.5, "line": {"color": ORANGE, "width": 3}}]
        layout["annotations"] = [{"x": states.shape[1] - 0.5, "y": labels[highlight], "xref": "x",
                                  "yref": "y", "text": highlight_text, "showarrow": False,
                                  "xanchor": "right", "font": {"color": ORANGE},
                                  "bgcolor": "rgba(255,255,255,0.8)"}]
    return make_figure(traces, layout, title, max(220, 110 + 26 * states.shape[0]))


def context_figure(context, title: str | None = None) -> go.Figure:
    """The context vector c (d_hidden numbers) as one strip: everything the decoder without
    attention knows about the source."""
    context = np.asarray(context, dtype=np.float64)[None, :]  # (1, d)
    units = list(range(context.shape[1]))
    traces = heatmap_traces(context, units, ["c"], "c", colorscale=DIVERGING, zmin=-1.0, zmax=1.0,
                            showscale=False)
    layout = category_axes(units, "hidden unit")
    layout["xaxis"].update(type="linear", tickangle=0)
    layout["shapes"] = [{"type": "rect", "xref": "paper", "yref": "paper", "x0": 0, "x1": 1,
                         "y0": 0, "y1": 1, "line": {"color": ORANGE, "width": 3}}]
    return make_figure(traces, layout, title, 150)


def unrolled_figure(tokens: list[str], probs, title: str | None = None) -> go.Figure:
    """The decoder unrolled: one bar per step, the token it chose (greedy) and that token's
    probability."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = [f"{t + 1} {safe_label(token_text(tok))}" for t, tok in enumerate(tokens)]
    data = [{"type": "bar", "x": labels, "y": probs, "marker": {"color": BLUE}, "name": "p(chosen)",
             "text": [f"{p:.2f}" for p in probs], "textposition": "outside", "cliponaxis": False,
             "hovertemplate": "step %{x}<br>p = %{y:.4f}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "title": {"text": "step t: the token chosen"}},
              "yaxis": {"range": [0, 1.1], "title": {"text": "its probability"}}}
    return make_figure(data, layout, title, 300)


def steps_figure(S: int, T: int, N: int, title: str | None = None) -> go.Figure:
    """Steps that must run one after another, in training (teacher forcing): the RNN's S encoder and
    T decoder steps, against the Transformer's N encoder and N decoder layers (every
    position at once)."""
    models = ["RNN", "Transformer"]
    data = [{"type": "bar", "x": models, "y": [S, N], "name": "encoder", "marker": {"color": BLUE},
             "text": [f"S = {S}", f"N = {N}"], "textposition": "inside",
             "hovertemplate": "%{x} encoder: %{y} steps<extra></extra>"},
            {"type": "bar", "x": models, "y": [T, N], "name": "decoder (training)",
             "marker": {"color": ORANGE}, "text": [f"T = {T}", f"N = {N}"],
             "textposition": "inside", "hovertemplate": "%{x} decoder: %{y} steps<extra></extra>"}]
    layout = {"barmode": "stack", "yaxis": {"title": {"text": "sequential steps"}},
              "annotations": [{"x": m, "y": v, "text": f"{v}", "showarrow": False,
                               "yanchor": "bottom"}
                              for m, v in zip(models, (S + T, 2 * N))]}
    return make_figure(data, layout, title, 320)


def timing_figure(lengths: list[int], seconds: dict[str, list[float]],
                  title: str | None = None) -> go.Figure:
    """Milliseconds per sentence against its length, one line per model."""
    colours = [LIGHT_BLUE, BLUE, ORANGE, GREEN, PURPLE]
    data = [{"type": "scatter", "mode": "lines+markers", "x": list(lengths),
             "y": [1000 * s for s in values], "name": name,
             "line": {"color": MODEL_COLOURS.get(name, colours[i % len(colours)])},
             "hovertemplate": f"{name}<br>%{{x}} tokens: %{{y:.1f}} ms<extra></extra>"}
            for i, (name, values) in enumerate(seconds.items())]
    layout = {"xaxis": {"title": {"text": "source tokens S<br>(and as many written)"}},
              "yaxis": {"title": {"text": "ms per sentence"}, "rangemode": "tozero"}}
    return make_figure(data, layout, title, 340)


def _kept(values: list[float | None]) -> str:
    """" (keeps 31 %)": BLEU on the longest bucket as a share of BLEU on the shortest (both
    measured)."""
    known = [v for v in values if v is not None]
    return (f" (keeps {100 * known[-1] / known[0]:.0f} %)" if len(known) >= 2 and known[0] > 0
            else "")


def bucket_bleu_figure(buckets: list[str], bleu: dict[str, list[float | None]],
                       counts: list[int] | None = None, title: str | None = None) -> go.Figure:
    """BLEU per source-length bucket, one line per model: the shape of Bahdanau et al. (2015),
    Figure 2. Each legend entry says how much of its BLEU on the shortest bucket the model
    keeps on the longest."""
    x = [f"{b}<br>({n})" for b, n in zip(buckets, counts)] if counts else list(buckets)
    data = [{"type": "scatter", "mode": "lines+markers", "x": x,
             "y": [np.nan if v is None else v for v in values], "name": name + _kept(values),
             "line": {"color": MODEL_COLOURS.get(name, GUIDE), "width": 3},
             "hovertemplate": f"{name}<br>%{{x}}: BLEU %{{y:.1f}}<extra></extra>"}
            for name, values in bleu.items()]
    layout = {"xaxis": {"type": "category",
                        "title": {"text": "source length in subword tokens<br>(sentences)"}},
              "yaxis": {"title": {"text": "sacreBLEU"}, "rangemode": "tozero"},
              # under the figure: at its right, on a phone, the legend left the lines a third of
              # the width and the length labels ran into each other
              "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom",
                         "yref": "container"}}
    return make_figure(data, layout, title, 400)
