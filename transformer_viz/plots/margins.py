"""The margins plotly.js would settle on for a grid of square heatmaps' tick labels and axis titles,
worked out before the browser draws it.

plotly.js draws a figure with the layout's margins, then measures the tick labels and titles of
every axis with ``automargin``; when they need more room than the margins give, it draws the whole
figure again with wider margins, and again while they keep changing, up to 3 × (1 + the number of
things that push) times. A grid of panels with square cells (``scaleanchor`` with
``constrain="domain"``: the grid of heads, the encoder stack) can keep changing: the room its labels
take depends on the margins it is given, since the panels shrink to keep their cells square. The
Lecture's grid of heads, at projector size, was redrawn until plotly.js gave up: about 3 s of the
browser's time on every visit to that step.

:func:`reserve_margins` reserves, on the left and at the bottom of such a grid, at least what its
labels and titles take, from the text's width in Arial (the first font the app names that most
computers have; Liberation Sans, which Linux draws for it, has the same widths), with a few px to
spare. plotly.js keeps a reservation that suffices and draws once; one that falls short (a wider
font) it widens as before. Other figures keep their margins: they settle after one more draw, and a
reservation a few px too generous shrinks their cells enough that plotly.js drops every other token
label. A grid it cannot work out (tick labels that plotly.js makes up itself, numbers on a linear
axis; x labels at an angle plotly.js picks; labels above or to the right) keeps its margins too.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata

# Advance widths in 1/1000 em of Arial (as Liberation Sans), for the characters 32–126 and 160–255.
_ARIAL_WIDTHS = [int(w) for w in """
    278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 556 556 556 556 556 556 556 556
    556 556 278 278 584 584 584 556 1015 667 667 722 722 667 611 778 722 278 500 667 556 833 722 778
    667 778 722 667 611 722 667 944 667 667 611 278 278 278 469 556 333 556 556 500 556 556 278 556
    556 222 222 500 222 833 556 556 556 556 333 500 278 556 500 722 500 500 500 334 260 334 584 278
    333 556 556 556 556 260 556 333 737 370 556 584 0 737 552 400 549 333 333 333 576 537 278 333
    333 365 556 834 834 834 611 667 667 667 667 667 667 1000 722 667 667 667 667 278 278 278 278 722
    722 778 778 778 778 778 584 778 722 722 722 722 667 667 611 556 556 556 556 556 556 889 500 556
    556 556 556 278 278 278 278 556 556 556 556 556 556 556 549 611 556 556 556 556 500 556 500
