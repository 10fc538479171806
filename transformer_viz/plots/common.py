"""What every figure shares: one template and palette, readable unique token labels, escaped text,
one way to build a figure, and one way to draw a heatmap whose masked cells are grey. Importing it
changes nothing in plotly: each figure gets the template itself."""

from __future__ import annotations

import html
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from transformer_viz.fenced.plotly_private import assign_unvalidated

# One template for every figure (given to each in base_layout, never as plotly's global default,
# which would restyle every other figure in the process). plotly_white, with
# - dark text (#222 on white, contrast 15.9:1; WCAG AA asks ≥ 4.5:1): the app shows the figures with
#   this template, not Streamlit's theme, whose light-grey chart labels a projector washes out;
# - dragmode False: a one-finger swipe over a chart scrolls the page on a touch screen instead of
#   zooming the chart. Zoom and pan stay one click away in the chart's toolbar; a tap still
#   shows a cell's values.
TEXT_COLOUR = "#222"
TEMPLATE = go.layout.Template(pio.templates["plotly_white"])
TEMPLATE.layout.dragmode = False
TEMPLATE.layout.font.color = TEXT_COLOUR
# Tick labels are turned only when they would overlap at the width the figure is drawn at (a figure
# does not know it when built: a phone, a projector, a zoomed browser): by 60°, or 90° if that is
# not enough. (At 45°, labels turned into parallel strips one font size high still touch unless
# their ticks are 1.4 em apart; at 60°, 1.15 em.)
TEMPLATE.layout.xaxis.autotickangles = [0, -60, -90]
# The tick labels of a y axis or a colour bar stay inside the figure (its margins hold them), so
# plotly.js's check for labels past the figure's edge (its default for axes of numbers, "hide past
# div") never hides one; it measures the labels again as each one is placed. Skipped, the app's
# figures draw about 7 % faster, to the same SVG (docs/deployment.md §2). An x axis keeps the check:
# there it hides a number at the right edge.
TEMPLATE.layout.yaxis.ticklabeloverflow = "allow"
# A bar's value label is shrunk to the bar's width: all of a figure's bar labels at one size, and
# none where that size would be under 10 px (a phone's floor; the hover still gives each value).
TEMPLATE.layout.uniformtext = {"minsize": 10, "mode": "hide"}
TEMPLATE.layout.coloraxis.colorbar.ticklabeloverflow = "allow"
for _heatmap in TEMPLATE.data.heatmap:
    _heatmap.colorbar.ticklabeloverflow = "allow"

# --- the palette ----------------------------------------------------------------------------------
DIVERGING = "RdBu_r"  # signed values (embeddings, scores, activations), centred on 0
SEQUENTIAL = "Viridis"  # probabilities and weights in [0, 1]
# cells a mask sets to −∞ (and <pad> positions): grey, outside any colour scale
MASKED_COLOUR = "#d0d0d0"
ALLOWED_COLOUR = "#6baed6"  # cells a mask lets through
BLUE, LIGHT_BLUE = "#3182bd", "#9ecae1"  # the main series, and its "before" or secondary twin
# what is pointed out: the chosen token, the peak, an overall line
ORANGE, LIGHT_ORANGE = "#e6550d", "#fdae6b"
GREEN = "#31a354"  # one query's weights, the probability of the expected token
# Reddish purple (Okabe and Ito's): the blue-purple it replaces looked like BLUE to a red-green
# colour-blind reader (ΔE 5 under protanopia and deuteranopia; tests/unit/test_colour_vision.py).
PURPLE = "#cc79a7"
POSITIVE, NEGATIVE = "#2166ac", "#b2182b"  # signed bars: the two ends of DIVERGING
INK, OUTLINE, ARROW, GUIDE, FAINT = "#333", "#555", "#888", "#999", "#bbb"  # greys, darkest first
# The blocks of the architecture, wherever they are drawn.
EMBEDDING_FILL, ENCODER_FILL, DECODER_FILL, OUTPUT_FILL = "#e2efd9", "#cfe2f3", "#fde2c8", "#ead1dc"
ADD_NORM_FILL = "#f7efbf"  # Add & Norm, yellow as in the paper's figure
FONT = dict(family="Inter, Arial, sans-serif", size=13)


