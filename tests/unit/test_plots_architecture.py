"""plots/architecture.py and plots/blocks.py: the encoder–decoder stack drawn readable from the back
row, with the data flow, the residual connections and the memory into cross-attention."""

from __future__ import annotations

import pytest

from tests.support.figures import assert_readable_diagram
from transformer_viz.plots.architecture import architecture_figure
from transformer_viz.plots.blocks import (TEXT_SIZE, Box, contrast_ratio, relative_luminance,
                                          text_fits, text_width)


@pytest.mark.parametrize("N, d_model, h, d_ff, V, S, T", [
    (3, 256, 8, 1024, 8000, 12, 14),  # the shipped models
    (6, 512, 8, 2048, 37000, 60, 64),  # the paper's base model, long sentences
    (2, 32, 4, 64, 160, "S", "T"),  # the preview drawn before the model has loaded
])
def test_architecture_is_readable_and_shows_flow_residuals_and_memory(N, d_model, h, d_ff, V, S, T):
    fig = architecture_figure(N, d_model, h, d_ff, V, S, T)
    blocks = assert_readable_diagram(fig)
    first_lines = [b["lines"][0] for b in blocks]
    # the data flow, bottom to top: IDs → embedding + PE → the layer's sublayers, each with its Add
    # & Norm → out
    assert first_lines == ["source token IDs", f"embedding ×√{d_model} + PE",
                           "target IDs: &lt;s&gt; + output", f"embedding ×√{d_model} + PE",
                           "multi-head self-attention", "Add &amp; Norm",
                           f"feed-forward, d_ff = {d_ff}", "Add &amp; Norm",
                           "masked self-attention", "Add &amp; Norm", "cross-attention",
                           "Add &amp; Norm", f"feed-forward, d_ff = {d_ff}", "Add &amp; Norm",
                           "encoder output (memory)", "linear (tied: x Eᵀ)",
                           "softmax: P(next token)"]
    by_name = {b["lines"][0]: b for b in blocks}
    assert by_name["cross-attention"]["lines"][1] == f"<b>(1, {h}, {T}, {S})</b> weights"
    assert by_name["masked self-attention"]["lines"][1] == f"<b>(1, {h}, {T}, {T})</b> weights"
    assert by_name["softmax: P(next token)"]["lines"][1] == f"<b>(1, {T}, {V})</b>"
    # four residual connections in the decoder's three and the encoder's two sublayers: five paths
    assert sum(s.name == "residual" for s in fig.layout.shapes) == 5
    # the memory runs from the encoder output into the decoder's cross-attention, labelled K, V
    cross, memory = by_name["cross-attention"], by_name["encoder output (memory)"]
    into_cross = [a for a in fig.layout.annotations if a.name == "memory" and a.showarrow]
    assert len(into_cross) == 1 and (into_cross[0].x, into_cross[0].y) == (cross["x0"], cross["cy"])
    path = next(s for s in fig.layout.shapes if s.name == "memory").path
    assert path.startswith(f"M {memory['x1']},{memory['cy']}")
    assert any(a.text == "K, V" for a in fig.layout.annotations)
    # both layers are framed and marked as repeated N times
    assert sum(s.name == "layer frame" for s in fig.layout.shapes) == 2
    assert [a.text for a in fig.layout.annotations if a.name == "repeat"] == [f"<b>{N}×</b>"] * 2
    assert f"N = {N}" in fig.layout.title.text


def test_contrast_ratio_follows_wcag():
    assert contrast_ratio("#000", "#fff") == pytest.approx(21.0)
    assert contrast_ratio("#fff", "#fff") == pytest.approx(1.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # just below AA
    assert relative_luminance("#ff0000") == pytest.approx(0.2126)
    # the old light-grey labels
    assert contrast_ratio("#333", "#cfe2f3") > 4.5 > contrast_ratio("#999", "#cfe2f3")


def test_text_fits_counts_markup_entities_and_bold():
    assert text_width("<b>ab</b>c") == pytest.approx((2 * 1.1 + 1) * 0.62 * TEXT_SIZE)
    assert text_width("&lt;s&gt;") == text_width("<s>".replace("<", "x").replace(">", "y"))
    wide = Box(0, 0, 10, 60, "#fff", ["a line of about thirty letters"])
    assert not text_fits(wide, 760) and text_fits(wide, 4000)
    assert not text_fits(Box(0, 0, 100, 20, "#fff", ["two", "lines"]), 760)  # too low for two lines


@pytest.mark.parametrize("S, T", [(12, 14), (3, 104), ("S", "T")])
def test_the_architecture_filled_in_is_the_figure_built_for_the_sentence(S, T):
    # The Overview's figure for each new sentence: built once per model with placeholders for S and
    # T, then filled in. The browser must get exactly the JSON of the figure built for S and T.
    import plotly.io as pio

    from transformer_viz.plots.architecture import architecture_browser_figure
    from transformer_viz.plots.payload import browser_figure

    built = browser_figure(architecture_figure(3, 256, 8, 1024, 8000, S, T))
    filled = architecture_browser_figure(3, 256, 8, 1024, 8000, S, T)
    assert pio.to_json(filled, validate=False) == pio.to_json(built, validate=False)
    assert filled.min_width == built.min_width == 800
    assert "\ue000" not in pio.to_json(filled) and "\ue001" not in pio.to_json(filled)