""".split()]
_WIDTH = {chr(c): w for c, w in zip([*range(32, 127), *range(160, 256)], _ARIAL_WIDTHS)}
# em/1000: another character (␣, ◀ fall back to another font); CJK, emoji
_OTHER_WIDTH, _WIDE_WIDTH = 700, 1000
SPARE = 1.03  # a few px to spare on long labels
# px from the plot area to the labels' far edge, beyond the text
Y_LABEL_PAD, X_LABEL_PAD, X_TURNED_PAD = 15, 13, 5
LINE = 1.3  # a label's height, in font sizes (ascent and descent)
TITLE_OVERLAP = 4  # px: an axis title's line box reaches that far into the standoff
_TAG = re.compile(r"<[^>]*>")


def text_width(text: str, size: float) -> float:
    """The width in px of one line of plotly text (its tags removed, entities read) at ``size`` px,
    in Arial."""
    plain = html.unescape(_TAG.sub("", text))
    em = 0
    for ch in plain:
        w = _WIDTH.get(ch)
        if w is None:
            w = (_WIDE_WIDTH if unicodedata.east_asian_width(ch) in "WF" or ord(ch) >= 0x1F000
                 else _OTHER_WIDTH)
        em += w
    return em * size / 1000


def _font_size(axis: dict, layout: dict, key: str = "tickfont") -> float:
    return (axis.get(key) or {}).get("size") or (layout.get("font") or {}).get("size") or 12


def _labels(axis_name: str, axis: dict, data: list[dict]) -> list[str] | None:
    """The tick labels plotly.js will draw on this axis when the figure names them (categories,
    ticktext); None when plotly.js makes them up (numbers on a linear axis)."""
    if not axis.get("showticklabels", True):
        return []
    if axis.get("ticktext") is not None:
        return [str(t) for t in axis["ticktext"]]
    letter, ref = axis_name[0], axis_name[0] + axis_name[5:]  # "xaxis3" -> "x", "x3"
    values = []
    for trace in data:
        if trace.get(f"{letter}axis", letter) == ref and trace.get(letter) is not None:
            if (isinstance(trace[letter], dict)
                    or not all(isinstance(v, str) for v in trace[letter])):
                return None  # numbers (a list or a typed array)
            values += trace[letter]
    return values or None


def _depth(axis: dict, layout: dict, labels: list[str], letter: str) -> float:
    """How far (px) the labels and the title reach out from the plot area: to the left for y, down
    for x. The pads were measured in Chromium on the app's figures (tick labels 9–18
    px, titles 13–22 px)."""
    depth = 0.0
    if labels:
        size = _font_size(axis, layout)
        width = SPARE * max(text_width(t, size) for t in labels)
        if letter == "y":
            depth = width + Y_LABEL_PAD
        else:
            angle = math.radians(axis.get("tickangle") or 0)
            sin, cos = abs(math.sin(angle)), abs(math.cos(angle))
            depth = width * sin + LINE * size * cos + X_LABEL_PAD + X_TURNED_PAD * sin
        depth += 0 if axis.get("ticks", "") == "" else axis.get("ticklen", 5)
    title = axis.get("title") or {}
    if title.get("text"):
        lines = 1 + len(re.findall(r"<br\s*/?>", title["text"], re.I))
        depth += (_font_size(title, layout, "font") * lines + (title.get("standoff") or 0)
                  - TITLE_OVERLAP)
    return depth


def _axes(layout: dict) -> dict:
    """The layout's x and y axes by name ("xaxis", "yaxis3", ...)."""
    return {name: axis for name, axis in layout.items()
            if re.fullmatch(r"[xy]axis\d*", name) and isinstance(axis, dict)}


def square_grid(layout: dict) -> bool:
    """Whether the figure is a grid of panels with square cells (``scaleanchor`` and
    ``constrain="domain"``)."""
    return sum(bool(a.get("scaleanchor")) and a.get("constrain") == "domain"
               for a in _axes(layout).values()) >= 2


def reserve_margins(spec: dict) -> dict:
    """``spec`` (a figure as plotly.js gets it, a dict) with its left and bottom margins at least
    what its axes' labels and titles take (see the module's docstring), or unchanged when it cannot
    tell or when it is not a grid of square panels (:func:`square_grid`)."""
    layout, data = spec.get("layout") or {}, spec.get("data") or []
    if not square_grid(layout):
        return spec
    axes = _axes(layout)
    labels = {name: _labels(name, axis, data) for name, axis in axes.items()}
    need = {"l": 0.0, "b": 0.0}
    for name, axis in axes.items():
        untitled = not (axis.get("title") or {}).get("text")
        if not axis.get("automargin") or labels[name] == [] and untitled:
            continue
        letter = name[0]
        axis_side = axis.get("side", "bottom" if letter == "x" else "left")
        if axis_side not in ("bottom", "left") or axis.get("mirror"):
            return spec
        anchor = str(axis.get("anchor", "")).lstrip("xy")
        other = axes.get(("yaxis" if letter == "x" else "xaxis") + anchor, {})
        if (other.get("domain") or [0, 1])[0] > 0.01:
            # inside the figure (a panel not on the left or bottom edge): it pushes no margin
            continue
        auto_angle = (letter == "x" and labels[name]
                      and not isinstance(axis.get("tickangle"), (int, float)))
        if labels[name] is None or auto_angle:
            # labels plotly.js makes up, or turns by an angle it picks at the width it draws
            return spec
        side = "l" if letter == "y" else "b"
        need[side] = max(need[side], _depth(axis, layout, labels[name], letter))
    margin = dict(layout.get("margin") or {})
    for side, px in need.items():
        if px:
            margin[side] = max(margin.get(side, 80), math.ceil(px))
    layout["margin"] = margin
    return spec
