"""Figures for "What does a head do?": the log-probability a translation loses per head switched
off, each token's probability with and without heads, the decoder's guess after each layer (logit
lens), and the encoder heads linking a pronoun to its noun; the map of head types, the lens inside
each layer (after each sublayer) and each layer's KL to the output. Plain arrays in, a Figure
out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (BLUE, GREEN, ORANGE, PURPLE, SEQUENTIAL, category_axes,
                                          heatmap_traces, make_figure, safe_label, token_text)

KIND_COLOURS = {"enc": BLUE, "dec": GREEN, "cross": PURPLE}


def head_drop_figure(names: list[str], drops, off: list[str] = (), title: str | None = None,
                     top: int | None = None) -> go.Figure:
    """One bar per head ("enc.0.3"): how much log p(translation) falls when that head alone is off,
    coloured by where the head sits; heads switched off on the page are drawn in orange. ``top``:
    only the heads with the ``top`` largest drops, largest first."""
    drops = np.asarray(drops, dtype=np.float64)
    if top is not None and len(names) > top:
        order = np.argsort(-drops, kind="stable")[:top]
        names, drops = [names[i] for i in order], drops[order]
    colours = [ORANGE if name in off else KIND_COLOURS[name.split(".")[0]] for name in names]
    data = [{"type": "bar", "x": list(names), "y": drops, "marker": {"color": colours},
             "name": "drop",
             "hovertemplate": "%{x}<br>log p(translation) falls by %{y:.4f} nats<extra></extra>"}]
    layout = {"xaxis": {"type": "category",
                        "title": {"text": "head switched off alone (kind.layer.head)"},
                        "tickangle": -90, "tickfont": {"size": 10}},
              "yaxis": {"title": {"text": "drop of log p(translation), nats"}}, "bargap": 0.15}
    fig = make_figure(data, layout, title, 400)
    fig.layout.meta = {"min_width": 12 * len(names)}
    return fig


def token_prob_figure(tokens: list[str], p_base, p_off, title: str | None = None) -> go.Figure:
    """The probability of each token of the translation (teacher-forced) with every head on and with
    the chosen heads off, side by side per position."""
    labels = [f"{t + 1} {safe_label(token_text(tok))}" for t, tok in enumerate(tokens)]
    data = [{"type": "bar", "x": labels, "y": np.asarray(p, dtype=np.float64), "name": name,
             "marker": {"color": colour},
             "hovertemplate": f"{name}<br>%{{x}}<br>p = %{{y:.4f}}<extra></extra>"}
            for name, p, colour in (("every head on", p_base, BLUE),
                                    ("chosen heads off", p_off, ORANGE))]
    layout = {"barmode": "group",
              "xaxis": {"type": "category", "title": {"text": "token of the translation"}},
              "yaxis": {"range": [0, 1.05], "title": {"text": "probability"}},
              "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02,
                         "yanchor": "bottom"}}
    return make_figure(data, layout, title, 360)


def lens_figure(rank, top_tokens, top_probs, labels: list[str],
                title: str | None = None) -> go.Figure:
    """The logit lens as a heatmap: row = decoder layer, column = target position; colour = log₁₀ of
    the rank of the token finally written (0: it is already the top guess), cell text = that layer's
    top guess, hover = its top-k with probabilities. rank (N, T); top_tokens (N, T, k) strings;
    top_probs (N, T, k)."""
    rank = np.asarray(rank, dtype=np.float64)
    N = rank.shape[0]
    rows = [f"after layer {i}" for i in range(N)]
    hover = [["<br>".join(f"{k + 1}. {safe_label(token_text(tok))} {p:.3f}"
                          for k, (tok, p) in enumerate(zip(top_tokens[i][t], top_probs[i][t])))
              for t in range(rank.shape[1])] for i in range(N)]
    text = [[safe_label(token_text(top_tokens[i][t][0])) for t in range(rank.shape[1])]
            for i in range(N)]
    trace = heatmap_traces(np.log10(rank), list(labels), rows, "log₁₀ rank", colorscale=SEQUENTIAL,
                           reversescale=True, zmin=0, zmax=max(1.0, float(np.log10(rank).max())),
                           colorbar={"title": {"text": "log₁₀ rank<br>of the token<br>written"}})[0]
    trace.update(text=text, texttemplate="%{text}", customdata=hover, textfont={"size": 11},
                 hovertemplate="%{y}, predicting after %{x}<br>"
                               "top guesses:<br>%{customdata}<extra></extra>")
    axes = category_axes(list(labels), "decoder input position (predicts the next token)")
    fig = make_figure([trace], axes, title, 160 + 60 * N)
    return fig


def pronoun_figure(weights, candidates: list[str], title: str | None = None) -> go.Figure:
    """Encoder self-attention from a pronoun to each candidate noun, per layer (rows) and head
    (columns): one panel per candidate side by side. weights (C, N, h)."""
    weights = np.asarray(weights, dtype=np.float64)
    C, N, h = weights.shape
    data, layout = [], {}
    for c in range(C):
        suffix = "" if c == 0 else str(c + 1)
        domain = [c / C + 0.02, (c + 1) / C - 0.02]
        data += heatmap_traces(weights[c], [f"head {j}" for j in range(h)],
                               [f"layer {i}" for i in range(N)], "weight",
                               panel=f"→ {safe_label(candidates[c])}",
                               axes=(f"x{suffix}", f"y{suffix}"), coloraxis="coloraxis",
                               texttemplate="%{z:.2f}")
        layout[f"xaxis{suffix}"] = {"domain": domain, "type": "category",
                                    "title": {"text": f"→ “{safe_label(candidates[c])}”"}}
        layout[f"yaxis{suffix}"] = {"type": "category", "autorange": "reversed",
                                    "anchor": f"x{suffix}", "showticklabels": c == 0}
    layout["coloraxis"] = {"colorscale": SEQUENTIAL, "cmin": 0,
                           "cmax": max(0.5, float(weights.max())),
                           "colorbar": {"title": {"text": "weight"}}}
    return make_figure(data, layout, title, 140 + 40 * N)


# Okabe and Ito's colours, one per head type, and grey for "mixed" (no pattern stands out).
TYPE_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#BBBBBB")
KIND_TITLES = {"enc": "encoder self", "dec": "decoder self",
               "cross": "cross"}


def _discrete_scale(colours) -> list:
    """A colour scale over 0 … n − 1 with one flat band per integer."""
    n = len(colours)
    return [[edge / n, c] for i, c in enumerate(colours) for edge in (i, i + 1)]


def head_type_figure(types, type_names: tuple[str, ...],
                     kinds: tuple[str, ...] = ("enc", "dec", "cross"),
                     title: str | None = None) -> go.Figure:
    """The map of head types: one panel per kind of attention, layer (rows) × head (columns), each
    cell coloured by its head's type (``type_names`` index) and labelled with it. types (K, N, h) of
    names from ``type_names``."""
    names = np.asarray(types, dtype=object)
    K, N, h = names.shape
    z = np.vectorize(type_names.index, otypes=[float])(names)  # (K, N, h)
    data, layout = [], {}
    for k, kind in enumerate(kinds):
        suffix = "" if k == 0 else str(k + 1)
        panel = KIND_TITLES.get(kind, kind)
        rows = [f"layer {i}" for i in range(N)]
        # The type by colour (the colour bar names them) and on hover, not written in the cells:
        # 3 × h names at 9 px were unreadable on a phone and ran into each other.
        data.append({"type": "heatmap", "z": z[k], "x": [str(j) for j in range(h)], "y": rows,
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "coloraxis": "coloraxis",
                     "name": panel, "text": names[k].tolist(),
                     "customdata": [[f"{kind}.{i}.{j}" for j in range(h)] for i in range(N)],
                     "hovertemplate": "%{customdata}: %{text}<extra></extra>"})
        layout[f"xaxis{suffix}"] = {"domain": [k / K + 0.03, (k + 1) / K - 0.03],
                                    "type": "category", "title": {"text": f"{panel}: head"}}
        layout[f"yaxis{suffix}"] = {"type": "category", "autorange": "reversed",
                                    "anchor": f"x{suffix}", "showticklabels": k == 0}
    n = len(type_names)
    layout["coloraxis"] = {"colorscale": _discrete_scale(TYPE_COLOURS[:n]), "cmin": -0.5,
                           "cmax": n - 0.5,
                           "colorbar": {"tickvals": list(range(n)), "ticktext": list(type_names),
                                        "title": {"text": "head type"}}}
    return make_figure(data, layout, title, 140 + 40 * N)


SUBLAYER_NAMES = ("after self-attention", "after cross-attention", "after the FFN")


def sublayer_lens_figure(p, rank, labels: list[str], title: str | None = None) -> go.Figure:
    """The logit lens inside each decoder layer: row = (layer, sublayer), column = target position;
    colour = the probability of the token finally written, cell text = its rank there, so the row
    where a column turns bright is the sublayer that decided it. p, rank (N, 3, T)."""
    p, rank = np.asarray(p, dtype=np.float64), np.asarray(rank)
    N, K, T = p.shape
    rows = [f"layer {i}, {SUBLAYER_NAMES[k]}" for i in range(N) for k in range(K)]
    trace = heatmap_traces(p.reshape(N * K, T), list(labels), rows, "p(token written)",
                           colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, value_format=".3f",
                           colorbar={"title": {"text": "p of the<br>token written"}})[0]
    trace.update(text=rank.reshape(N * K, T).astype(int).tolist(), texttemplate="%{text}",
                 textfont={"size": 10},
                 hovertemplate="%{y}, predicting after %{x}<br>p = %{z:.3f}, rank %{text}"
                               "<extra></extra>")
    layout = category_axes(list(labels), "decoder input position (predicts the next token)")
    return make_figure([trace], layout, title, 200 + 26 * N * K)


def layer_kl_figure(plain, tuned=None, title: str | None = None) -> go.Figure:
    """Per decoder layer, the KL divergence from the model's output distribution to the lens's
    reading of that layer, in nats: the plain logit lens (blue) and, when given, the tuned lens
    (orange) beside it."""
    plain = np.asarray(plain, dtype=np.float64)
    x = [f"after layer {i}" for i in range(len(plain))]
    series = [("plain logit lens", plain, BLUE)]
    if tuned is not None:
        series.append(("tuned lens", np.asarray(tuned, dtype=np.float64), ORANGE))
    data = [{"type": "bar", "x": x, "y": values, "name": name, "marker": {"color": colour},
             "hovertemplate": f"{name}<br>%{{x}}: KL %{{y:.3f}} nats<extra></extra>"}
            for name, values, colour in series]
    layout = {"barmode": "group", "xaxis": {"type": "category"},
              "yaxis": {"title": {"text": "KL(output ‖ lens), nats"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02,
                         "yanchor": "bottom"}}
    return make_figure(data, layout, title, 300)