def flat(colour: str) -> list:
    """A colour scale of one colour: every cell of the trace is drawn in it."""
    return [[0, colour], [1, colour]]


# --- text -----------------------------------------------------------------------------------------

def safe_label(text: str) -> str:
    """Plotly renders a subset of HTML in labels and hovers; escape user text so it shows
    literally."""
    return html.escape(str(text), quote=False)


# The tokenizer marks a word start with ▁ (U+2581), which most fonts draw as a low bar, read as "_".
# Every token shown (figures, tables, text) uses the visible-space sign instead; the
# Tokens page explains it.
WORD_START = "␣"


def token_text(token: str) -> str:
    """A token as shown: its word-start mark ▁ as WORD_START ("▁Hund" -> "␣Hund"). Not escaped."""
    return str(token).replace("▁", WORD_START)


def token_labels(tokens: list[str]) -> list[str]:
    """Unique, readable axis labels: position and token ("3 ␣Hund"); the position keeps repeats
    apart."""
    return [f"{i} {safe_label(token_text(t))}" for i, t in enumerate(tokens)]


# --- building figures -----------------------------------------------------------------------------

PANEL_MIN_WIDTH = 170  # px a panel of a multi-panel figure needs for its tick labels and title


def min_width(fig: go.Figure) -> int | None:
    """The width in px below which the figure's parts would run into each other: what its ``meta``
    names (a block diagram), else PANEL_MIN_WIDTH per column of panels side by side (plus room for
    the colour bars) when there are two or more, else None (one panel lays out at any width)."""
    meta = fig.layout.meta
    if isinstance(meta, dict) and meta.get("min_width"):
        return int(meta["min_width"])
    layout = fig.layout.to_plotly_json()
    needs = [cell_text_width(trace) for trace in fig.data]
    columns = {tuple(axis.get("domain", (0, 1))) for key, axis in layout.items()
               if key.startswith("xaxis")}
    if len(columns) >= 2:
        # A panel is at least as wide as the longest line of the panel titles (~7.5 px a
        # character at 13 px).
        lines = [line for note in layout.get("annotations", [])
                 for line in str(note.get("text", "")).split("<br>")]
        panel = max([PANEL_MIN_WIDTH] + [int(7.5 * len(line)) + 30 for line in lines])
        needs.append(panel * len(columns) + 60)
    return max([n for n in needs if n], default=None)


def cell_text_width(trace) -> int | None:
    """The width a heatmap that writes its values in its cells needs for them to stay readable:
    plotly shrinks the text to the cell, down to 5 px on a phone. ~7.5 px a character and 10 px of
    padding a column, and 200 px for the token labels and the colour bar, but at most 800 px (a 1280
    px window's main column, where nothing should scroll sideways); None for any other trace."""
    if trace.type != "heatmap" or not (trace.texttemplate or trace.text is not None):
        return None
    if trace.text is not None and (not trace.texttemplate or "%{text}" in trace.texttemplate):
        chars = max((len(str(t)) for t in np.ravel(np.asarray(trace.text, dtype=object))),
                    default=1)
    else:
        chars = 5  # a value as "%{z:.2f}": "-0.12"
    columns = len(trace.x) if trace.x is not None else np.shape(trace.z)[-1]
    return min(800, int(columns * (7.5 * chars + 10)) + 200)


def with_template(fig: go.Figure) -> go.Figure:
    """``fig`` with TEMPLATE as its template."""
    # TEMPLATE was validated when built; validating it again costs 11-32 ms a figure (fenced/).
    assign_unvalidated(fig.layout, "template", TEMPLATE)
    return fig


def shared_look(title: str | None = None, height: int | None = None) -> dict:
    """The layout values every figure shares: its title, the body font, narrow margins (more on top
    for a title) and, when given, its height in px."""
    look = {"title": title, "font": FONT, "margin": dict(l=10, r=10, t=50 if title else 20, b=10)}
    if height:
        look["height"] = height
    return look


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    with_template(fig)
    fig.update_layout(**shared_look(title, height))
    return fig


