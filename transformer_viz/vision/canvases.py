"""The toy DETR's world: synthetic canvases of handwritten digits, and how a detection is scored
(training is training.detr, the checkpoint's card checkpoints.cards.detr_card).

A canvas is canvas_size × canvas_size (32 by default), black, with 1 to 4 digits pasted at random
places where no two touch. Each digit is one of scikit-learn's 8 × 8 images (vision/digits.py)
resized to a random side of 8 to 12 pixels; its box is the square it was pasted into. Canvas
``index`` of seed ``S`` is drawn from ``numpy.random.default_rng([S, index])``, so any canvas can be
rebuilt from two numbers (the page's URL keeps the seed). Training canvases use the training images
of the ViT's fixed split and the training seed; evaluation canvases use the held-out images and any
other seed, so the evaluation sees neither a training canvas nor a training image.

Checkpoint layout (no tokenizer; ``checkpoints.load_checkpoint`` reads it by ``"arch": "detr"``)::

    DIR/model.safetensors  DIR/config.json (DETRConfig)  DIR/metadata.json
    DIR/README.md (the model card)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from transformer_viz.models.detr.boxes import cxcywh_to_xyxy, pairwise_iou
from transformer_viz.models.detr.model import DETR

SIZES = (8, 9, 10, 11, 12)  # sides, in pixels, a digit is drawn at
MAX_DIGITS = 4
TRAIN_SEED = 0  # the seed of every training canvas; the evaluation refuses it
PARTS = ("train", "held-out")


@dataclass
class Canvas:
    image: np.ndarray  # (H, W) float32 in [0, 1]
    labels: np.ndarray  # (n,) int64 digits
    boxes: np.ndarray  # (n, 4) float32 (cx, cy, w, h), fractions of the side
    sources: np.ndarray  # (n,) int64: which image of the part each digit is


@lru_cache(maxsize=2)
def sprites(part: str) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """The digit images of one part of the split, resized to every side in SIZES:
    ({side: (n, side, side)}, labels)."""
    from transformer_viz.vision.digits import load_split

    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, not {part!r}")
    split = load_split()
    images, labels = ((split.train_images, split.train_labels) if part == "train"
                      else (split.test_images, split.test_labels))
    base = torch.from_numpy(images)[:, None]  # (n, 1, 8, 8)
    resized = {side: F.interpolate(base, size=(side, side), mode="bilinear", align_corners=False,
                                   antialias=False)
               [:, 0].clamp(0, 1).numpy() for side in SIZES}
    return resized, labels


def make_canvas(seed: int, index: int = 0, part: str = "held-out", size: int = 32) -> Canvas:
    """Canvas ``index`` of seed ``seed``: the same canvas on every call."""
    rng = np.random.default_rng([seed, index])
    images, labels = sprites(part)
    canvas = np.zeros((size, size), dtype=np.float32)
    placed: list[tuple[int, int, int]] = []  # (x, y, side) of the pasted squares
    chosen = []
    for _ in range(int(rng.integers(1, MAX_DIGITS + 1))):
        side = int(rng.choice(SIZES))
        # rejection sampling of a free place; on a 32 × 32 canvas it rarely needs 10 tries
        for _ in range(100):
            x, y = (int(v) for v in rng.integers(0, size - side + 1, size=2))
            if all(x + side <= px or px + ps <= x or y + side <= py or py + ps <= y
                   for px, py, ps in placed):
                break
        else:
            continue
        source = int(rng.integers(len(labels)))
        canvas[y:y + side, x:x + side] = images[side][source]
        placed.append((x, y, side))
        chosen.append(source)
    boxes = np.array([[(x + s / 2) / size, (y + s / 2) / size, s / size, s / size]
                      for x, y, s in placed],
                     dtype=np.float32).reshape(-1, 4)
    sources = np.array(chosen, dtype=np.int64)
    return Canvas(canvas, labels[sources].astype(np.int64), boxes, sources)


def canvas_batch(seed: int, start: int, count: int, part: str, size: int = 32) -> list[Canvas]:
    return [make_canvas(seed, start + i, part, size) for i in range(count)]


def stack(canvases: list[Canvas]) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """-> images (B, H, W), per canvas its labels (n,) and boxes (n, 4)."""
    images = torch.from_numpy(np.stack([c.image for c in canvases]))
    return (images, [torch.from_numpy(c.labels) for c in canvases],
            [torch.from_numpy(c.boxes) for c in canvases])


# --- evaluation -----------------------------------------------------------------------------------

@dataclass
class Detection:
    query: int
    label: int
    score: float
    box: np.ndarray  # (4,) cx, cy, w, h


def detections(class_logits: torch.Tensor, boxes: torch.Tensor) -> list[Detection]:
    """One canvas's predictions (M, C+1), (M, 4) -> the queries whose most likely class is not ∅."""
    probs = class_logits.float().softmax(-1)  # (M, C+1)
    best = probs.argmax(-1)
    return [Detection(q, int(best[q]), float(probs[q, best[q]]), boxes[q].float().numpy())
            for q in range(len(best)) if int(best[q]) != probs.shape[-1] - 1]


def score_canvas(found: list[Detection], labels: np.ndarray, boxes: np.ndarray,
                 iou_threshold: float = 0.5) -> int:
    """How many detections are right: each object may be claimed once, by the most confident
    detection of its class whose box overlaps it with IoU ≥ iou_threshold."""
    if not found or len(labels) == 0:
        return 0
    iou, _ = pairwise_iou(cxcywh_to_xyxy(torch.from_numpy(np.stack([d.box for d in found]))),
                          cxcywh_to_xyxy(torch.from_numpy(boxes)))  # (n_found, n_objects)
    claimed, correct = set(), 0
    for i in sorted(range(len(found)), key=lambda k: -found[k].score):
        candidates = [j for j in range(len(labels))
                      if j not in claimed and labels[j] == found[i].label
                      and iou[i, j] >= iou_threshold]
        if candidates:
            claimed.add(max(candidates, key=lambda j: float(iou[i, j])))
            correct += 1
    return correct


@torch.no_grad()
def evaluate(model: DETR, seed: int, n_canvases: int = 1000, part: str = "held-out",
             batch_size: int = 100) -> dict:
    """Precision and recall at IoU ≥ 0.5 with the right class on canvases 0 … n−1 of ``seed``."""
    model.eval()
    n_found = n_right = n_objects = 0
    for start in range(0, n_canvases, batch_size):
        canvases = canvas_batch(seed, start, min(batch_size, n_canvases - start), part,
                                model.cfg.canvas_size)
        images, labels, boxes = stack(canvases)
        out = model(images)
        for b, canvas in enumerate(canvases):
            found = detections(out.class_logits[b], out.boxes[b])
            n_found += len(found)
            n_right += score_canvas(found, canvas.labels, canvas.boxes)
            n_objects += len(canvas.labels)
    return {"canvases": n_canvases, "seed": seed, "images": part, "objects": n_objects,
            "detections": n_found, "correct": n_right,
            "precision": round(n_right / max(1, n_found), 4),
            "recall": round(n_right / max(1, n_objects), 4)}


CANVAS_TEXT = ("32 × 32 canvases with 1–4 non-touching digits, each one of scikit-learn's 8 × 8 "
               "digit images resized to 8–12 pixels; training canvases use the 1,437 training "
               "images of the ViT's fixed split, evaluation canvases the 360 held-out images and a "
               "seed other than the training seed")
