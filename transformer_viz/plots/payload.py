"""A figure as the browser is sent it: the same figure with its template's values written into it,
no template, and a data revision.

Why. Streamlit's chart element turns a figure into JSON, and after plotly.js has drawn it once,
hands it a copy of that JSON again (its own state, re-parsed). plotly.js's ``react`` then compares
the copy with what it drew, attribute by attribute: ``layout.template`` is an object compared by
identity, and so are the data arrays unless ``layout.datarevision`` is set, so either one makes it
redraw the whole figure. A figure with a template therefore drew twice for every new sentence.
Written out, the template's values are ordinary attributes, equal in the copy; with a revision, the
copied arrays count as unchanged; the figure draws once (and the template, about 3 kB of JSON per
figure, is no longer sent with each).

A grid of square heatmaps has its left and bottom margins widened to the room its tick labels and
titles take (:mod:`~transformer_viz.plots.margins`): plotly.js then keeps them and draws it once,
instead of redrawing it while the margins its labels push keep changing.

The result is a :class:`BrowserFigure`, made once per figure and then only read: Streamlit turns the
figure it is given into a dict on every rerun that shows it (a copy of every value, about 1 ms for
an attention map), and the page measures its minimum width; both are worked out once and kept.

Written out the way plotly.js applies a template (``plot_api/plot_template.js``): a value the figure
sets wins; ``layout.xaxis`` of the template applies to every x axis (``xaxis2``, ...), and likewise
for the other numbered subplots; ``layout.annotationdefaults`` (and ``shapedefaults``, ...) to every
item of that list; and the i-th trace of a type takes the template's ``data[type][i mod n]``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import re
import threading

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from transformer_viz.plots.common import min_width
from transformer_viz.plots.describe import describe
from transformer_viz.plots.margins import reserve_margins

# Layout containers that come numbered (xaxis2, coloraxis3, ...): the template's unnumbered
# one applies to all.
NUMBERED = ("xaxis", "yaxis", "coloraxis", "scene", "polar", "ternary", "geo", "mapbox", "map",
            "smith")


def fill_defaults(target: dict, defaults: dict) -> dict:
    """``target`` with every value of ``defaults`` it lacks, recursively into dicts; its own values
    win."""
    for key, value in defaults.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(target[key], dict):
            fill_defaults(target[key], value)
    return target


def apply_template(spec: dict) -> dict:
    """A figure's JSON (``{"data": [...], "layout": {...}}``) with its ``layout.template`` written
    into it and removed. Changes ``spec`` in place and returns it."""
    layout = spec.setdefault("layout", {})
    template = layout.pop("template", None) or {}
    data = spec.setdefault("data", [])
    # Subplots a trace names but the layout does not (a default axis still takes the
    # template's values).
    for trace in data:
        for axis in ("xaxis", "yaxis"):  # a trace's "x2" is the layout's "xaxis2"
            if isinstance(trace.get(axis), str):
                layout.setdefault(axis + trace[axis][1:], {})
    if any(t.get("type", "scatter") not in ("pie", "table", "sunburst", "treemap", "indicator")
           for t in data):
        layout.setdefault("xaxis", {})
        layout.setdefault("yaxis", {})
    template_layout = template.get("layout", {})
    for key, value in template_layout.items():
        if key.endswith("defaults") and isinstance(layout.get(key[:-len("defaults")] + "s"), list):
            for item in layout[key[:-len("defaults")] + "s"]:
                fill_defaults(item, value)
        elif key.endswith("defaults"):
            continue
        elif key in NUMBERED:
            for name in [k for k in layout if re.fullmatch(rf"{key}\d*", k)]:
                if name == key or name not in template_layout:
                    fill_defaults(layout[name], value)
        elif key not in layout:
            layout[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(layout[key], dict):
            fill_defaults(layout[key], value)
    seen: dict[str, int] = {}
    for trace in data:
        kind = trace.get("type", "scatter")
        items = template.get("data", {}).get(kind) or []
        index = seen.get(kind, 0)
        seen[kind] = index + 1
        if items:
            fill_defaults(trace,
                          {k: v for k, v in items[index % len(items)].items() if k != "type"})
    return spec


class BrowserFigure(go.Figure):
    """A figure as the browser gets it, never changed once made (:func:`browser_figure`): its dict
    and its minimum width, worked out once and kept. ``to_dict`` hands out that one dict: read it,
    never change it (a cached figure is shared by every session).

    Streamlit reads only the dict, so plotly's objects for the figure (``data``, ``layout``, ...;
    about 2 ms to make for an attention map, and as long again for their first ``to_dict``) are made
    only when something else asks for them, from that same dict."""

    def __init__(self, spec: dict, min_width: int | None = None, alt: str = ""):
        # go.Figure.__init__ is what makes plotly's objects: called by __getattr__, on the
        # first access to them.
        self.__dict__.update(_kept_dict=spec, _kept_min_width=min_width, _kept_alt=alt)

    def __getattr__(self, name: str):
        # Reached only for what the instance lacks: plotly's own state, until the
        # first access makes it.
        if name.startswith("__") or "_kept_dict" not in self.__dict__:
            raise AttributeError(name)
        with _MAKING:  # re-entrant: plotly reads attributes of the figure while it makes them
            made = self.__dict__.get("_made")
            if made is None:
                # being made: what plotly looks for meanwhile is not there yet
                self.__dict__["_made"] = False
                try:
                    _build(self, self._kept_dict)
                except BaseException:
                    self.__dict__["_made"] = None
                    raise
                self.__dict__["_made"] = True
            elif not made:  # only the thread making them gets here: it holds the lock
                raise AttributeError(name)
        return object.__getattribute__(self, name)

    def to_dict(self) -> dict:
        return self._kept_dict

    @property
    def min_width(self) -> int | None:
        """:func:`~transformer_viz.plots.common.min_width` of the figure."""
        return self._kept_min_width

    @property
    def alt(self) -> str:
        """The figure in one sentence for a screen reader (plots/describe.py)."""
        return self._kept_alt


_MAKING = threading.RLock()


def _build(fig: BrowserFigure, spec: dict) -> None:
    """Makes plotly's objects of ``fig`` from ``spec``, validated as any figure is: only tests and
    notebooks ask for them (the app reads the dict), so the 2 ms saved
    unvalidated went (fenced/)."""
    go.Figure.__init__(fig, _numpy_arrays(spec))
    fig.layout.template = None  # the constructor gave it plotly's default template


def _numpy_arrays(value):
    """A copy of ``value`` with plotly.js typed arrays (``{"dtype", "bdata"[, "shape"]}``) read back
    into numpy arrays, the values plotly's own figures hold."""
    if isinstance(value, dict):
        if set(value) in ({"dtype", "bdata"}, {"dtype", "bdata", "shape"}):
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            shape = value.get("shape")
            return (array.reshape([int(n) for n in shape.split(",") if n.strip()]) if shape
                    else array)
        return {key: _numpy_arrays(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numpy_arrays(item) for item in value]
    return value


def browser_figure(fig: go.Figure) -> go.Figure:
    """``fig`` as the browser should get it (see the module's docstring): a new
    :class:`BrowserFigure`, ``fig`` unchanged. A browser figure, a figure without a template, or
    anything that is not a figure, is returned as it is."""
    if (isinstance(fig, BrowserFigure) or not isinstance(fig, go.Figure)
            or not fig.layout.template.to_plotly_json()):
        return fig  # (an unset template reads as empty)
    # A copy (``fig`` stays as it is), numeric arrays as typed arrays (base64), as
    # plotly sends them.
    spec = apply_template(fig.to_dict())
    reserve_margins(spec)  # a grid of square heatmaps: the room its labels take (plots/margins.py)
    return BrowserFigure(_with_revision(spec), min_width(fig), describe(fig))


def _with_revision(spec: dict) -> dict:
    """``spec`` with a ``layout.datarevision`` that names its content: a figure built again from the
    same values is the same figure to Streamlit (same JSON, nothing re-sent or redrawn), and one
    with other values is a new revision."""
    spec["layout"].pop("datarevision", None)
    spec["layout"]["datarevision"] = hashlib.blake2b(pio.to_json(spec, validate=False).encode(),
                                                     digest_size=8).hexdigest()
    return spec


def _replaced(value, replacements: dict[str, str]):
    """A copy of ``value`` (dicts, lists, strings) with every key of ``replacements`` replaced in
    its strings."""
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: _replaced(item, replacements) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, replacements) for item in value]
    return value


def with_text_replaced(fig: BrowserFigure, replacements: dict[str, str]) -> BrowserFigure:
    """A browser figure made from ``fig`` by replacing text in its strings, with its own data
    revision: for a figure whose layout does not depend on some of its text (the shapes written in
    the architecture's boxes), built once with placeholders and then filled in, much faster than
    building it again."""
    return BrowserFigure(_with_revision(_replaced(fig.to_dict(), replacements)), fig.min_width,
                         _replaced(fig.alt, replacements))
