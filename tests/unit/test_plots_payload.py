"""plots/payload.py: the figure the browser gets carries its template's values itself, and no
template."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from transformer_viz.plots.common import TEMPLATE, make_figure
from transformer_viz.plots.layers import masked_attention_figure
from transformer_viz.plots.payload import apply_template, browser_figure


def _template() -> dict:
    return {"layout": {"font": {"color": "#222", "size": 11}, "paper_bgcolor": "white",
                       "xaxis": {"gridcolor": "grey", "ticks": ""}, "xaxis2": {"gridcolor": "pink"},
                       "coloraxis": {"colorbar": {"outlinewidth": 0}},
                       "annotationdefaults": {"arrowcolor": "blue", "showarrow": True}},
            "data": {"bar": [{"marker": {"line": {"width": 1}}},
                             {"marker": {"line": {"width": 2}}}],
                     "heatmap": [{"colorscale": "Viridis"}]}}


def test_the_template_fills_only_what_the_figure_leaves_unset():
    spec = {"data": [{"type": "bar", "y": [1]},
                     {"type": "bar", "y": [2], "marker": {"line": {"width": 9}}},
                     {"type": "bar", "y": [3], "xaxis": "x3"}, {"type": "heatmap", "z": [[1]]}],
            "layout": {"template": _template(), "font": {"size": 20}, "xaxis": {"ticks": "outside"},
                       "xaxis2": {}, "coloraxis2": {},
                       "annotations": [{"text": "a", "showarrow": False}]}}
    out = apply_template(spec)
    layout = out["layout"]
    assert "template" not in layout and "annotationdefaults" not in layout
    # its own size wins, the template's colour fills in
    assert layout["font"] == {"size": 20, "color": "#222"}
    assert layout["paper_bgcolor"] == "white"
    assert layout["xaxis"] == {"ticks": "outside", "gridcolor": "grey"}
    assert layout["xaxis2"] == {"gridcolor": "pink"}  # the template's own xaxis2, not its xaxis
    # named by a trace only: still templated
    assert layout["xaxis3"] == {"gridcolor": "grey", "ticks": ""}
    assert layout["coloraxis2"] == {"colorbar": {"outlinewidth": 0}}
    assert layout["annotations"] == [{"text": "a", "showarrow": False, "arrowcolor": "blue"}]
    widths = [t.get("marker", {}).get("line", {}).get("width") for t in out["data"][:3]]
    # the template's bars in turn (the second's own width wins), then round again
    assert widths == [1, 9, 1]
    assert out["data"][3]["colorscale"] == "Viridis"
    assert "type" in out["data"][3] and out["data"][0]["type"] == "bar"


def test_the_browser_figure_has_no_template_a_revision_and_the_same_values():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 5))
    masked = np.where(np.triu(np.ones((5, 5)), 1) > 0, -np.inf, scores)
    weights = np.exp(masked - masked.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    labels = [f"{i} t{i}" for i in range(5)]
    fig = masked_attention_figure(scores, masked, weights, labels, labels, title="layer 0, head 0")
    before = fig.to_dict()
    baked = browser_figure(fig)
    sent = json.loads(pio.to_json(baked, validate=False))
    assert fig.to_dict() == before  # the figure given is unchanged (it may be cached and shared)
    assert "template" not in sent["layout"] and sent["layout"]["datarevision"]
    # Everything the figure set is sent as it was; what it did not set comes from the template.
    template = TEMPLATE.to_plotly_json()
    assert sent["layout"]["title"]["text"] == "layer 0, head 0"
    assert sent["layout"]["font"]["color"] == template["layout"]["font"]["color"] == "#222"
    assert sent["layout"]["dragmode"] is False
    assert (sent["layout"]["xaxis"]["autotickangles"] == sent["layout"]["xaxis3"]["autotickangles"]
            == [0, -60, -90])
    assert sent["layout"]["plot_bgcolor"] == template["layout"]["plot_bgcolor"]
    assert len(baked.data) == len(fig.data)
    for got, own in zip(baked.data, fig.data):
        np.testing.assert_array_equal(got.z, own.z)
        assert ((got.hovertemplate, got.coloraxis, got.xaxis)
                == (own.hovertemplate, own.coloraxis, own.xaxis))
    # The same values give the same JSON (nothing to send again), other values another revision; a
    # figure without a template is passed through as it is.
    assert pio.to_json(browser_figure(fig)) == pio.to_json(baked)
    other = masked_attention_figure(scores, masked, weights, labels, labels,
                                    title="layer 0, head 1")
    assert (json.loads(pio.to_json(browser_figure(other)))["layout"]["datarevision"]
            != sent["layout"]["datarevision"])
    bare = go.Figure()
    bare.layout.template = None  # (the constructor gives every figure plotly's default template)
    assert browser_figure(bare) is bare


def test_a_figure_built_the_shared_way_sends_less():
    fig = make_figure([{"type": "heatmap", "z": np.arange(6.0).reshape(2, 3)}], {}, title="t")
    assert len(pio.to_json(browser_figure(fig))) < len(pio.to_json(fig)) - 4000


def test_a_browser_figure_keeps_its_dict_and_its_minimum_width():
    from transformer_viz.plots.common import min_width
    from transformer_viz.plots.layers import head_grid
    from transformer_viz.plots.payload import BrowserFigure

    rng = np.random.default_rng(1)
    labels = [f"{i} t{i}" for i in range(6)]
    fig = head_grid(rng.random((4, 6, 6)), labels, labels, selected=1, title="cross-attention")
    baked = browser_figure(fig)
    assert isinstance(baked, BrowserFigure) and browser_figure(baked) is baked
    assert baked.min_width == min_width(fig) and baked.min_width
    first = baked.to_dict()
    # made once: Streamlit reads it on every rerun that shows the figure
    assert baked.to_dict() is first
    # Streamlit reads only the dict: plotly's objects for the figure are not made until something
    # asks.
    pio.to_json(baked, validate=False)
    assert "_data_objs" not in baked.__dict__
    assert first == go.Figure.to_dict(baked)  # what plotly's own to_dict makes of it
    assert "_data_objs" in baked.__dict__ and baked.to_dict() is first
    assert "template" not in first["layout"] and first["layout"]["datarevision"]


def test_a_browser_figure_is_made_once_when_threads_ask_for_it_at_the_same_time():
    from concurrent.futures import ThreadPoolExecutor

    from transformer_viz.plots.layers import attention_map

    labels = [f"{i} t{i}" for i in range(7)]
    values = np.random.default_rng(2).random((7, 7))
    baked = browser_figure(attention_map(values, labels, labels))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: (baked.data[-1].z, baked.layout.datarevision), range(32)))
    for z, revision in got:
        np.testing.assert_array_equal(z, values)
        assert revision == baked.to_dict()["layout"]["datarevision"]
    assert not hasattr(baked, "no_such_attribute")


def test_y_axes_and_colour_bars_reach_the_browser_without_the_overflow_check_and_x_axes_keep_it():
    # plotly.js's "hide past div" check never hides a y axis's or a colour bar's label (they stay
    # inside the margins); an x axis of numbers keeps it, since there it hides a label past the
    # right edge.
    scores = np.arange(12.0).reshape(3, 4)
    masked = np.where(np.tril(np.ones((3, 4))) > 0, scores, -np.inf)
    weights = np.full((3, 4), 0.25)
    spec = browser_figure(masked_attention_figure(scores, masked, weights, list("abcd"),
                                                  list("xyz"))).to_dict()
    layout = spec["layout"]
    y_axes = [v for k, v in layout.items() if k.startswith("yaxis")]
    x_axes = [v for k, v in layout.items() if k.startswith("xaxis")]
    assert len(y_axes) == 3 and all(axis["ticklabeloverflow"] == "allow" for axis in y_axes)
    assert x_axes and not any("ticklabeloverflow" in axis for axis in x_axes)
    bars = [t["colorbar"] for t in spec["data"] if t["type"] == "heatmap" and "colorbar" in t]
    bars += [v["colorbar"] for k,
             v in layout.items() if k.startswith("coloraxis") and "colorbar" in v]
    assert bars and all(bar["ticklabeloverflow"] == "allow" for bar in bars)
