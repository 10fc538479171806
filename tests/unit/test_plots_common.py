"""plots/common.py: the one way masked cells are drawn, masks in two flat colours, and the
softmax."""

from __future__ import annotations

import numpy as np
import torch

from tests.support.figures import traces, z_of
from transformer_viz.plots.common import (ALLOWED_COLOUR, MASKED_COLOUR, heatmap, heatmap_traces,
                                          make_figure, mask_figure)
from transformer_viz.text.analysis import log_softmax, softmax


def test_masked_cells_get_a_grey_trace_of_their_own_and_no_colour():
    scores = np.array([[0.5, -np.inf, 2.0], [-1.0, 0.0, -np.inf]])
    grey, colour = heatmap_traces(scores, ["a", "b", "c"], ["x", "y"], "score",
                                  panel="masked scores")
    assert (grey["name"], colour["name"]) == ("masked scores masked", "masked scores")
    masked = np.isneginf(scores)
    np.testing.assert_array_equal(~np.isnan(grey["z"]), masked)  # grey exactly where the mask is
    np.testing.assert_array_equal(np.isnan(colour["z"]), masked)  # and no colour there
    np.testing.assert_array_equal(colour["z"][~masked], scores[~masked])
    assert grey["colorscale"][0][1] == grey["colorscale"][-1][1] == MASKED_COLOUR
    assert ("masked (−∞)" in grey["hovertemplate"]
            and colour["hovertemplate"].startswith("masked scores<br>"))
    # nothing masked: no grey trace at all
    assert ([t["name"] for t in heatmap_traces(np.zeros((2, 2)), [0, 1], [0, 1], "weight")]
            == ["weight"])


def test_heatmap_keeps_values_labels_and_its_colour_scale():
    values = np.array([[0.1, -np.inf], [0.3, 0.4]])
    fig = heatmap(values, ["k0", "k1"], ["q0", "q1"], colorscale="Viridis", zmin=0, zmax=1,
                  hover_value="weight")
    grey, colour = traces(fig, "masked")[0], traces(fig, "weight")[0]
    np.testing.assert_array_equal(~np.isnan(z_of(grey)), np.isneginf(values))
    # weights in [0, 1], not centred on 0
    assert colour.zmin == 0 and colour.zmax == 1 and colour.zmid is None
    assert list(colour.x) == ["k0", "k1"] and list(colour.y) == ["q0", "q1"]
    assert fig.layout.yaxis.autorange == "reversed"  # the first row on top, as in the matrix


def test_a_mask_is_drawn_in_two_flat_colours():
    allowed = np.tril(np.ones((3, 3), dtype=bool))
    fig = mask_figure(allowed, ["0", "1", "2"], ["0", "1", "2"], allowed_name="may attend")
    grey, through = traces(fig, "masked")[0], traces(fig, "may attend")[0]
    np.testing.assert_array_equal(~np.isnan(z_of(grey)), ~allowed)
    np.testing.assert_array_equal(~np.isnan(z_of(through)), allowed)
    assert {c for _, c in through.colorscale} == {ALLOWED_COLOUR} and through.showscale is False


def test_softmax_and_log_softmax_match_torch_and_survive_large_logits():
    logits = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, -1000.0]])
    expected = torch.log_softmax(torch.tensor(logits), -1).numpy()
    np.testing.assert_allclose(log_softmax(logits), expected, atol=1e-12)
    np.testing.assert_allclose(softmax(logits).sum(-1), 1.0)
    np.testing.assert_allclose(softmax(logits)[1], [0.5, 0.5, 0.0], atol=1e-12)


def test_word_start_mark_is_shown_one_way():
    from transformer_viz.plots.common import WORD_START, token_labels, token_text

    assert WORD_START == "␣" and token_text("▁Zwei") == "␣Zwei" and token_text("en") == "en"
    assert token_labels(["▁Zwei", "▁<b>", "."]) == ["0 ␣Zwei", "1 ␣&lt;b&gt;", "2 ."]


