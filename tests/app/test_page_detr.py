"""The "Beyond text: a Detection Transformer" page through AppTest, on the tiny randomly initialised
DETR that tests/conftest.py saves beside the tiny Transformer (the digits ship with
scikit-learn)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from tests.conftest import TINY_DETR, TINY_DETR_SEED
from tests.support.apptest import chart, open_page, rerun
from tests.support.figures import z_of
from transformer_viz.core.trace import Trace
from transformer_viz.models.detr.boxes import hungarian_match, matching_cost
from transformer_viz.models.detr.config import DETRConfig
from transformer_viz.models.detr.model import DETR
from transformer_viz.plots.vit import upsample
from transformer_viz.vision.canvases import make_canvas

STEP_CHARTS = {"detr-detections", "detr-classes", "detr-cross", "detr-self", "detr-matching",
               "detr-cost"}


@pytest.fixture()
def detr_app(make_app):
    return lambda: open_page(make_app(), "transformer_viz/app/pages/detr.py")


def expected(seed: int):
    torch.manual_seed(TINY_DETR_SEED)
    model = DETR(DETRConfig(**TINY_DETR)).eval()
    canvas = make_canvas(seed)
    trace = Trace()
    with torch.no_grad():
        model(torch.from_numpy(canvas.image)[None], trace)
    return canvas, trace


def test_detr_page(detr_app, every_step, open_step):
    at = detr_app()
    assert at.title[0].value == "Beyond text: a Detection Transformer"
    assert set(every_step(at, "detr_step")) == STEP_CHARTS
    # the DETR is not a sidebar model
    assert at.selectbox(key="checkpoint").options == ["German → English"]
    assert any("recall **4.2 %**" in m.value for m in at.markdown)  # the model card's test score
    canvas, trace = expected(7)  # the page's default canvas
    assert at.query_params["seed"] in ("7", ["7"])

    at = open_step(at, "detr_step", 0)
    np.testing.assert_allclose(z_of(chart(at, "detr-detections")["data"][0]), canvas.image)
    np.testing.assert_allclose(z_of(chart(at, "detr-classes")["data"][0]),
                               trace["detr.class_probs"][0].numpy().T, atol=1e-6)

    at = open_step(at, "detr_step", 1)
    at.selectbox(key="detr_query").set_value(3)
    at.selectbox(key="detr_dec_layer").set_value(0)
    at.selectbox(key="detr_dec_head").set_value(1)
    at = rerun(at)
    weights = trace["decoder.0.cross_attn.weights"][0, 1, 3].numpy()  # (S,) = (64,)
    np.testing.assert_allclose(z_of(chart(at, "detr-cross")["data"][1]),
                               upsample(weights, 4), atol=1e-6)

    at = open_step(at, "detr_step", 2)
    at.selectbox(key="detr_row").set_value(2)
    at.selectbox(key="detr_col").set_value(5)
    at = rerun(at)
    # the default: the heads' mean
    mean = trace["encoder.0.self_attn.weights"][0].mean(0)[2 * 8 + 5].numpy()
    np.testing.assert_allclose(z_of(chart(at, "detr-self")["data"][1]),
                               upsample(mean, 4), atol=1e-6)

    at = open_step(at, "detr_step", 3)
    cost = matching_cost(trace["detr.class_logits"][0], trace["detr.boxes"][0],
                         torch.from_numpy(canvas.labels), torch.from_numpy(canvas.boxes)).numpy()
    np.testing.assert_allclose(z_of(chart(at, "detr-cost")["data"][0]), cost, atol=1e-5)
    queries, objects = hungarian_match(cost)
    outlined = chart(at, "detr-cost")["layout"]["shapes"]
    assert (sorted((round(s["y0"] + 0.5), round(s["x0"] + 0.5)) for s in outlined)
            == sorted(zip(queries, objects)))


def test_seed_from_the_link_and_a_new_random_canvas(make_app, open_step):
    at = make_app()
    at.query_params["seed"] = "123"
    at = open_step(open_page(at, "transformer_viz/app/pages/detr.py"), "detr_step", 0)
    assert at.number_input(key="detr_seed").value == 123
    np.testing.assert_allclose(z_of(chart(at, "detr-detections")["data"][0]),
                               make_canvas(123).image)
    at.button(key="detr_new").click()
    at = rerun(at)
    seed = at.number_input(key="detr_seed").value
    assert seed != 123 and at.query_params["seed"] in (str(seed), [str(seed)])
    np.testing.assert_allclose(z_of(chart(at, "detr-detections")["data"][0]),
                               make_canvas(seed).image)


def test_without_a_detr_checkpoint_the_page_says_so(make_app, checkpoint_dir,
                                                    monkeypatch, tmp_path):
    shutil.copytree(checkpoint_dir, tmp_path / "tiny")
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(tmp_path))
    at = open_page(make_app(), "transformer_viz/app/pages/detr.py")
    assert any("DETR checkpoint" in w.value for w in at.warning)
