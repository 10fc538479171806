"""Block diagrams of the model (the architecture on the Overview, the flow of shapes on the Shapes
page): labelled boxes, arrows along the data flow, the residual connection around every sublayer
into its Add & Norm, and the encoder's output feeding cross-attention.

Readable from the back of a lecture hall: text of TEXT_SIZE px, dark on light fills. x runs from 0
to 100 (a share of the figure's width), y is in pixels from the bottom, so a box's height is exact
and its width is known for a figure DESIGN_WIDTH px wide: the main column of a 1280 px window.
:func:`text_fits` says whether a box's lines fit inside it at that width.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import plotly.graph_objects as go

from transformer_viz.plots.common import INK, OUTLINE, make_figure

TEXT_SIZE = 14  # px, every label of a diagram
TITLE_SIZE = 17
# px of plot area: the figure in the main column of a 1280 px window (about 800 px), less margins
DESIGN_WIDTH = 760
# × the font size: a generous mean advance for digits, capitals, brackets and spaces
CHAR_WIDTH = 0.62
BOLD = 1.1  # bold text is this much wider
LINE_HEIGHT = 1.3  # × the font size
PAD_X, PAD_Y = 8, 4  # px of room kept between a box's text and its edges
ARROW_COLOUR = OUTLINE
RESIDUAL_COLOUR = "#2b6cb0"  # the residual connections: one colour, named in the captions
FRAME_FILL = "#f4f4f4"  # the frame around a layer's sublayers
BOTTOM_MARGIN, TOP_MARGIN = 10, 60  # px, as the layout below sets them
GAP = 24  # px between two boxes of a column: room for an arrow
BRANCH = 10  # px under a sublayer where its residual branches off the stream (less than GAP)
FRAME_TOP = 12  # px between a frame's last box and its top edge
# What the lines of a diagram mean, said under each one.
DIAGRAM_CAPTION = ("Bottom to top, as in the paper. Grey arrows: the data flow. Blue: the residual "
                   "connections, x + Sublayer(x), into each Add & Norm. The encoder's output (the "
                   "memory) gives the keys and values (K, V) of the cross-attention in every "
                   "decoder layer. Hover a block for its tensors.")


@dataclass
class Box:
    """A labelled block: x0, x1 in 0-100 of the width, y0, y1 in px; ``lines`` are plotly text
    (escaped)."""

    x0: float
    y0: float
    x1: float
    y1: float
    fill: str
    lines: list[str]
    hover: str = ""
    text_colour: str = INK

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


def text_width(line: str, size: float = TEXT_SIZE) -> float:
    """The width in px a line of plotly text takes at most: markup removed, entities as one
    character, bold runs wider."""
    bold = sum(len(html.unescape(m)) for m in re.findall(r"<b>(.*?)</b>", line))
    plain = len(html.unescape(re.sub(r"<[^>]+>", "", line)))
    return (plain - bold + bold * BOLD) * CHAR_WIDTH * size


def text_fits(box: Box, width_px: float = DESIGN_WIDTH, size: float = TEXT_SIZE) -> bool:
    """Whether the box's lines fit inside it when the figure's plot area is ``width_px`` wide."""
    box_width = (box.x1 - box.x0) / 100 * width_px
    widest = max((text_width(line, size) for line in box.lines), default=0.0)
    return (widest + 2 * PAD_X <= box_width
            and len(box.lines) * size * LINE_HEIGHT + 2 * PAD_Y <= box.y1 - box.y0)


def box_height(n_lines: int) -> float:
    """The height in px of a box that holds n lines of diagram text."""
    return n_lines * TEXT_SIZE * LINE_HEIGHT + 2 * PAD_Y + 6


@dataclass
class Diagram:
    """Boxes, frames, arrows and residual paths, collected and then built into one figure at
    once."""

    boxes: list[Box] = field(default_factory=list)
    frames: list[dict] = field(default_factory=list)  # drawn first: under the boxes they hold
    shapes: list[dict] = field(default_factory=list)
    annotations: list[dict] = field(default_factory=list)

    def box(self, x0: float, y0: float, x1: float, height: float, fill: str, lines: list[str],
            hover: str = "") -> Box:
        box = Box(x0, y0, x1, y0 + height, fill, lines, hover)
        self.boxes.append(box)
        self.shapes.append({"type": "rect", "x0": x0, "y0": y0, "x1": x1, "y1": box.y1,
                            "fillcolor": fill, "line": {"color": OUTLINE, "width": 1},
                            "layer": "below", "name": "block"})
        return box

    def frame(self, inner: list[Box], x0: float, x1: float, pad: float, label: str, label_x: float,
              hover: str) -> None:
        """A frame around a layer's sublayers (drawn under them), with its repeat count (``label``,
        "3×") outside it at ``label_x``."""
        y0, y1 = min(b.y0 for b in inner) - pad, max(b.y1 for b in inner) + FRAME_TOP
        self.frames.append({"type": "rect", "x0": x0, "y0": y0, "x1": x1, "y1": y1,
                            "fillcolor": FRAME_FILL, "line": {"color": OUTLINE, "width": 1.5},
                            "layer": "below", "name": "layer frame"})
        self.annotations.append({"x": label_x, "y": (y0 + y1) / 2, "text": f"<b>{label}</b>",
                                 "showarrow": False, "font": {"size": TITLE_SIZE, "color": INK},
                                 "hovertext": hover, "name": "repeat"})

    def arrow(self, tail: tuple[float, float], head: tuple[float, float],
              colour: str = ARROW_COLOUR, name: str = "flow") -> None:
        self.annotations.append({"x": head[0], "y": head[1], "ax": tail[0], "ay": tail[1],
                                 "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
                                 "showarrow": True, "arrowhead": 2, "arrowsize": 1.2,
                                 "arrowwidth": 1.6, "arrowcolor": colour, "text": "", "name": name})

    def flow(self, lower: Box, upper: Box) -> None:
        """The data flow from one box up into the next (same column)."""
        self.arrow((lower.cx, lower.y1), (upper.cx, upper.y0))

    def residual(self, sublayer: Box, norm: Box, x: float) -> None:
        """x + Sublayer(x): the stream branches off just below the sublayer, runs beside it at ``x``
        and joins its Add & Norm from that side."""
        branch = sublayer.y0 - BRANCH
        edge = norm.x0 if x < norm.x0 else norm.x1
        self.shapes.append({"type": "path",
                            "path": f"M {sublayer.cx},{branch} L {x},{branch} L {x},{norm.cy}",
                            "line": {"color": RESIDUAL_COLOUR, "width": 2.2}, "name": "residual"})
        self.arrow((x, norm.cy), (edge, norm.cy), RESIDUAL_COLOUR, "residual")

    def connector(self, source: Box, target: Box, x: float, label: str) -> None:
        """The encoder's output into a decoder box in the other column: out of the source's side,
        along ``x`` (with ``label`` written along it), into the target's side."""
        start = source.x1 if x > source.x1 else source.x0
        end = target.x0 if x < target.x0 else target.x1
        self.shapes.append({"type": "path",
                            "path": f"M {start},{source.cy} L {x},{source.cy} L {x},{target.cy}",
                            "line": {"color": ARROW_COLOUR, "width": 1.6}, "name": "memory"})
        self.arrow((x, target.cy), (end, target.cy), ARROW_COLOUR, "memory")
        self.annotations.append({"x": x, "y": (source.cy + target.cy) / 2, "text": label,
                                 "textangle": -90, "showarrow": False, "bgcolor": "#ffffff",
                                 "font": {"size": TEXT_SIZE, "color": INK}, "name": "memory label"})

    def figure(self, title: str | None) -> go.Figure:
        top = max(b.y1 for b in self.boxes)
        text = {"type": "scatter", "mode": "text", "x": [b.cx for b in self.boxes],
                "y": [b.cy for b in self.boxes], "text": ["<br>".join(b.lines) for b in self.boxes],
                "hovertext": [b.hover for b in self.boxes], "hoverinfo": "text",
                "showlegend": False,
                "textfont": {"size": TEXT_SIZE, "color": [b.text_colour for b in self.boxes]}}
        layout = {"shapes": self.frames + self.shapes, "annotations": self.annotations,
                  "xaxis": {"visible": False, "range": [0, 100], "fixedrange": True},
                  "yaxis": {"visible": False, "range": [0, top], "fixedrange": True}}
        fig = make_figure([text], layout, title, height=int(top) + TOP_MARGIN + BOTTOM_MARGIN)
        # The plot area is exactly ``top`` px high, so that a box's height in y is its
        # height on the screen.
        fig.update_layout(margin={"t": TOP_MARGIN, "b": BOTTOM_MARGIN},
                          title={"text": title, "font": {"size": TITLE_SIZE, "color": INK}},
                          # narrower, the labels would leave their boxes
                          meta={"min_width": DESIGN_WIDTH + 40})
        return fig


def stack(diagram: Diagram, x0: float, x1: float, y: float, items: list[tuple[str, list[str], str]],
          gap: float) -> list[Box]:
    """Boxes one above the other from ``y`` up, each (fill, lines, hover), a flow arrow between
    neighbours."""
    boxes = []
    for fill, lines, hover in items:
        box = diagram.box(x0, y, x1, box_height(len(lines)), fill, lines, hover)
        if boxes:
            diagram.flow(boxes[-1], box)
        boxes.append(box)
        y = box.y1 + gap
    return boxes


# --- colour contrast (WCAG 2) ---------------------------------------------------------------------

def relative_luminance(colour: str) -> float:
    """The WCAG relative luminance of a colour "#rgb" or "#rrggbb"."""
    hex_digits = colour.lstrip("#")
    if len(hex_digits) == 3:
        hex_digits = "".join(c * 2 for c in hex_digits)
    channels = [int(hex_digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG contrast ratio, from 1 (none) to 21 (black on white); text needs 4.5 (level AA)."""
    a, b = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (a + 0.05) / (b + 0.05)
