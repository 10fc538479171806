"""Figures for a decoder-only model's next token: the distribution before and after the temperature,
the set top-k and top-p keep, and the two model families' attention masks side by side."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (ALLOWED_COLOUR, BLUE, FAINT, LIGHT_BLUE, ORANGE, flat,
                                          heatmap_traces, make_figure, safe_label, token_text)
from transformer_viz.plots.layers import grid_axes


def _labels(tokens: list[str]) -> list[str]:
    # the rank keeps labels unique
    return [f"{i + 1}. {safe_label(token_text(t))}" for i, t in enumerate(tokens)]


def _bars(tokens: list[str], probs, colours: list[str], name: str) -> dict:
    probs = np.asarray(probs, dtype=np.float64)
    return {"type": "bar", "x": probs, "y": _labels(tokens), "orientation": "h",
            "marker": {"color": colours}, "name": name, "text": [f"{p:.3f}" for p in probs],
            "textposition": "outside", "cliponaxis": False,
            "hovertemplate": "%{y}<br>p = %{x:.6f}<extra>" + name + "</extra>"}


def _two_panels(left: dict, right: dict, titles: list[str], n: int, title: str | None) -> go.Figure:
    """Two bar charts of probabilities side by side on one x range, with room right of the longest
    bar for its value (a third of the panel: at a phone's 400 px, less let the left panel's values
    run into the right panel's token labels)."""
    layout, refs = grid_axes(2, 2, gap_x=0.12, titles=titles)
    left.update(xaxis=refs[0][0], yaxis=refs[0][1])
    right.update(xaxis=refs[1][0], yaxis=refs[1][1])
    top = float(max(np.max(left["x"], initial=0.0), np.max(right["x"], initial=0.0)))
    upper = top * 1.5 + 0.02
    for ax in ("", "2"):
        layout[f"xaxis{ax}"].update(type="linear", range=[0, upper],
                                    title={"text": "probability"})
        if upper > 1:  # no tick past a probability of 1
            layout[f"xaxis{ax}"]["tickvals"] = [0, 0.5, 1]
    layout["showlegend"] = False
    fig = make_figure([left, right], layout, title, max(260, 80 + 24 * n), panel_titles=True)
    fig.layout.margin.r = 50
    return fig


def temperature_figure(tokens: list[str], model_probs, tempered_probs, temperature: float,
                       title: str | None = None) -> go.Figure:
    """The same tokens' probabilities at T = 1 (the model's own) and at T, side by side: what
    dividing the logits by T does. tokens and both probability lists in the same order
    (most probable first)."""
    return _two_panels(_bars(tokens, model_probs, [LIGHT_BLUE] * len(tokens), "T = 1"),
                       _bars(tokens, tempered_probs, [BLUE] * len(tokens), f"T = {temperature:g}"),
                       ["T = 1 (the model)", f"T = {temperature:g}"],
                       len(tokens), title)


def kept_set_figure(tokens: list[str], probs, kept, final, chosen: int | None = None,
                    title: str | None = None) -> go.Figure:
    """Left: the tempered distribution with the tokens top-k and top-p keep in colour, the others
    grey. Right: the kept tokens renormalised, what is sampled from; ``chosen`` (an index into
    tokens) in orange."""
    kept = np.asarray(kept, dtype=bool)
    colours = [ORANGE if i == chosen else BLUE if k else FAINT for i, k in enumerate(kept)]
    return _two_panels(_bars(tokens, probs, colours, "before the cut"),
                       _bars(tokens, final, colours, "after the cut"),
                       ["kept / cut (grey)", "renormalised"], len(tokens), title)


def families_masks(S: int, T: int, L: int) -> dict[str, np.ndarray]:
    """The masks (True = may attend) of the encoder–decoder's three attention kinds for a source of
    S and a target of T tokens, and of the decoder-only model's one for L tokens (no padding)."""
    return {"encoder self (S × S)": np.ones((S, S), dtype=bool),
            "decoder masked self (T × T)": np.tril(np.ones((T, T), dtype=bool)),
            "cross (T × S)": np.ones((T, S), dtype=bool),
            "decoder-only, causal (L × L)": np.tril(np.ones((L, L), dtype=bool))}


def families_figure(src_labels: list[str], tgt_labels: list[str], prompt_labels: list[str],
                    title: str | None = None) -> go.Figure:
    """Four masks, two by two: the encoder–decoder's encoder self-attention, masked decoder
    self-attention and cross-attention, then the decoder-only model's single causal self-attention.
    Blue: may attend; grey: masked. The top row's keys are its rows' tokens: only the bottom row
    labels its x axis."""
    masks = families_masks(len(src_labels), len(tgt_labels), len(prompt_labels))
    axes_labels = [(src_labels, src_labels), (tgt_labels, tgt_labels), (src_labels, tgt_labels),
                   (prompt_labels, prompt_labels)]
    # 2 × 2 fits a narrow column; each title on two lines, which side by side at a projector's 18 px
    # ran into each other on one; rows 0.24 apart, so that two lines clear the top row's last labels
    titles = ["encoder self<br>(S × S)", "decoder self<br>masked (T × T)", "cross<br>(T × S)",
              "decoder-only<br>causal (L × L)"]  # no line wider than a panel at 1280 px
    layout, refs = grid_axes(4, 2, gap_x=0.12, gap_y=0.24, titles=titles)
    data: list[dict] = []
    for k, (allowed, (x, y)) in enumerate(zip(masks.values(), axes_labels)):
        values = np.where(allowed, 1.0, -np.inf)
        traces = heatmap_traces(values, list(x), list(y), "may attend", list(masks)[k], refs[k],
                                showscale=False, colorscale=flat(ALLOWED_COLOUR))
        data += traces
        ax = "" if k == 0 else str(k + 1)
        # The top row's masks are self-attentions, their keys the rows' tokens: no x labels there,
        # which, turned, ran into the bottom row's panel titles. 10 px: a phone's
        # least legible size.
        layout[f"xaxis{ax}"].update(tickangle=-90, tickfont={"size": 10}, automargin=True,
                                    showticklabels=k >= 2)
        # The right column's token labels on its right: on its left they ran into the left panel's
        # title. No square cells: squeezed into squares, the panels shrank to strips off the centres
        # of their titles, which then ran into each other.
        layout[f"yaxis{ax}"].update(tickfont={"size": 10}, automargin=True,
                                    side="right" if k % 2 else "left")
    return make_figure(data, layout, title, 620, panel_titles=True)