def make_figure(data: list[dict], layout: dict, title: str | None = None, height: int | None = None,
                panel_titles: bool = False) -> go.Figure:
    """One validated construction from plain dicts, the shared look (:func:`base_layout`'s)
    included: much cheaper than building a figure up with ``update_*``/``add_*`` calls, each of
    which validates again."""
    look = shared_look(title, height)
    # Merged into the dict as base_layout's update merges it: the title replaced (none for None,
    # where the update leaves an empty one: drawn alike), the font and the margin
    # updated key by key.
    layout = {**layout, **look, "font": {**layout.get("font", {}), **look["font"]},
              "margin": {**layout.get("margin", {}), **look["margin"]}}
    if title is None:
        del layout["title"]
    if panel_titles:  # they sit above their panels: leave room under the figure title
        layout["margin"]["t"] = 75 if title else 35
    return with_template(go.Figure({"data": data, "layout": layout}))


MASKED_WEIGHT = "masked: weight exactly 0"  # the hover of a masked cell in a figure of weights


def heatmap_traces(values, x: list, y: list, value_name: str = "value", panel: str | None = None,
                   axes: tuple[str, str] = ("x", "y"), value_format: str = ".4g", masked=None,
                   masked_hover: str = "masked (−∞)", **colour) -> list[dict]:
    """A 2-D array as heatmap traces, the one way masked cells are drawn: −∞ cells are left empty
    (NaN) in the colour trace, and a grey trace of exactly those cells (only when there are any)
    shows them, so a mask never reads as the lowest colour and hovers as "masked (−∞)".

    ``panel`` names the traces of one panel among several ("<panel>", "<panel> masked") and heads
    their hovers; ``colour`` is the colour trace's scale (``colorscale``, ``zmin``, ``coloraxis``,
    …). ``masked`` (boolean, True = masked) names the masked cells where the values do not show it:
    the weights after the softmax are 0 there, not −∞, and must be grey too, never the colour
    scale's 0.
    """
    z = np.asarray(values, dtype=np.float64)
    masked = (np.isneginf(z) if masked is None
              else np.broadcast_to(np.asarray(masked, dtype=bool), z.shape))
    where = {"type": "heatmap", "x": x, "y": y, "xaxis": axes[0], "yaxis": axes[1],
             "hoverongaps": False}
    cell = f"{panel}<br>row %{{y}}<br>column %{{x}}" if panel else "row %{y}<br>column %{x}"
    traces = []
    if masked.any():
        traces.append({**where, "z": np.where(masked, 1.0, np.nan),
                       "name": f"{panel} masked" if panel else "masked", "showscale": False,
                       "colorscale": flat(MASKED_COLOUR),
                       "hovertemplate": f"{cell}<br>{masked_hover}<extra></extra>"})
    traces.append({**where, "z": np.where(masked, np.nan, z), "name": panel or value_name, **colour,
                   "hovertemplate": f"{cell}<br>{value_name} %{{z:{value_format}}}<extra></extra>"})
    return traces


def category_axes(x: list, x_title: str | None = None, y_title: str | None = None) -> dict:
    """Layout for a heatmap over tokens or positions: every label shown, rows top to bottom."""
    return {"xaxis": {"type": "category", "title": {"text": x_title}},
            "yaxis": {"type": "category", "autorange": "reversed", "title": {"text": y_title}}}