def test_projector_layout_enlarges_every_text_and_swaps_the_sequential_scale_on_a_copy():
    from transformer_viz.plots.common import (PROJECTOR_SEQUENTIAL, PROJECTOR_TICK_SIZE,
                                              projector_layout)
    from transformer_viz.plots.layers import head_grid

    fig = head_grid(np.full((4, 3, 3), 1 / 3), ["a", "b", "c"], ["a", "b", "c"], title="heads")
    before = fig.to_plotly_json()
    big = projector_layout(fig, height=430)
    assert fig.to_plotly_json() == before  # the (cached, shared) figure is not changed
    assert big.layout.height == 430 and big.layout.font.size >= 20
    axes = [*big.select_xaxes(), *big.select_yaxes()]
    assert len(axes) == 8 and all(a.tickfont.size >= PROJECTOR_TICK_SIZE for a in axes)
    # the panel titles "head j"
    assert all(a.font.size >= PROJECTOR_TICK_SIZE for a in big.layout.annotations)
    long = projector_layout(make_figure([],
                                        {
        "annotations": [{"text": "a panel title far too long to grow",
                         "font": {"size": 12}}]}))
    assert long.layout.annotations[0].font.size == 12  # it would overlap its neighbour
    assert big.layout.coloraxis.colorbar.tickfont.size >= PROJECTOR_TICK_SIZE
    assert big.layout.coloraxis.colorscale != fig.layout.coloraxis.colorscale
    assert (big.layout.coloraxis.colorscale
            == projector_layout(heatmap(np.eye(2), colorscale=PROJECTOR_SEQUENTIAL)
                                ).data[0].colorscale)
    # a diverging scale is high-contrast already: kept
    signed = heatmap(np.array([[-1.0, 1.0]]))
    assert projector_layout(signed).data[0].colorscale == signed.data[0].colorscale


def test_a_figure_of_panels_side_by_side_asks_for_the_width_its_panels_and_their_titles_need():
    import numpy as np

    from transformer_viz.plots.architecture import architecture_figure
    from transformer_viz.plots.common import PANEL_MIN_WIDTH, heatmap, min_width
    from transformer_viz.plots.layers import head_grid, masked_attention_figure

    z = np.zeros((3, 3))
    assert min_width(heatmap(z)) is None  # one panel lays out at any width
    assert (min_width(head_grid(np.zeros((8, 3, 3)), list("abc"), list("abc")))
            == 4 * PANEL_MIN_WIDTH + 60)
    assert (min_width(masked_attention_figure(z, z, z, list("abc"), list("abc")))
            == 3 * PANEL_MIN_WIDTH + 60)
    # Panel titles longer than a panel's minimum widen every panel: 7.5 px a character + 30 px.
    from transformer_viz.plots.common import make_figure
    from transformer_viz.plots.layers import grid_axes

    layout, _ = grid_axes(2, 2, titles=["a title of thirty characters..", "b"])
    assert min_width(make_figure([], layout)) == 2 * (int(7.5 * 30) + 30) + 60
    assert (min_width(architecture_figure(N=2, d_model=32, h=4, d_ff=64, vocab_size=100, S=3, T=4))
            == 800)


def test_a_heatmap_that_writes_its_values_asks_for_cells_wide_enough_to_read_them():
    import numpy as np

    from transformer_viz.plots.common import heatmap, min_width

    z = np.zeros((4, 10))
    # "-0.12" in every cell
    assert min_width(heatmap(z, text_format="%{z:.2f}")) == int(10 * (7.5 * 5 + 10)) + 200
    # not more than a 1280 px window has
    assert min_width(heatmap(np.zeros((4, 16)), text_format="%{z:.2f}")) == 800
    assert min_width(heatmap(z)) is None  # colours only: any width will do


def test_importing_the_plots_leaves_plotly_as_it_was_and_each_figure_carries_the_template(
        monkeypatch):
    import subprocess
    import sys
    from pathlib import Path

    import plotly.io as pio

    from transformer_viz.plots.common import TEMPLATE, TEXT_COLOUR

    # A fresh interpreter: in this one the plots were imported long ago.
    check = ("import plotly.io as pio; before, names = pio.templates.default, set(pio.templates); "
             "import transformer_viz.plots.common, transformer_viz.plots.layers; "
             "assert pio.templates.default == before, pio.templates.default; assert "
             "set(pio.templates) == names")
    subprocess.run([sys.executable, "-c", check],
                   cwd=Path(__file__).resolve().parents[2], check=True)
    # e.g. what Streamlit sets when imported
    monkeypatch.setattr(pio.templates, "default", "plotly_dark")
    for fig in (make_figure([], {}), heatmap(np.zeros((2, 2))),
                mask_figure(np.eye(2, dtype=bool), [0, 1], [0, 1])):
        assert fig.layout.template == TEMPLATE
        assert (fig.layout.template.layout.font.color == TEXT_COLOUR
                and fig.layout.template.layout.dragmode is False)


