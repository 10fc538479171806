"""Figures for training: the model card's loss and BLEU curves, the warm-up learning-rate schedule,
and teacher forcing on one sentence (the probability of each expected token)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import BLUE, GREEN, GUIDE, INK, LIGHT_BLUE, ORANGE, make_figure


def history_figure(history: list[dict], title: str | None = None) -> go.Figure:
    """Training and validation loss per epoch (left panel) and validation BLEU (right panel)."""
    epochs = [row.get("epoch", i + 1) for i, row in enumerate(history)]

    def series(key: str, name: str, colour: str, hover: str, axis: str = "y") -> dict:
        return {"type": "scatter", "x": epochs, "y": [row.get(key) for row in history],
                "name": name, "mode": "lines+markers", "line": {"color": colour}, "yaxis": axis,
                "hovertemplate": f"epoch %{{x}}<br>{hover}<extra></extra>"}

    loss = [series("train_loss", "training loss", BLUE, "training loss %{y:.4f}"),
            series("val_loss", "validation loss", LIGHT_BLUE, "validation loss %{y:.4f}")]
    bleu = series("val_bleu", "validation BLEU", ORANGE, "BLEU %{y:.2f}")
    # Two panels side by side, each with its own axis: two scales on one panel invite
    # reading crossings.
    data = loss + [{**bleu, "xaxis": "x2", "yaxis": "y2"}]
    # A tick for every epoch while they fit a phone's half-width panel; beyond ten, plotly's own
    # spacing (the labels of 15 epochs overlapped at 390 px).
    dtick = 1 if len(epochs) <= 10 else None
    layout = {"xaxis": {"title": {"text": "epoch"}, "dtick": dtick, "domain": [0, 0.46],
                        "anchor": "y"},
              "yaxis": {"title": {"text": "loss (label-smoothed cross-entropy, nats)"},
                        "rangemode": "tozero", "anchor": "x"},
              "xaxis2": {"title": {"text": "epoch"}, "dtick": dtick, "domain": [0.56, 1.0],
                         "anchor": "y2"},
              "yaxis2": {"title": {"text": "validation BLEU"}, "rangemode": "tozero",
                         "anchor": "x2"},
              "legend": {"orientation": "h", "y": -0.25}}
    return make_figure(data, layout, title, 380)


def lr_schedule_figure(steps, lrs, warmup: int, marker_step: int | None = None,
                       marker_lr: float | None = None, title: str | None = None) -> go.Figure:
    """The learning rate over training steps, with the warm-up boundary and the peak marked."""
    steps, lrs = np.asarray(steps), np.asarray(lrs, dtype=np.float64)
    peak = int(lrs.argmax())
    data = [{"type": "scatter", "x": steps, "y": lrs, "mode": "lines", "name": "learning rate",
             "line": {"color": BLUE}, "hovertemplate": "step %{x}<br>lr %{y:.4e}<extra></extra>"},
            {"type": "scatter", "x": [steps[peak]], "y": [lrs[peak]], "mode": "markers",
             "name": "peak", "marker": {"size": 10, "color": ORANGE},
             "hovertemplate": "peak at step %{x}<br>lr %{y:.4e}<extra></extra>"}]
    if marker_step is not None and marker_lr is not None:
        data.append({"type": "scatter", "x": [marker_step], "y": [marker_lr], "mode": "markers",
                     "name": "where training stopped",
                     "marker": {"size": 10, "symbol": "x", "color": INK},
                     "hovertemplate": "step %{x}<br>lr %{y:.4e}<extra></extra>"})
    layout = {"xaxis": {"title": {"text": "training step"}},
              "yaxis": {"title": {"text": "learning rate"}, "tickformat": ".1e"},
              "shapes": [{"type": "line", "xref": "x", "x0": warmup, "x1": warmup, "yref": "paper",
                          "y0": 0, "y1": 1, "line": {"color": GUIDE, "dash": "dash"}}],
              "annotations": [{"text": f"warmup = {warmup}", "xref": "x", "x": warmup,
                               "xanchor": "left", "yref": "paper", "y": 1, "showarrow": False}],
              # Inside, top right, where the decaying curve never goes: under the axis, at a
              # projector's sizes, the legend covered the step numbers
              "legend": {"x": 1, "xanchor": "right", "y": 0.92, "yanchor": "top",
                         "bgcolor": "rgba(255, 255, 255, 0.8)"}}
    return make_figure(data, layout, title, 360)


def expected_token_figure(labels: list[str], p, title: str | None = None) -> go.Figure:
    """Per decoder position, the probability the model gives to the expected token, with −log p in
    the hover."""
    p = np.asarray(p, dtype=np.float64)
    nll = -np.log(np.clip(p, 1e-300, None))
    data = [{"type": "bar", "x": list(labels), "y": p, "customdata": nll,
             "marker": {"color": GREEN}, "name": "p(expected)", "text": [f"{v:.2f}" for v in p],
             "textposition": "outside",
             "hovertemplate": "%{x}<br>p = %{y:.6f}<br>−log p = %{customdata:.4f}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "title": {"text": "decoder input → expected output"}},
              "yaxis": {"range": [0, 1.1], "title": {"text": "p(expected token)"}}}
    return make_figure(data, layout, title, 360)
