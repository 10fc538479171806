"""A figure as the browser is sent it: the same figure with its template's values written into it, no
template, and a data revision.

Why. Streamlit's chart element turns a figure into JSON, and after plotly.js has drawn it once, hands it
a copy of that JSON again (its own state, re-parsed). plotly.js's ``react`` then compares the copy with what
it drew, attribute by attribute: ``layout.template`` is an object compared by identity, and so are the data
arrays unless ``layout.datarevision`` is set, so either one makes it redraw the whole figure. A figure with
a template therefore drew twice for every new sentence. Written out, the template's values are ordinary
attributes, equal in the copy; with a revision, the copied arrays count as unchanged; the figure draws once
(and the template, about 3 kB of JSON per figure, is no longer sent with each).

The result is a :class:`BrowserFigure`, made once per figure and then only read: Streamlit turns the
figure it is given into a dict on every rerun that shows it (a copy of every value, about 1 ms for an
attention map), and the page measures its minimum width; both are worked out once and kept.

Written out the way plotly.js applies a template (``plot_api/plot_template.js``): a value the figure sets
wins; ``layout.xaxis`` of the template applies to every x axis (``xaxis2``, ...), and likewise for the
other numbered subplots; ``layout.annotationdefaults`` (and ``shapedefaults``, ...) to every item of that
list; and the i-th trace of a type takes the template's ``data[type][i mod n]``.
"""

from __future__ import annotations

import copy
import hashlib
import re

import plotly.graph_objects as go
import plotly.io as pio

from transformer_viz.plots.common import min_width

# Layout containers that come numbered (xaxis2, coloraxis3, ...): the template's unnumbered one applies to all.
NUMBERED = ("xaxis", "yaxis", "coloraxis", "scene", "polar", "ternary", "geo", "mapbox", "map", "smith")


def fill_defaults(target: dict, defaults: dict) -> dict:
    """``target`` with every value of ``defaults`` it lacks, recursively into dicts; its own values win."""
    for key, value in defaults.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(target[key], dict):
            fill_defaults(target[key], value)
    return target


def apply_template(spec: dict) -> dict:
    """A figure's JSON (``{"data": [...], "layout": {...}}``) with its ``layout.template`` written into it
    and removed. Changes ``spec`` in place and returns it."""
    layout = spec.setdefault("layout", {})
    template = layout.pop("template", None) or {}
    data = spec.setdefault("data", [])
    # Subplots a trace names but the layout does not (a default axis still takes the template's values).
    for trace in data:
        for axis in ("xaxis", "yaxis"):  # a trace's "x2" is the layout's "xaxis2"
            if isinstance(trace.get(axis), str):
                layout.setdefault(axis + trace[axis][1:], {})
    if any(t.get("type", "scatter") not in ("pie", "table", "sunburst", "treemap", "indicator") for t in data):
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
            fill_defaults(trace, {k: v for k, v in items[index % len(items)].items() if k != "type"})
    return spec


class BrowserFigure(go.Figure):
    """A figure as the browser gets it, never changed once made (:func:`browser_figure`): its dict and its
    minimum width are worked out on first use and kept. ``to_dict`` hands out that one dict: read it, never
    change it (a cached figure is shared by every session)."""

    def to_dict(self) -> dict:
        kept = self.__dict__.get("_kept_dict")
        if kept is None:
            kept = self._kept_dict = super().to_dict()
        return kept

    @property
    def min_width(self) -> int | None:
        """:func:`~transformer_viz.plots.common.min_width` of the figure."""
        if "_kept_min_width" not in self.__dict__:
            self._kept_min_width = min_width(self)
        return self._kept_min_width


def browser_figure(fig: go.Figure) -> go.Figure:
    """``fig`` as the browser should get it (see the module's docstring): a new :class:`BrowserFigure`, ``fig``
    unchanged. A browser figure, a figure without a template, or anything that is not a figure, is returned
    as it is."""
    if isinstance(fig, BrowserFigure) or not isinstance(fig, go.Figure) or not fig.layout.template.to_plotly_json():
        return fig  # (an unset template reads as empty)
    # Copies of the traces and the layout (``fig`` stays as it is), arrays as arrays: Figure.to_dict would
    # encode them, and the new figure's values would no longer read as arrays.
    spec = apply_template({"data": [trace.to_plotly_json() for trace in fig.data],
                           "layout": fig.layout.to_plotly_json()})
    # The revision names the content: a figure built again from the same values is the same figure to
    # Streamlit (same JSON, nothing re-sent or redrawn), and one with other values is a new revision.
    spec["layout"]["datarevision"] = hashlib.blake2b(pio.to_json(spec, validate=False).encode(),
                                                     digest_size=8).hexdigest()
    # Unvalidated: every value came from a validated figure or template (validating again cost 10–13 ms for
    # an attention map or a grid of heads).
    out = BrowserFigure(spec, _validate=False)
    # The constructor gave it plotly's default template; removed through the validator, which drops the
    # key (an unvalidated None would be sent as "template": null).
    out.layout._validate = True
    try:
        out.layout.template = None
    finally:
        out.layout._validate = False
    return out