def test_make_figure_is_one_validated_construction_equal_to_the_shared_look_applied_after():
    # make_figure merges the shared look into the layout dict before the figure is validated, once;
    # it must equal the figure made first and given the look with base_layout's updates.
    import json

    import plotly.graph_objects as go

    from transformer_viz.plots.common import base_layout

    data = [{"type": "heatmap", "z": np.arange(6.0).reshape(2, 3), "x": ["a", "b", "c"],
             "y": ["p", "q"]}]
    layouts = [{},
               {"title": {"text": "the layout's own", "font": {"size": 30}},
                "font": {"color": "#123456"},
                "margin": {"pad": 4, "l": 99}, "height": 500, "xaxis": {"title": {"text": "key"}}}]
    for layout in layouts:
        for title, height, panel_titles in [(None, None, False), ("a title", 300, False),
                                            ("t", None, True), (None, 250, True)]:
            made = make_figure(data, layout, title, height, panel_titles)
            reference = base_layout(go.Figure({"data": data, "layout": layout}), title, height)
            if panel_titles:
                reference.layout.margin.t = 75 if title else 35
            expected = json.loads(reference.to_json())
            # the update leaves an empty title: drawn as none
            if expected["layout"].get("title") == {}:
                del expected["layout"]["title"]
            assert json.loads(made.to_json()) == expected, (layout, title, height, panel_titles)


def test_projector_layout_draws_panel_titles_at_18_px_and_breaks_a_long_title_to_fit_551_px():
    from transformer_viz.plots.common import PROJECTOR_TITLE_SIZE, projector_layout
    from transformer_viz.plots.margins import text_width
    from transformer_viz.plots.sampling import families_figure

    fig = families_figure(["a", "b"], ["c", "d"], ["a", "b", "c", "d"],
                          title="Encoder–decoder: three attentions. Decoder-only: one, causal")
    big = projector_layout(fig, height=430)
    panels = [a for a in big.layout.annotations if a.yanchor == "bottom" and a.showarrow is False]
    assert len(panels) == 4 and all(a.font.size >= 18 for a in panels), [a.font.size
                                                                         for a in panels]
    lines = big.layout.title.text.split("<br>")
    assert len(lines) == 2 and " ".join(lines) == fig.layout.title.text
    assert all(text_width(line, PROJECTOR_TITLE_SIZE) <= 440 for line in lines)
    assert big.layout.margin.t >= fig.layout.margin.t + 28
    note = projector_layout(make_figure([], {"annotations": [{"text": "encoder: 17 source tokens",
                                                              "font": {"size": 13}}]}))
    assert note.layout.annotations[0].font.size == 16


def test_projector_title_stands_above_the_top_rows_panel_titles():
    """A wrapped projector title is anchored at the figure's top and the top margin holds its lines
    and the top row's panel titles: centred in the margin, its second line ran into them (Lecture
    step 7)."""
    from transformer_viz.plots.common import (PROJECTOR_PANEL_LEADING, PROJECTOR_TITLE_LEADING,
                                              projector_layout)
    from transformer_viz.plots.layers import masked_attention_figure

    z = np.zeros((3, 3))
    fig = projector_layout(masked_attention_figure(z, z, z, list("abc"), list("abc"),
                                                   "Decoder layer 0, head 0: scores → mask → "
                                                   "softmax"))
    assert fig.layout.title.text.count("<br>") == 1
    assert fig.layout.title.yanchor == "top" and fig.layout.title.y == 1
    assert fig.layout.margin.t >= 2 * PROJECTOR_TITLE_LEADING + 2 * PROJECTOR_PANEL_LEADING
