"""The Vision Transformer (vit.py), its data split and training (digits.py), its checkpoint and its
figures."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transformer_viz.checkpoints import CheckpointError, checkpoint_arch, load_checkpoint
from transformer_viz.core.trace import Trace
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.models.vit.config import ViTConfig
from transformer_viz.models.vit.model import ViT, patchify, unpatchify
from transformer_viz.models.vit.names import trace_names
from transformer_viz.plots.vit import (attention_overlay_figure, attention_rollout,
                                       class_probs_figure, patch_embeddings_figure,
                                       patch_grid_figure, upsample)
from transformer_viz.training.vit import (ViTTrainConfig, save_vit_checkpoint, shift_images,
                                          train_vit)
from transformer_viz.vision.digits import load_split

TINY = dict(d_model=16, d_ff=32, h=2, N=2, dropout=0.0)


@pytest.fixture(scope="module")
def tiny_vit():
    torch.manual_seed(0)
    return ViT(ViTConfig(**TINY)).eval()


def test_patchify_round_trip_and_order():
    images = torch.arange(2 * 64, dtype=torch.float32).reshape(2, 8, 8)
    patches = patchify(images, 2)  # (2, 16, 4)
    assert patches.shape == (2, 16, 4)
    assert patches[0, 0].tolist() == [0, 1, 8, 9]  # the top-left 2 × 2 block, row by row
    assert patches[0, 1].tolist() == [2, 3, 10, 11]  # its right neighbour
    assert patches[0, 4].tolist() == [16, 17, 24, 25]  # the first patch of the second patch row
    assert torch.equal(unpatchify(patches, 2), images)
    assert torch.equal(unpatchify(patchify(images, 4), 4), images)


@pytest.mark.parametrize("patch_size", [2, 4])
def test_shapes_and_trace_names(patch_size):
    cfg = ViTConfig(**TINY, patch_size=patch_size)
    model = ViT(cfg).eval()
    P, B = cfg.n_patches, 3
    trace = Trace()
    logits = model(torch.rand(B, 8, 8), trace)
    assert logits.shape == (B, 10)
    shapes = trace.shapes()
    assert shapes["vit.patches"] == (B, P, patch_size ** 2)
    assert shapes["vit.patch_embed"] == (B, P, 16)
    assert shapes["vit.tokens"] == (B, P + 1, 16)
    assert shapes["vit.cls"] == (B, 16)
    assert shapes["logits"] == shapes["probs"] == (B, 10)
    for i in range(cfg.N):  # the translation encoder's names
        assert shapes[f"encoder.{i}.self_attn.weights"] == (B, 2, P + 1, P + 1)
        assert shapes[f"encoder.{i}.out"] == (B, P + 1, 16)
    torch.testing.assert_close(trace["vit.tokens"][:, 0],
                               (model.cls_token + model.pos_embed)[0, 0].expand(B, 16))
    torch.testing.assert_close(trace["vit.cls"], trace["encoder.out"][:, 0])


def test_documented_names_are_the_recorded_names_in_order(tiny_vit):
    """trace_names() (docs/trace_names.md's ViT section) against a real forward pass; encoder.{i}.*
    stands for the translation encoder's per-layer names, in the translation encoder's order."""
    trace = Trace()
    tiny_vit(torch.rand(1, 8, 8), trace)
    names, expected = trace.names(), []
    for name, shape, _ in trace_names():
        if name == "encoder.{i}.*":
            expected += [n for n in names if n.startswith("encoder.") and n.split(".")[1].isdigit()]
        else:
            expected.append(name)
            if "(B, P+1, d_model)" == shape:
                assert trace[name].shape == (1, 17, 16), name
    assert names == expected
    layer_names = [n.split(".", 2)[2] for n in names if n.startswith("encoder.0.")]

    translation = Trace()
    Transformer(preset("tiny", vocab_size=40)).eval()(torch.tensor([[5, 6, 2]]),
                                                      torch.tensor([[1, 7]]), translation)
    # the same names per layer (recorded in another order: the ViT is Pre-LN, the tiny translation
    # model Post-LN)
    assert (sorted(layer_names)
            == sorted(n.split(".", 2)[2] for n in translation.names()
                      if n.startswith("encoder.0.")))


def test_attention_rows_sum_to_one_and_trace_matches_fused_path(tiny_vit):
    images = torch.rand(4, 8, 8)
    trace = Trace()
    traced = tiny_vit(images, trace)
    # explicit = fused attention
    torch.testing.assert_close(traced, tiny_vit(images), atol=1e-5, rtol=1e-5)
    for i in range(2):
        torch.testing.assert_close(trace[f"encoder.{i}.self_attn.weights"].sum(-1),
                                   torch.ones(4, 2, 17))


def test_attention_rollout_by_hand():
    """Two layers, two heads, two tokens: the heads' mean, + I, rows renormalised, multiplied (last
    on the left)."""
    # mean [[.5, .5], [.5, .5]]
    layer1 = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]])
    # mean [[1, 0], [.5, .5]]
    layer2 = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]])
    a1 = np.array([[0.75, 0.25], [0.25, 0.75]])  # ([[.5, .5], [.5, .5]] + I) / 2
    a2 = np.array([[1.0, 0.0], [0.25, 0.75]])  # ([[2, 0], [.5, 1.5]]) / 2
    expected = a2 @ a1  # [[.75, .25], [.375, .625]]
    np.testing.assert_allclose(attention_rollout([layer1, layer2]), expected)
    np.testing.assert_allclose(expected, [[0.75, 0.25], [0.375, 0.625]])
    # identity stays
    np.testing.assert_allclose(attention_rollout(np.tile(np.eye(3), (4, 2, 1, 1))), np.eye(3))
    rows = attention_rollout(np.random.default_rng(0).dirichlet(np.ones(5), size=(3, 2, 5)))
    np.testing.assert_allclose(rows.sum(-1), 1.0)


def test_split_is_fixed_disjoint_stratified_and_in_range():
    first, second = load_split(), load_split()
    # 20 % of 1,797 held out
    assert len(first.test_labels) == 360 and len(first.train_labels) == 1437
    assert not set(first.train_index) & set(first.test_index)
    assert len(set(first.train_index) | set(first.test_index)) == 1797
    np.testing.assert_array_equal(first.test_index, second.test_index)
    np.testing.assert_array_equal(first.test_images, second.test_images)
    counts = np.bincount(first.test_labels, minlength=10)
    assert counts.min() >= 35 and counts.max() <= 37  # stratified: about 36 of each digit
    assert first.train_images.min() == 0.0 and first.train_images.max() == 1.0
    assert first.test_images.shape[1:] == (8, 8) and first.test_images.dtype == np.float32


def test_shift_images_moves_without_wrapping():
    image = torch.zeros(1, 8, 8)
    image[0, 0, 0] = 1.0
    generator = torch.Generator().manual_seed(0)
    shifted = torch.cat([shift_images(image, 1, generator) for _ in range(50)])  # (50, 8, 8)
    # the pixel moves or falls off: never wraps round
    assert set(shifted.sum((1, 2)).tolist()) <= {0.0, 1.0}
    assert shifted[:, 2:, :].sum() == 0 and shifted[:, :, 2:].sum() == 0
    assert torch.equal(shift_images(image, 0, generator), image)


def test_checkpoint_round_trip(tiny_vit, tmp_path):
    save_vit_checkpoint(tmp_path / "vit", tiny_vit, {"held_out_accuracy": 0.5})
    assert checkpoint_arch(tmp_path / "vit") == "vit"
    loaded = load_checkpoint(tmp_path / "vit")
    assert (isinstance(loaded.model, ViT) and loaded.tokenizer is None
            and loaded.config == tiny_vit.cfg)
    assert (loaded.metadata["held_out_accuracy"] == 0.5
            and loaded.metadata["parameters"] == tiny_vit.num_parameters())
    images = torch.rand(2, 8, 8)
    torch.testing.assert_close(loaded.model(images), tiny_vit(images))
    assert "Held-out accuracy" in (tmp_path / "vit" / "README.md").read_text()


@pytest.mark.parametrize("change, message",
                         [({"d_model": 15}, "divisible"), ({"patch_size": 3}, "divide"),
                          ({"N": 1000}, "outside"), ({"dropout": 2.0}, "dropout"),
                          ({"colour": "red"}, "unknown config fields"),
                          ({"arch": "vitt"}, "Transformer")])
def test_bad_config_is_refused(tiny_vit, tmp_path, change, message):
    path = save_vit_checkpoint(tmp_path / "vit", tiny_vit, {})
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert message in str(info.value) or "not a valid model config" in str(info.value)


def test_pickle_and_wrong_weights_are_refused(tiny_vit, tmp_path):
    (tmp_path / "model.pt").write_bytes(b"not read")
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(tmp_path / "model.pt")
    path = save_vit_checkpoint(tmp_path / "vit", tiny_vit, {})
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "d_ff": 64}))
    with pytest.raises(CheckpointError, match="shape"):
        load_checkpoint(path)


def test_training_a_few_epochs_writes_a_checkpoint(tmp_path):
    tc = ViTTrainConfig(model_overrides=TINY, epochs=2, batch_size=256, warmup_epochs=1)
    metadata = train_vit(tc, tmp_path / "vit", log=lambda _: None)
    assert 0.0 <= metadata["held_out_accuracy"] <= 1.0 and metadata["held_out_images"] == 360
    assert metadata["training"]["epochs_run"] == 2
    loaded = load_checkpoint(tmp_path / "vit")
    assert loaded.metadata["held_out_accuracy"] == metadata["held_out_accuracy"]


def test_figures():
    image = np.zeros((8, 8))
    image[2:4, 4:6] = 1.0
    fig = patch_grid_figure(image, 2, occluded=(5,))
    assert len(fig.layout.annotations) == 16 and fig.layout.annotations[5].text == "6"
    assert len(fig.layout.shapes) == 6 + 1  # 3 inner lines each way, one occluded patch outlined
    weights = np.arange(16) / 120.0
    # patch 6 (0-based) covers it
    np.testing.assert_array_equal(upsample(weights, 2)[2:4, 4:6], weights[6])
    fig = attention_overlay_figure(image, weights, 2)
    np.testing.assert_allclose(np.asarray(fig.data[1].z), upsample(weights, 2))
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), image)
    fig = patch_embeddings_figure(np.ones((3, 4)), ["a", "b", "c"])
    assert (np.asarray(fig.data[0].z).shape == (3, 4)
            and (fig.data[0].zmin, fig.data[0].zmax) == (-1.0, 1.0))
    fig = patch_embeddings_figure(np.full((3, 4), 0.5), ["a", "b", "c"], pixels=True)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)  # pixels keep the image's scale
    fig = class_probs_figure(np.eye(10)[3], true_label=5)
    assert fig.data[0].marker.color[3] != fig.data[0].marker.color[0]
    assert fig.data[0].marker.line.color[5] != fig.data[0].marker.line.color[3]


def test_train_vit_command_and_translation_commands_refuse_the_vit(tmp_path, capsys):
    from transformer_viz.cli import main

    out = tmp_path / "vit"
    assert main(["train-vit", "--out", str(out), "--epochs", "1", "--batch-size", "512",
                 "--no-progress", "--model-overrides", json.dumps(TINY)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["epochs"] == 1
            and printed["held_out_accuracy"] == load_checkpoint(out).metadata["held_out_accuracy"])
    assert main(["translate", "--checkpoint", str(out), "Hallo"]) == 2
    assert "Vision Transformer" in capsys.readouterr().err
    assert main(["vit-eval", "--checkpoint", str(out)]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["images"] == 360
    assert scored["held_out_accuracy"] == scored["model_card"] == printed["held_out_accuracy"]
    assert main(["vit-eval", "--checkpoint", str(tmp_path / "missing")]) == 2
