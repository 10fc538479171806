"""Figures for generation: next-token distributions, the growing causal mask, the beam-search tree,
and what changes when the decoder may look at future positions (the masking lab)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.plots.common import (BLUE, FAINT, GREEN, INK, ORANGE, SEQUENTIAL, heatmap,
                                          make_figure, mask_figure, safe_label, token_text)

_shown = token_text  # beam_tree_figure's argument of that name hides it
Edge = tuple[tuple[int, int], tuple[int, int]]  # (step, beam) of a parent, then of its child


# --- next-token distributions ---------------------------------------------------------------------

def topk_figure(tokens: list[str], probs, chosen: int | None = None, title: str | None = None,
                x_title: str = "probability") -> go.Figure:
    """Horizontal bars of the k most probable next tokens, most probable on top; ``chosen`` (an
    index into ``tokens``) is drawn in another colour. Tokens are escaped here."""
    probs = np.asarray(probs, dtype=np.float64)
    # rank keeps labels unique
    labels = [f"{i + 1}. {safe_label(token_text(t))}" for i, t in enumerate(tokens)]
    colours = [ORANGE if i == chosen else BLUE for i in range(len(tokens))]
    data = [{"type": "bar", "x": probs, "y": labels, "orientation": "h",
             "marker": {"color": colours}, "name": "probability",
             # the top bar's label may reach past the axis (p near 1): draw it anyway
             "text": [f"{p:.3f}" for p in probs], "textposition": "outside", "cliponaxis": False,
             "hovertemplate": "%{y}<br>p = %{x:.6f}<extra></extra>"}]
    layout = {"yaxis": {"autorange": "reversed", "type": "category"},
              "xaxis": {"range": [0, min(1.0, float(probs.max(initial=0.0)) * 1.25 + 0.02)],
                        "title": {"text": x_title}}}
    fig = make_figure(data, layout, title, max(220, 60 + 26 * len(tokens)))
    fig.layout.margin.r = 60  # room for that label to the right of the axis
    return fig


def causal_mask_figure(labels: list[str], title: str | None = None) -> go.Figure:
    """The t×t causal mask for the decoder input so far: allowed cells blue (keys at or before the
    query), masked cells grey (later keys)."""
    t = len(labels)
    return mask_figure(np.tril(np.ones((t, t), dtype=bool)), labels, labels, title,
                       max(220, 90 + 30 * t),
                       x_title="key position<br>(blue: same or earlier,<br>grey: later, masked)",
                       y_title="query")


def attention_row_figure(weights, labels: list[str], title: str | None = None,
                         x_title: str = "source token") -> go.Figure:
    """One query's attention weights over the keys, as bars (they sum to 1)."""
    weights = np.asarray(weights, dtype=np.float64)
    data = [{"type": "bar", "x": list(labels), "y": weights, "marker": {"color": GREEN},
             "name": "weight", "hovertemplate": "%{x}<br>weight %{y:.6f}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "title": {"text": x_title}},
              "yaxis": {"range": [0, 1], "title": {"text": "attention weight"}}}
    return make_figure(data, layout, title, 300)


# --- beam search ----------------------------------------------------------------------------------

def beam_tree(parents: list[list[int]], scores: list[list[float]],
              finished: list[list[bool]]) -> tuple[list[dict], list[Edge]]:
    """Nodes and edges of the beam-search tree of one sentence.

    ``parents[s][k]`` is the beam of step s−1 that beam k of step s extends (step s is drawn at x =
    s+1; the root <s> sits at (0, 0), the parent of every first-step beam). Beams that only carry a
    finished hypothesis forward (a finished parent, <pad> appended at no cost) are not drawn: they
    add nothing. Returns nodes as dicts {step, beam, parent, score, finished, index} (index: (s, k)
    into the records; None for the root) and edges ((step−1, parent beam), (step, beam)).
    """
    nodes = [{"step": 0, "beam": 0, "parent": None, "score": 0.0, "finished": False, "index": None}]
    edges = []
    for s, (row_parents, row_scores, row_finished) in enumerate(zip(parents, scores, finished)):
        for k, (parent, score, done) in enumerate(zip(row_parents, row_scores, row_finished)):
            parent = parent if s > 0 else 0
            if s > 0 and finished[s - 1][parent]:
                continue  # a carried, already finished hypothesis
            if not np.isfinite(score):
                continue
            nodes.append({"step": s + 1, "beam": k, "parent": parent, "score": float(score),
                          "finished": bool(done), "index": (s, k)})
            edges.append(((s, parent), (s + 1, k)))
    return nodes, edges


def beam_backtrack(tokens: list[list[int]], parents: list[list[int]],
                   beam: int) -> list[tuple[int, int]]:
    """The (step, beam) nodes on the path from the root to beam ``beam`` of the last step (root
    first)."""
    path = []
    for s in range(len(tokens) - 1, -1, -1):
        path.append((s + 1, beam))
        beam = parents[s][beam] if s > 0 else 0
    path.append((0, 0))
    return path[::-1]


def beam_tree_figure(token_text: list[list[str]], parents: list[list[int]],
                     scores: list[list[float]], finished: list[list[bool]],
                     best_beam: int | None = None, title: str | None = None,
                     down: bool = False) -> go.Figure:
    """The beam tree: x = step, y = beam rank, a line from each node to its parent; hover shows the
    token and the cumulative log-probability. The chosen translation's path is drawn thick and
    orange.

    ``down``: the steps run down the figure and the beams across it, each token to the right of its
    node, so that a long translation's tokens stay apart in a narrow column (one row a step instead
    of a column a step); the legend gives way to the title, which should name the orange path."""
    nodes, edges = beam_tree(parents, scores, finished)
    at = (lambda step, beam: (beam, step)) if down else (lambda step, beam: (step, beam))
    edge_x, edge_y = [], []
    for start, end in edges:
        (x0, y0), (x1, y1) = at(*start), at(*end)
        edge_x += [x0, x1, None]
        edge_y += [y0, y1, None]
    data = [{"type": "scatter", "x": edge_x, "y": edge_y, "mode": "lines",
             "line": {"color": FAINT, "width": 1}, "hoverinfo": "skip", "name": "edges",
             "showlegend": False}]
    if best_beam is not None and token_text:
        drawn = {(n["step"], n["beam"]) for n in nodes}
        path = [at(*p) for p in beam_backtrack(token_text, parents, best_beam) if p in drawn]
        data.append({"type": "scatter", "x": [p[0] for p in path], "y": [p[1] for p in path],
                     "mode": "lines", "line": {"color": ORANGE, "width": 4}, "hoverinfo": "skip",
                     "name": "chosen translation"})
    data.append(_beam_nodes_trace(nodes, token_text, at, down))
    K = max((len(row) for row in parents), default=1)
    if down:  # each token has the width of a beam's column to the right of its node
        layout = {"xaxis": {"side": "top", "tickvals": list(range(K)),
                            "ticktext": [f"beam {k}" for k in range(K)], "range": [-0.25, K - 0.1],
                            "zeroline": False},
                  "yaxis": {"title": {"text": "step"}, "dtick": 1,
                            "range": [len(parents) + 0.5, -0.5], "zeroline": False},
                  "showlegend": False,
                  # a beam's column holds its longest token (~7.5 px a character at 13 px) beside
                  # its node; narrower, a phone's tokens ran into the next beam's
                  "meta": {"min_width": K * _beam_column(token_text) + 160}}
        return make_figure(data, layout, title, 120 + 24 * len(parents))
    layout = {"xaxis": {"title": {"text": "step"}, "dtick": 1},
              "yaxis": {"title": {"text": "beam (rank by score)"}, "dtick": 1,
                        "range": [K - 0.5, -0.8]},
              "legend": {"orientation": "h", "y": -0.2}}
    return make_figure(data, layout, title, 160 + 70 * K)


def _beam_column(token_text: list[list[str]]) -> int:
    """px: the width of one beam's column in the downward tree."""
    chars = max((len(_shown(token)) for row in token_text for token in row), default=3)
    return int(7.5 * max(chars, 3)) + 30


def _beam_nodes_trace(nodes: list[dict], token_text: list[list[str]], at, down: bool) -> dict:
    """The beams as markers coloured by log P (finished ones square), each with its token;
    ``at`` places a (step, beam) node in the figure."""
    labels, hovers = [], []
    for n in nodes:
        if n["index"] is None:
            token = "<s>"
        else:
            s, k = n["index"]
            token = token_text[s][k]
        labels.append(safe_label(_shown(token)))
        state = " (finished)" if n["finished"] else ""
        hovers.append(f"step {n['step']}, beam {n['beam']}<br>token "
                      f"{safe_label(_shown(token))}{state}<br>log P = {n['score']:.6f}")
    places = [at(n["step"], n["beam"]) for n in nodes]
    return {"type": "scatter", "x": [p[0] for p in places], "y": [p[1] for p in places],
            "mode": "markers+text", "text": labels,
            "textposition": "middle right" if down else "top center", "hovertext": hovers,
            "hoverinfo": "text", "name": "beams",
            "marker": {"size": 12, "color": [n["score"] for n in nodes], "colorscale": SEQUENTIAL,
                       "symbol": ["square" if n["finished"] else "circle" for n in nodes],
                       "colorbar": {"title": {"text": "log P"}},
                       "line": {"color": INK, "width": 1}}}


# --- the masking lab ------------------------------------------------------------------------------

def prediction_change_figure(labels: list[str], p_masked, p_unmasked, kl,
                             title: str | None = None) -> go.Figure:
    """Per position: the probability of the expected next token with and without the causal mask
    (bars, top panel), and KL(masked ‖ unmasked) in its own panel below: two scales, never two axes
    on one panel. Each bar carries its value, so a bar near 0 is still seen."""
    x = list(labels)
    bar = {"type": "bar", "x": x, "texttemplate": "%{y:.2f}", "textposition": "outside",
           "cliponaxis": False, "textfont": {"size": 11}}
    data = [{**bar, "y": np.asarray(p_masked, dtype=np.float64),
             "name": "p(expected) with causal mask", "marker": {"color": BLUE},
             "hovertemplate": "%{x}<br>masked: p = %{y:.6f}<extra></extra>"},
            {**bar, "y": np.asarray(p_unmasked, dtype=np.float64),
             "name": "p(expected) without mask", "marker": {"color": ORANGE},
             "hovertemplate": "%{x}<br>unmasked: p = %{y:.6f}<extra></extra>"},
            {"type": "scatter", "x": x, "y": np.asarray(kl, dtype=np.float64),
             "name": "KL(masked ‖ unmasked)", "xaxis": "x2", "yaxis": "y2", "mode": "lines+markers",
             "line": {"color": INK}, "hovertemplate": "%{x}<br>KL = %{y:.6f} nats<extra></extra>"}]
    layout = {"barmode": "group",
              "xaxis": {"type": "category", "domain": [0, 1], "anchor": "y",
                        "showticklabels": False},
              "yaxis": {"title": {"text": "p(expected)"}, "range": [0, 1.15], "domain": [0.45, 1.0],
                        "tickvals": [0, 0.25, 0.5, 0.75, 1.0]},
              "xaxis2": {"type": "category", "domain": [0, 1], "anchor": "y2", "matches": "x",
                         "title": {"text": "decoder position (input token)"}},
              "yaxis2": {"title": {"text": "KL (nats)"}, "rangemode": "tozero",
                         "domain": [0.0, 0.33]},
              "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0}}
    return make_figure(data, layout, title, 480)


def key_mask_figure(is_real, labels: list[str], title: str | None = None) -> go.Figure:
    """The padding mask of one batch row as a strip: real keys blue, <pad> keys grey (−∞ in the
    scores)."""
    return mask_figure(np.asarray(is_real, dtype=bool)[None, :], labels, ["may attend"], title, 170,
                       allowed_name="real token")


# --- what if the model had chosen another word? ---------------------------------------------------

def forced_comparison_figure(original_tokens: list[str], original_probs, forced_tokens: list[str],
                             forced_probs, fork: int, title: str | None = None) -> go.Figure:
    """The probability the model gave each token it wrote, position by position: the original greedy
    translation and the one with a token forced at position ``fork`` (1-based), each bar labelled
    with its token. Up to the fork both are the same; the forced token's bar shows how unlikely
    the model found it."""
    data = []
    for name, tokens, probs, colour in (("original", original_tokens, original_probs, BLUE),
                                        ("forced", forced_tokens, forced_probs, ORANGE)):
        probs = np.asarray(probs, dtype=np.float64)
        data.append({"type": "bar", "x": list(range(1, len(probs) + 1)), "y": probs, "name": name,
                     "marker": {"color": colour}, "text": [safe_label(_shown(t)) for t in tokens],
                     "textposition": "outside", "textangle": -60, "cliponaxis": False,
                     "hovertemplate": f"{name}<br>position %{{x}}: %{{text}}<br>p = "
                                      "%{y:.4f}<extra></extra>"})
    layout = {"barmode": "group",
              "xaxis": {"title": {"text": "position in the translation"}, "dtick": 1},
              "yaxis": {"range": [0, 1.35], "title": {"text": "probability of the token written"}},
              "shapes": [{"type": "line", "x0": fork - 0.5, "x1": fork - 0.5, "y0": 0, "y1": 1,
                          "yref": "paper", "line": {"color": INK, "dash": "dot"}}],
              "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02,
                         "yanchor": "bottom"}}
    return make_figure(data, layout, title, 380)


# --- the key/value cache --------------------------------------------------------------------------

def kv_cache_figure(keys, labels: list[str], step: int, title: str | None = None,
                    appended: bool = True) -> go.Figure:
    """A cache of keys (L, d_k) as rows: rows 0 … step − 1 filled, the later ones still empty
    (grey), and with ``appended`` the row written at this step outlined."""
    keys = np.asarray(keys, dtype=np.float64)
    shown = keys.copy()
    shown[step:] = -np.inf  # not yet computed at this step
    columns = [f"k{c}" for c in range(keys.shape[1])]
    fig = heatmap(shown, columns, labels, title, x_title="component of the key (d_k)",
                  y_title="position", hover_value="key", masked_hover="not computed yet",
                  height=max(240, 90 + 24 * len(labels)))
    fig.update_xaxes(showticklabels=False)
    if appended:  # a category axis places row i at i: the outline spans i ± 0.5
        fig.add_shape(type="rect", xref="x", yref="y", x0=-0.5, x1=len(columns) - 0.5,
                      y0=step - 1.5, y1=step - 0.5, line={"color": ORANGE, "width": 3},
                      fillcolor="rgba(0,0,0,0)")
    return fig


def multiply_adds_figure(with_cache, without_cache, step: int | None = None,
                         title: str | None = None) -> go.Figure:
    """Multiply–adds per decoding step with the key/value cache and without it (the whole prefix
    again)."""
    steps = list(range(1, len(with_cache) + 1))
    data = [{"type": "scatter", "mode": "lines+markers", "x": steps,
             "y": np.asarray(values, dtype=np.float64), "name": name, "line": {"color": colour},
             "hovertemplate": f"step %{{x}}<br>{name}: %{{y:,.0f}} multiply–adds<extra></extra>"}
            for values, name, colour in ((without_cache, "without the cache", ORANGE),
                                         (with_cache, "with the cache", BLUE))]
    layout = {"xaxis": {"title": {"text": "decoding step t"}, "dtick": 1},
              "yaxis": {"title": {"text": "multiply–adds"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    fig = make_figure(data, layout, title, 320)
    if step is not None:
        fig.add_vline(x=step, line={"color": FAINT, "dash": "dot"})
    return fig
