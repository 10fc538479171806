"""The "Beyond text: a Vision Transformer" page through AppTest, on the tiny randomly initialised
ViT that tests/conftest.py saves beside the tiny Transformer (the digits ship with scikit-learn)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from tests.conftest import TINY_VIT, TINY_VIT_SEED
from tests.support.apptest import chart, open_page, rerun
from tests.support.figures import array, z_of
from transformer_viz.core.trace import Trace
from transformer_viz.models.vit.config import ViTConfig
from transformer_viz.models.vit.model import ViT
from transformer_viz.plots.vit import attention_rollout
from transformer_viz.vision.digits import load_split

STEP_CHARTS = {"vit-image", "vit-patches", "vit-patch-embed", "vit-tokens", "vit-cls-head",
               "vit-cls-mean", "vit-rollout", "vit-probs"}


@pytest.fixture()
def vit_app(make_app):
    return lambda: open_page(make_app(), "transformer_viz/app/pages/vit.py")


def expected_trace(index: int, occluded=()) -> tuple[np.ndarray, Trace]:
    torch.manual_seed(TINY_VIT_SEED)
    model = ViT(ViTConfig(**TINY_VIT)).eval()
    image = load_split().test_images[index].copy()
    for patch in occluded:
        row, col = divmod(patch, 4)
        image[2 * row:2 * row + 2, 2 * col:2 * col + 2] = 0.0
    trace = Trace()
    model(torch.from_numpy(image)[None], trace)
    return image, trace


def test_vit_page(vit_app, every_step, open_step):
    at = vit_app()
    assert at.title[0].value == "Beyond text: a Vision Transformer"
    assert set(every_step(at, "vit_step")) == STEP_CHARTS
    # the ViT is not a sidebar model
    assert at.selectbox(key="checkpoint").options == ["German → English"]
    assert any("12.5 %" in m.value for m in at.markdown)  # the model card's held-out accuracy
    image, trace = expected_trace(0)

    at = open_step(at, "vit_step", 0)
    np.testing.assert_allclose(z_of(chart(at, "vit-image")["data"][0]), image)
    np.testing.assert_allclose(z_of(chart(at, "vit-tokens")["data"][0]),
                               trace["vit.tokens"][0].numpy(), atol=1e-6)

    at = open_step(at, "vit_step", 1)
    # (h, 17, 17), the last layer is the default
    weights = trace["encoder.1.self_attn.weights"][0].numpy()
    shown = z_of(chart(at, "vit-cls-head")["data"][1])  # (8, 8): the overlay
    np.testing.assert_allclose(shown[::2, ::2].ravel(), weights[0, 0, 1:], atol=1e-6)
    at.selectbox(key="vit_layer").set_value(0)
    at.selectbox(key="vit_head").set_value(1)
    at = rerun(at)
    shown = z_of(chart(at, "vit-cls-head")["data"][1])
    np.testing.assert_allclose(shown[::2, ::2].ravel(),
                               trace["encoder.0.self_attn.weights"][0, 1, 0, 1:], atol=1e-6)

    at = open_step(at, "vit_step", 2)
    rollout = attention_rollout([trace[f"encoder.{i}.self_attn.weights"][0].numpy()
                                 for i in range(2)])
    np.testing.assert_allclose(array(chart(at, "vit-rollout")["data"][1]["z"])[::2, ::2].ravel(),
                               rollout[0, 1:], atol=1e-6)

    at = open_step(at, "vit_step", 3)
    np.testing.assert_allclose(array(chart(at, "vit-probs")["data"][0]["y"]),
                               trace["probs"][0].numpy(), atol=1e-6)


def test_another_digit_and_occlusion_give_other_data(vit_app, open_step):
    at = open_step(vit_app(), "vit_step", 3)
    before = array(chart(at, "vit-probs")["data"][0]["y"])
    at.number_input(key="vit_digit").set_value(7)
    at = rerun(at)
    assert at.query_params["digit"] == ["7"] or at.query_params["digit"] == "7"
    after = array(chart(at, "vit-probs")["data"][0]["y"])
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, expected_trace(7)[1]["probs"][0].numpy(), atol=1e-6)
    at.multiselect(key="vit_occlude").set_value([1, 6])
    at = rerun(at)
    np.testing.assert_allclose(array(chart(at, "vit-probs")["data"][0]["y"]),
                               expected_trace(7, (0, 5))[1]["probs"][0].numpy(), atol=1e-6)


def test_digit_from_the_link(make_app):
    at = make_app()
    at.query_params["digit"] = "12"
    at = open_page(at, "transformer_viz/app/pages/vit.py")
    assert at.number_input(key="vit_digit").value == 12


def test_without_a_vit_checkpoint_the_page_says_so(make_app, checkpoint_dir, monkeypatch, tmp_path):
    shutil.copytree(checkpoint_dir, tmp_path / "tiny")
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(tmp_path))
    at = open_page(make_app(), "transformer_viz/app/pages/vit.py")
    assert any("Vision Transformer checkpoint" in w.value for w in at.warning)
