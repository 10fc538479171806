"""The toy DETR (detr.py), its boxes and set loss (boxes.py), its canvases, training and evaluation
(canvases.py), its checkpoint and the command line."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from transformer_viz.checkpoints import CheckpointError, checkpoint_arch, load_checkpoint
from transformer_viz.core.trace import Trace
from transformer_viz.models.detr.boxes import (LossWeights, cxcywh_to_xyxy, hungarian_match, match,
                                          matching_cost, pairwise_giou, pairwise_iou, set_loss,
                                          xyxy_to_cxcywh)
from transformer_viz.models.detr.config import CLASSES, DETRConfig
from transformer_viz.models.detr.model import DETR
from transformer_viz.models.detr.names import trace_names
from transformer_viz.training.detr import DETRTrainConfig, save_detr_checkpoint, train_detr
from transformer_viz.vision.canvases import (MAX_DIGITS, SIZES, Detection, detections, evaluate,
                                             make_canvas, score_canvas, sprites)

TINY = dict(backbone_channels=4, d_model=16, d_ff=32, h=2, n_queries=6)


@pytest.fixture(scope="module")
def tiny_detr():
    torch.manual_seed(0)
    return DETR(DETRConfig(**TINY)).eval()


# --- boxes and matching ---------------------------------------------------------------------------

def test_box_formats_round_trip():
    boxes = torch.rand(50, 4)
    torch.testing.assert_close(xyxy_to_cxcywh(cxcywh_to_xyxy(boxes)), boxes)
    corners = torch.tensor([[0.1, 0.2, 0.5, 0.4]])
    torch.testing.assert_close(xyxy_to_cxcywh(corners), torch.tensor([[0.3, 0.3, 0.4, 0.2]]))
    torch.testing.assert_close(cxcywh_to_xyxy(xyxy_to_cxcywh(corners)), corners)


def test_iou_and_giou_on_known_boxes():
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0]])
    b = torch.tensor([[1.0, 0.0, 3.0, 2.0], [0.0, 0.0, 2.0, 2.0], [3.0, 0.0, 4.0, 1.0]])
    iou, _ = pairwise_iou(a, b)
    torch.testing.assert_close(iou, torch.tensor([[2 / 6, 1.0, 0.0]]))
    # apart: IoU 0 but GIoU still says how far: hull 4 × 2 = 8, union 4 + 1 = 5 -> −3/8
    torch.testing.assert_close(pairwise_giou(a, b), torch.tensor([[2 / 6, 1.0, -3 / 8]]))


@pytest.mark.parametrize("seed", range(20))
def test_hungarian_matching_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    M, n = int(rng.integers(1, 7)), 0
    n = int(rng.integers(1, M + 1))
    cost = rng.normal(size=(M, n))
    queries, objects = hungarian_match(cost)
    assert sorted(objects.tolist()) == list(range(n)) and len(set(queries.tolist())) == n
    best = min(sum(cost[q, j] for j, q in enumerate(perm))
               for perm in itertools.permutations(range(M), n))
    assert cost[queries, objects].sum() == pytest.approx(best)


def test_set_loss_is_zero_ish_for_a_perfect_prediction_and_ignores_query_order():
    labels, boxes = ([torch.tensor([3, 7])],
                     [torch.tensor([[0.3, 0.3, 0.2, 0.2], [0.7, 0.6, 0.3, 0.3]])])
    logits = torch.full((1, 4, 11), -20.0)
    logits[0, :, 10] = 20.0  # every query says ∅ …
    logits[0, 2, 10], logits[0, 2, 3] = -20.0, 20.0  # … except query 2 (a 3) and query 0 (a 7)
    logits[0, 0, 10], logits[0, 0, 7] = -20.0, 20.0
    predicted = torch.rand(1, 4, 4) * 0.1 + 0.2
    predicted[0, 2], predicted[0, 0] = boxes[0][0], boxes[0][1]
    assert [q.tolist() for q, _ in match(logits, predicted, labels, boxes)] == [[2, 0]]
    terms = set_loss(logits, predicted, labels, boxes)
    assert terms["loss"] < 1e-6 and terms["l1"] == 0 and terms["giou"] == 0
    swapped = set_loss(logits[:, [2, 1, 0, 3]], predicted[:, [2, 1, 0, 3]], labels, boxes)
    torch.testing.assert_close(swapped["loss"], terms["loss"])
    wrong = predicted.clone()
    wrong[0, 2, 0] += 0.1  # the 3's box moved right by a tenth of the canvas
    assert set_loss(logits, wrong, labels, boxes)["l1"] == pytest.approx(0.1 / 2, abs=1e-6)


def test_matching_cost_prefers_the_right_class_and_place():
    logits = torch.zeros(2, 11)
    logits[0, 5] = 5.0
    boxes = torch.tensor([[0.5, 0.5, 0.2, 0.2], [0.1, 0.1, 0.2, 0.2]])
    cost = matching_cost(logits, boxes, torch.tensor([5]), torch.tensor([[0.5, 0.5, 0.2, 0.2]]),
                         LossWeights())
    assert cost[0, 0] < cost[1, 0]


# --- canvases -------------------------------------------------------------------------------------

def test_canvases_are_deterministic_per_seed_and_follow_the_rules():
    a, b, c = make_canvas(7, 3), make_canvas(7, 3), make_canvas(8, 3)
    assert (np.array_equal(a.image, b.image) and np.array_equal(a.boxes, b.boxes)
            and np.array_equal(a.labels, b.labels))
    assert not np.array_equal(a.image, c.image)
    images, labels = sprites("held-out")
    counts = []
    for index in range(200):
        canvas = make_canvas(11, index)
        n = len(canvas.labels)
        counts.append(n)
        assert 1 <= n <= MAX_DIGITS and canvas.image.shape == (32, 32) and canvas.image.max() <= 1.0
        corners = cxcywh_to_xyxy(torch.from_numpy(canvas.boxes)) * 32
        iou, _ = pairwise_iou(corners, corners)
        assert torch.equal(iou, torch.eye(n)), "digits overlap"
        for (x0, y0, x1, y1), source, label in zip(corners.round().int().tolist(), canvas.sources,
                                                   canvas.labels):
            assert x1 - x0 == y1 - y0 and x1 - x0 in SIZES and 0 <= x0 and x1 <= 32
            # the digit is in its box
            assert np.array_equal(canvas.image[y0:y1, x0:x1], images[x1 - x0][source])
            assert label == labels[source]
    assert set(counts) == set(range(1, MAX_DIGITS + 1))


def test_training_and_held_out_canvases_use_different_images():
    train, held_out = sprites("train"), sprites("held-out")
    assert len(train[1]) == 1437 and len(held_out[1]) == 360
    assert sprites("train")[0][8].shape == (1437, 8, 8)
    with pytest.raises(ValueError, match="part must be"):
        sprites("test")


# --- the model ------------------------------------------------------------------------------------

def test_shapes_and_trace_names(tiny_detr):
    B, cfg = 3, tiny_detr.cfg
    trace = Trace()
    out = tiny_detr(torch.rand(B, 32, 32), trace)
    assert out.class_logits.shape == (B, 6, 11) and out.boxes.shape == (B, 6, 4) and out.aux == []
    assert ((out.boxes > 0) & (out.boxes < 1)).all()
    shapes, S = trace.shapes(), cfg.n_tokens
    assert S == 64
    assert shapes["detr.features"] == shapes["detr.tokens"] == shapes["encoder.out"] == (B, S, 16)
    assert shapes["detr.positional"] == (S, 16) and shapes["detr.queries"] == (6, 16)
    for i in range(2):
        assert shapes[f"encoder.{i}.self_attn.weights"] == (B, 2, S, S)
        assert shapes[f"decoder.{i}.self_attn.weights"] == (B, 2, 6, 6)
        assert shapes[f"decoder.{i}.cross_attn.weights"] == (B, 2, 6, S)
    for name in ("encoder.0.self_attn.weights", "decoder.1.self_attn.weights",
                 "decoder.1.cross_attn.weights"):
        torch.testing.assert_close(trace[name].sum(-1), torch.ones(trace[name].shape[:-1]))
    torch.testing.assert_close(trace["detr.class_probs"].sum(-1), torch.ones(B, 6))
    torch.testing.assert_close(trace["detr.boxes"], out.boxes)
    # the trace does not change the result: the fused attention path gives the same predictions
    plain = tiny_detr(trace["detr.canvas"])
    torch.testing.assert_close(plain.class_logits, out.class_logits, atol=1e-5, rtol=1e-5)


def test_documented_names_are_the_recorded_names_in_order(tiny_detr):
    trace = Trace()
    tiny_detr(torch.rand(1, 32, 32), trace)
    names, expected = trace.names(), []
    for name, _, _ in trace_names():
        if name.endswith("{i}.*"):
            side = name.split(".")[0]
            expected += [n for n in names if n.startswith(side + ".") and n.split(".")[1].isdigit()]
        else:
            expected.append(name)
    assert names == expected


def test_queries_are_a_set_permuting_them_permutes_the_predictions(tiny_detr):
    canvas = torch.rand(2, 32, 32)
    out = tiny_detr(canvas)
    order = torch.tensor([3, 0, 5, 1, 4, 2])
    permuted = DETR(tiny_detr.cfg).eval()
    permuted.load_state_dict(tiny_detr.state_dict())
    with torch.no_grad():
        permuted.query_embed.copy_(tiny_detr.query_embed[order])
    torch.testing.assert_close(permuted(canvas).boxes, out.boxes[:, order], atol=1e-5, rtol=1e-5)


def test_training_mode_returns_one_auxiliary_prediction_per_earlier_decoder_layer():
    model = DETR(DETRConfig(**TINY, n_decoder_layers=3)).train()
    assert len(model(torch.rand(2, 32, 32)).aux) == 2


def test_config_is_checked():
    with pytest.raises(ValueError, match="multiple of 4"):
        DETRConfig(canvas_size=30)
    with pytest.raises(ValueError, match="divisible"):
        DETRConfig(d_model=30, h=4)


# --- scoring --------------------------------------------------------------------------------------

def test_score_canvas_counts_each_object_once_and_needs_class_and_overlap():
    labels = np.array([3, 5])
    boxes = np.array([[0.25, 0.25, 0.25, 0.25], [0.75, 0.75, 0.25, 0.25]], dtype=np.float32)
    right = Detection(0, 3, 0.9, boxes[0])
    duplicate = Detection(1, 3, 0.8, boxes[0] + np.array([0.01, 0, 0, 0], dtype=np.float32))
    wrong_class = Detection(2, 4, 0.9, boxes[1])
    # IoU (0.05·0.25)/… < 0.5
    far = Detection(3, 5, 0.9, np.array([0.75, 0.55, 0.25, 0.25], dtype=np.float32))
    assert score_canvas([right, duplicate, wrong_class, far], labels, boxes) == 1
    assert score_canvas([Detection(0, 5, 0.5, boxes[1])], labels, boxes) == 1


def test_detections_drop_the_no_object_queries():
    logits = torch.zeros(3, 11)
    logits[0, 10], logits[1, 4], logits[2, 10] = 5.0, 5.0, 5.0
    found = detections(logits, torch.rand(3, 4))
    assert [(d.query, d.label) for d in found] == [(1, 4)] and CLASSES[10] == "∅"


def test_a_little_training_learns_something_and_saves_a_loadable_checkpoint(tmp_path):
    tc = DETRTrainConfig(model_overrides=TINY, steps=40, batch_size=8, warmup_steps=5,
                         eval_every=20, lr=2e-3, max_minutes=0)
    meta = train_detr(tc, tmp_path / "run", tmp_path / "out", log=lambda _: None)
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert [h["step"] for h in history] == [20, 40]
    assert history[-1]["loss"] < history[0]["loss"]
    assert checkpoint_arch(tmp_path / "out") == "detr"
    checkpoint = load_checkpoint(tmp_path / "out")
    assert checkpoint.tokenizer is None and checkpoint.config == DETRConfig(**TINY)
    assert checkpoint.metadata["validation"]["canvases"] == 1000 == meta["validation"]["canvases"]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Hungarian" in card and "validation" in card
    # resuming a finished run trains no further and gives the same weights
    again = train_detr(tc, tmp_path / "run", tmp_path / "out2", log=lambda _: None)
    assert again["training"]["steps_run"] == 40
    a, b = load_checkpoint(tmp_path / "out").model, load_checkpoint(tmp_path / "out2").model
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_evaluate_reports_precision_and_recall(tiny_detr):
    report = evaluate(tiny_detr, seed=5, n_canvases=30, batch_size=7)
    assert report["canvases"] == 30 and report["objects"] > 30
    assert 0 <= report["precision"] <= 1 and 0 <= report["recall"] <= 1
    assert report["correct"] <= min(report["objects"], report["detections"])


def test_a_broken_config_is_refused(tmp_path, tiny_detr):
    save_detr_checkpoint(tmp_path, tiny_detr, {})
    data = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, "n_queries": 0}))
    with pytest.raises(CheckpointError, match="n_queries"):
        load_checkpoint(tmp_path)