def heatmap(values, x_labels=None, y_labels=None, title: str | None = None,
            colorscale: str = DIVERGING, zmid: float | None = 0.0, zmin: float | None = None,
            zmax: float | None = None, x_title: str | None = None, y_title: str | None = None,
            hover_value: str = "value", colorbar_title: str | None = None,
            height: int | None = None, text_format: str | None = None, masked=None,
            masked_hover: str = "masked (−∞)") -> go.Figure:
    """A heatmap of a 2-D array with its own colour scale; −∞ cells (masked) are grey
    (:func:`heatmap_traces`), and so are the cells ``masked`` names (True = masked)."""
    z = np.asarray(values, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D array, got shape {z.shape}")
    x = list(x_labels) if x_labels is not None else list(range(z.shape[1]))
    y = list(y_labels) if y_labels is not None else list(range(z.shape[0]))
    if colorscale == SEQUENTIAL and zmid == 0.0:
        zmid = None
    colour = {"colorscale": colorscale, "zmid": zmid, "zmin": zmin, "zmax": zmax,
              "texttemplate": text_format,
              "colorbar": {"title": {"text": colorbar_title}} if colorbar_title else None}
    traces = heatmap_traces(z, x, y, hover_value, masked=masked, masked_hover=masked_hover,
                            **{k: v for k, v in colour.items() if v is not None})
    return make_figure(traces, category_axes(x, x_title, y_title), title, height)


def mask_figure(allowed, x: list, y: list, title: str | None = None, height: int | None = None,
                x_title: str | None = None, y_title: str | None = None,
                allowed_name: str = "may attend") -> go.Figure:
    """A mask (True = may attend) in two flat colours: allowed cells ALLOWED_COLOUR, masked cells
    grey."""
    values = np.where(np.asarray(allowed, dtype=bool), 1.0, -np.inf)
    traces = heatmap_traces(values, list(x), list(y), allowed_name, showscale=False,
                            colorscale=flat(ALLOWED_COLOUR))
    traces[-1]["hovertemplate"] = f"row %{{y}}<br>column %{{x}}<br>{allowed_name}<extra></extra>"
    return make_figure(traces, category_axes(list(x), x_title, y_title), title, height)


# --- projector style ------------------------------------------------------------------------------

# For a lecture hall: text readable from the back row, and a sequential scale whose lightness runs
# from near-white (weight 0) to a dark blue (weight 1), so a strong weight stays visible on a
# washed-out projector where Viridis's yellow end fades into the white page.
PROJECTOR_FONT = dict(family="Inter, Arial, sans-serif", size=20)
PROJECTOR_TICK_SIZE = 18  # axis tick labels, colour-bar ticks, panel titles
PROJECTOR_TITLE_SIZE = 22  # axis titles and the figure title
PROJECTOR_SEQUENTIAL = "YlGnBu"
# characters: text annotations up to this long are enlarged like the tick labels
PROJECTOR_SHORT_LABEL = 16
# px: a note of up to PROJECTOR_NOTE_LABEL characters is drawn at least this large (~250 px at most,
# the width of a panel); a longer one keeps its size, where it would overlap its neighbour.
PROJECTOR_MIN_TEXT, PROJECTOR_NOTE_LABEL = 16, 28
# px: a figure title's longest line. The narrowest column a projector figure gets (1280 px, the
# sidebar open) is 551 px wide; a longer title would be cut at the figure's edge.
PROJECTOR_TITLE_LINE = 440
PROJECTOR_TITLE_LEADING = 28  # px of top margin per extra title line


def wrap_title(text: str, size: float, width: float = PROJECTOR_TITLE_LINE) -> list[str]:
    """``text`` broken at spaces into lines each at most ``width`` px wide at ``size`` px (a single
    word longer than that stays whole)."""
    from transformer_viz.plots.margins import text_width

    lines: list[str] = []
    for word in str(text).split(" "):
        if lines and text_width(f"{lines[-1]} {word}", size) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def is_panel_title(annotation) -> bool:
    """Whether a layout annotation is a panel's title (as make_subplots and grid_axes place
    them)."""
    return (annotation.showarrow is False and annotation.yref == "paper"
            and annotation.yanchor == "bottom")


PROJECTOR_TITLE_PAD = 8  # px above a figure title in projector style
PROJECTOR_PANEL_LEADING = 23  # px a line of a panel title takes at PROJECTOR_TICK_SIZE


def top_margin(fig: go.Figure) -> int:
    """The top margin (px) a projector figure's title, anchored at the top, needs above the top
    row's panel titles, which stand on their panels: a two-line title ran into them when
    centred in the margin."""
    layout = fig.layout
    lines = 1 + str(layout.title.text or "").count("<br>")
    panel_lines = max((1 + str(a.text or "").count("<br>") for a in layout.annotations
                       if is_panel_title(a) and (a.y or 0) >= 0.98), default=0)
    return (PROJECTOR_TITLE_PAD + PROJECTOR_TITLE_LEADING * lines
            + (PROJECTOR_PANEL_LEADING * panel_lines + 6 if panel_lines else 4))


def projector_layout(fig: go.Figure, height: int | None = None) -> go.Figure:
    """A copy of ``fig`` for a projector: body text PROJECTOR_FONT, every axis's tick labels and
    every colour bar at least PROJECTOR_TICK_SIZE, titles PROJECTOR_TITLE_SIZE, text inside the plot
    (bar labels, and annotations of at most PROJECTOR_SHORT_LABEL characters) at least
    PROJECTOR_TICK_SIZE, the sequential scale SEQUENTIAL replaced by PROJECTOR_SEQUENTIAL, and the
    height (in px) set when given. The figure passed in is not changed."""
    out = go.Figure(fig)
    layout = out.layout
    layout.font = PROJECTOR_FONT
    layout.title.font.size = PROJECTOR_TITLE_SIZE
    layout.hoverlabel.font.size = PROJECTOR_TICK_SIZE
    layout.legend.font.size = PROJECTOR_TICK_SIZE
    for axis in [*out.select_xaxes(), *out.select_yaxes()]:
        axis.tickfont.size = max(axis.tickfont.size or 0, PROJECTOR_TICK_SIZE)
        axis.title.font.size = PROJECTOR_TITLE_SIZE
        axis.automargin = True
    # short labels ("head 3") and panel titles as the tick labels
    for annotation in layout.annotations:
        chars = len(re.sub(r"<[^>]*>", "", str(annotation.text or "")))
        if chars <= PROJECTOR_SHORT_LABEL or is_panel_title(annotation):
            annotation.font.size = max(annotation.font.size or 0, PROJECTOR_TICK_SIZE)
        elif chars <= PROJECTOR_NOTE_LABEL:
            annotation.font.size = max(annotation.font.size or 0, PROJECTOR_MIN_TEXT)
    title = layout.title.text
    if title and "<br>" not in title:
        lines = wrap_title(title, PROJECTOR_TITLE_SIZE)
        if len(lines) > 1:
            layout.title.text = "<br>".join(lines)
            layout.margin.t = (layout.margin.t or 50) + PROJECTOR_TITLE_LEADING * (len(lines) - 1)
    if title:  # from the figure's top down: the title's lines, then the top row's panel titles
        # plotly.js sets a title of several lines on its first line's baseline, one of
        # one line on its top
        lines = 1 + layout.title.text.count("<br>")
        pad = PROJECTOR_TITLE_PAD + (round(0.8 * PROJECTOR_TITLE_SIZE) if lines > 1 else 0)
        layout.title.update(y=1, yref="container", yanchor="top", pad={"t": pad})
        layout.margin.t = max(layout.margin.t or 50, top_margin(out))
    viridis = go.Heatmap(colorscale=SEQUENTIAL).colorscale
    for coloraxis in out.select_coloraxes():
        if coloraxis.colorscale == viridis:
            coloraxis.colorscale = PROJECTOR_SEQUENTIAL
        coloraxis.colorbar.tickfont.size = PROJECTOR_TICK_SIZE
    for trace in out.data:
        if getattr(trace, "colorscale", None) == viridis:
            trace.colorscale = PROJECTOR_SEQUENTIAL
        if hasattr(trace, "colorbar"):
            trace.colorbar.tickfont.size = PROJECTOR_TICK_SIZE
        if hasattr(trace, "textfont"):
            trace.textfont.size = max(trace.textfont.size or 0, PROJECTOR_TICK_SIZE)
    if height:
        layout.height = height
    return out
