"""The Lecture's texts and formulas against the figures beside them: labels say what the panels
show, a number the text quotes is one the figure draws, the formulas use the checkpoint's own
constants and count heads as the figures do, and the inference step draws beams."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.support.apptest import SENTENCE
from transformer_viz.views import lecture
from transformer_viz.engine import run_sentence


@pytest.fixture(scope="module")
def ctx(tiny_checkpoint):
    run = run_sentence(tiny_checkpoint, SENTENCE)
    metadata = {**tiny_checkpoint.metadata,
                "training": {"warmup": 400, "lr_factor": 0.3, "steps": 3000}}
    return lecture.Context(run, layer=1, head=1,
                           id_to_token=tiny_checkpoint.tokenizer.convert_ids_to_tokens,
                           metadata=metadata, position=2, model=tiny_checkpoint.model)


def step(step_id: str) -> lecture.Step:
    return next(s for s in lecture.STEPS if s.id == step_id)


def figure(ctx, step_id: str, projector: bool = False):
    spec = lecture.FIGURES[step(step_id).figure](ctx)
    return lecture.draw(spec.plot, projector, *spec.args, **spec.kwargs), spec


def test_the_encoder_stack_labels_its_panels_by_layer():
    """Step 10 draws one head in each layer: its panels are layers 0…N−1, not heads."""
    from transformer_viz.plots.layers import head_grid

    fig = head_grid(np.full((3, 2, 2), 0.5), ["a", "b"], ["a", "b"], panel_name="layer")
    assert [a.text for a in fig.layout.annotations] == ["layer 0", "layer 1", "layer 2"]


def test_step_10s_panels_are_the_layers(ctx):
    fig, _ = figure(ctx, "encoder_stack")
    N = ctx.run.config.N
    assert [a.text for a in fig.layout.annotations] == [f"layer {n}" for n in range(N)]
    for n in range(N):  # panel n is head ctx.head of layer n
        drawn = next(t for t in fig.data if t.name == f"layer {n}")
        expected = ctx.run.trace[f"encoder.{n}.self_attn.weights"][0, ctx.head].numpy()
        np.testing.assert_allclose(np.asarray(drawn.z, dtype=float), expected, atol=1e-6)


def test_formulas_count_heads_from_0_as_the_panels_do(ctx):
    """Step 8's panels are "head 0 … head h−1", step 16's bars name heads from 0 too."""
    for step_id in ("multihead", "heads"):
        formula = step(step_id).formula
        assert "head}_0" in formula and "head}_{h-1}" in formula, (step_id, formula)
        assert "head}_1" not in formula and "head}_h" not in formula, (step_id, formula)
    fig, _ = figure(ctx, "multihead")
    assert fig.layout.annotations[0].text.startswith("head 0")


def test_step_2s_legend_writes_the_formulas_symbol_and_its_percentages_are_found_in_the_figure(ctx):
    fig, spec = figure(ctx, "lookup")
    # one symbol for the bilinear form's matrix, as on the Attention page the step links to
    assert r"q^\top G k" in step("lookup").formula and "W k" not in step("lookup").formula
    names = [t.name for t in fig.data]
    assert any("qᵀGk" in n for n in names) and not any("ᵀW" in n for n in names), names
    text = lecture.text_lookup(ctx)
    S, n = len(ctx.run.src_ids), len(fig.data[0].x)
    # the softmax runs over the figure's keys only: the text says over which, so the numbers can be
    # found again
    if n < S:
        assert f"first {n} of its {S} keys" in text, text
        assert f"first {n} of {S} keys" in fig.layout.title.text
    quoted = [int(p) for p in re.findall(r"(\d+) %", text)]
    assert quoted[:2] == [round(100 * max(fig.data[0].y)), round(100 * max(fig.data[1].y))]


def test_step_14s_formula_peaks_where_the_plot_does_with_the_checkpoints_lr_factor(ctx):
    fig, _ = figure(ctx, "training")
    formula, text = step("training").formula, lecture.text_training(ctx)
    assert r"f \cdot d_{model}^{-0.5}" in formula
    d = ctx.run.config.d_model
    values = dict(re.findall(r"\b(d_model|w|f) = ([0-9]+(?:\.[0-9]+)?)", text))
    assert values == {"d_model": str(d), "w": "400", "f": "0.3"}, text
    peak = 0.3 * d ** -0.5 * 400 ** -0.5  # the formula at s = w
    plotted = float(np.max(fig.data[0].y))
    assert math.isclose(peak, plotted, rel_tol=1e-9)
    assert f"{peak:.1e}" in text
    assert "_{" not in text and "y_" not in text  # no raw LaTeX in the spoken text


def test_no_step_text_shows_raw_latex(ctx):
    for s in lecture.STEPS:
        assert not re.search(r"[_^]\{|\\[a-z]+", s.text(ctx)), s.id


def test_step_19s_n_is_the_number_of_queries_drawn(ctx):
    fig, spec = figure(ctx, "detr")
    drawn = len(spec.data["query"])
    assert len(fig.data[0].y) == drawn
    text = lecture.text_detr(ctx)
    assert f"N = {drawn}" in text and f"{drawn} object queries" in fig.layout.title.text
    assert "N = 100" not in text


def test_step_15_draws_the_beams(ctx, tiny_checkpoint):
    """Step 15 is "greedy and beam search": beside step 13's candidates it draws the beam tree of K
    beams."""
    beam = run_sentence(tiny_checkpoint, SENTENCE, beam_size=3, trace=False)
    with_beam = lecture.Context(ctx.run, ctx.layer, ctx.head, ctx.id_to_token, ctx.metadata,
                                ctx.position, ctx.model, beam_run=beam)
    fig, spec = figure(with_beam, "inference")
    output, _ = figure(with_beam, "output")
    assert [t.type for t in fig.data] != [t.type for t in output.data]  # not step 13's figure again
    nodes = next(t for t in fig.data if t.name == "beams")
    # beams 0, 1 and 2 across, over several steps down the figure
    assert max(nodes.x) == 2 and len(nodes.y) > 3 and max(nodes.y) > 1
    assert "K = 3" in fig.layout.title.text
    assert "K = 3" in lecture.text_inference(with_beam)


def test_the_detr_step_counts_the_shipped_toy_detrs_queries():
    import json

    from tests.support.browser import ROOT
    from transformer_viz.views.lecture.context import detr_queries

    config = ROOT / "checkpoints" / "detr-digits" / "config.json"
    if not config.is_file():
        pytest.skip("the shipped DETR is missing")
    assert detr_queries() == json.loads(config.read_text())["n_queries"]


def test_step_16_shows_the_heads_that_matter_most_with_the_ones_the_text_names():
    """72 heads do not fit a projector's column: the bars are the 16 largest drops, the text's two
    first."""
    from transformer_viz.views.lecture import figures

    class Head(str):
        label = "a head"

    drops = np.linspace(-0.2, 1.5, 72)[::-1].copy()
    np.random.default_rng(0).shuffle(drops)
    numbers = type("HeadsRun", (),
                   {"heads": [Head(f"cross.{i // 8}.{i % 8}") for i in range(72)], "drops": drops})
    named = sorted(range(72), key=lambda i: -drops[i])[:2]
    original = figures.head_drops
    figures.head_drops = lambda ctx: numbers
    try:
        spec = figures.fig_heads(None)
    finally:
        figures.head_drops = original
    fig = spec.plot(*spec.args, **spec.kwargs)
    names, shown = list(fig.data[0].x), np.asarray(fig.data[0].y)
    assert len(names) == figures.HEADS_SHOWN and names[:2] == [str(numbers.heads[i]) for i in named]
    assert list(shown) == sorted(shown, reverse=True) and min(shown) >= np.sort(drops)[-16]
    assert len(fig.data[0].x) == 16 and "16 of 72 heads" in fig.layout.title.text
    assert len(spec.data["head"]) == 72  # the CSV keeps all


def test_step_8s_grid_of_8_heads_fits_a_1280_px_projectors_figure_column(ctx):
    """731 px beside the text at 1280×720 (the sidebar folded): the grid asked for 750 and was
    cut."""
    from transformer_viz.plots.payload import browser_figure

    fig, _ = figure(ctx, "multihead", projector=True)
    cols = min(ctx.run.config.h, 4)
    need = browser_figure(fig).min_width
    # widgets.chart rounds up to 50 px
    assert need == 160 * cols + 60 and -(-need // 50) * 50 <= 731
