"""The toy DETR's world: synthetic canvases of handwritten digits, its training, its evaluation and its
checkpoint directory.

A canvas is canvas_size × canvas_size (32 by default), black, with 1 to 4 digits pasted at random places where
no two touch. Each digit is one of scikit-learn's 8 × 8 images (digits.py) resized to a random side of 8 to 12
pixels; its box is the square it was pasted into. Canvas ``index`` of seed ``S`` is drawn from
``numpy.random.default_rng([S, index])``, so any canvas can be rebuilt from two numbers (the page's URL keeps
the seed). Training canvases use the training images of the ViT's fixed split and the training seed;
evaluation canvases use the held-out images and any other seed, so the evaluation sees neither a training
canvas nor a training image.

Checkpoint layout (no tokenizer; ``checkpoint.load_checkpoint`` reads it by ``"arch": "detr"``)::

    DIR/model.safetensors  DIR/config.json (DETRConfig)  DIR/metadata.json  DIR/README.md (the model card)
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from transformer_viz.models.boxes import LossWeights, cxcywh_to_xyxy, pairwise_iou, set_loss
from transformer_viz.models.detr import DETR, DETRConfig

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
    """The digit images of one part of the split, resized to every side in SIZES: ({side: (n, side, side)}, labels)."""
    from transformer_viz.vision.digits import load_split

    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, not {part!r}")
    split = load_split()
    images, labels = (split.train_images, split.train_labels) if part == "train" else (split.test_images,
                                                                                        split.test_labels)
    base = torch.from_numpy(images)[:, None]  # (n, 1, 8, 8)
    resized = {side: F.interpolate(base, size=(side, side), mode="bilinear", align_corners=False, antialias=False)
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
        for _ in range(100):  # rejection sampling of a free place; on a 32 × 32 canvas it rarely needs 10 tries
            x, y = (int(v) for v in rng.integers(0, size - side + 1, size=2))
            if all(x + side <= px or px + ps <= x or y + side <= py or py + ps <= y for px, py, ps in placed):
                break
        else:
            continue
        source = int(rng.integers(len(labels)))
        canvas[y:y + side, x:x + side] = images[side][source]
        placed.append((x, y, side))
        chosen.append(source)
    boxes = np.array([[(x + s / 2) / size, (y + s / 2) / size, s / size, s / size] for x, y, s in placed],
                     dtype=np.float32).reshape(-1, 4)
    sources = np.array(chosen, dtype=np.int64)
    return Canvas(canvas, labels[sources].astype(np.int64), boxes, sources)


def canvas_batch(seed: int, start: int, count: int, part: str, size: int = 32) -> list[Canvas]:
    return [make_canvas(seed, start + i, part, size) for i in range(count)]


def stack(canvases: list[Canvas]) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """-> images (B, H, W), per canvas its labels (n,) and boxes (n, 4)."""
    images = torch.from_numpy(np.stack([c.image for c in canvases]))
    return images, [torch.from_numpy(c.labels) for c in canvases], [torch.from_numpy(c.boxes) for c in canvases]


# --- evaluation -----------------------------------------------------------------------------------------------

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


def score_canvas(found: list[Detection], labels: np.ndarray, boxes: np.ndarray, iou_threshold: float = 0.5) -> int:
    """How many detections are right: each object may be claimed once, by the most confident detection of its
    class whose box overlaps it with IoU ≥ iou_threshold."""
    if not found or len(labels) == 0:
        return 0
    iou, _ = pairwise_iou(cxcywh_to_xyxy(torch.from_numpy(np.stack([d.box for d in found]))),
                          cxcywh_to_xyxy(torch.from_numpy(boxes)))  # (n_found, n_objects)
    claimed, correct = set(), 0
    for i in sorted(range(len(found)), key=lambda k: -found[k].score):
        candidates = [j for j in range(len(labels)) if j not in claimed and labels[j] == found[i].label
                      and iou[i, j] >= iou_threshold]
        if candidates:
            claimed.add(max(candidates, key=lambda j: float(iou[i, j])))
            correct += 1
    return correct


@torch.no_grad()
def evaluate(model: DETR, seed: int, n_canvases: int = 1000, part: str = "held-out", batch_size: int = 100) -> dict:
    """Precision and recall at IoU ≥ 0.5 with the right class on canvases 0 … n−1 of ``seed``."""
    model.eval()
    n_found = n_right = n_objects = 0
    for start in range(0, n_canvases, batch_size):
        canvases = canvas_batch(seed, start, min(batch_size, n_canvases - start), part, model.cfg.canvas_size)
        images, labels, boxes = stack(canvases)
        out = model(images)
        for b, canvas in enumerate(canvases):
            found = detections(out.class_logits[b], out.boxes[b])
            n_found += len(found)
            n_right += score_canvas(found, canvas.labels, canvas.boxes)
            n_objects += len(canvas.labels)
    return {"canvases": n_canvases, "seed": seed, "images": part, "objects": n_objects, "detections": n_found,
            "correct": n_right, "precision": round(n_right / max(1, n_found), 4),
            "recall": round(n_right / max(1, n_objects), 4)}


# --- training -------------------------------------------------------------------------------------------------

@dataclass
class DETRTrainConfig:
    model_overrides: dict = field(default_factory=dict)  # changes to DETRConfig's defaults
    steps: int = 30000
    batch_size: int = 32
    lr: float = 5e-4  # AdamW's peak learning rate (cosine decay to lr/20 after a linear warm-up)
    warmup_steps: int = 500
    weight_decay: float = 1e-4
    max_minutes: float = 55.0  # stop after the step that passes this wall-clock budget (0: no limit)
    eval_every: int = 1000  # steps between evaluations on 200 canvases of the validation seed
    val_seed: int = 1  # the canvases watched during training (held-out images); the final score uses others
    seed: int = 1234  # initial weights (the canvases come from TRAIN_SEED)
    threads: int = 1


def _lr_factor(step: int, minutes: float, tc: DETRTrainConfig) -> float:
    """Linear warm-up, then cosine decay to 1/20 over the steps or the minutes, whichever runs out first, so that a
    run cut short by its time budget still ends on a small learning rate."""
    if step < tc.warmup_steps:
        return (step + 1) / tc.warmup_steps
    progress = (step - tc.warmup_steps) / max(1, tc.steps - tc.warmup_steps)
    if tc.max_minutes:
        progress = max(progress, minutes / tc.max_minutes)
    return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def training_step(model: DETR, optimizer, canvases: list[Canvas], weights: LossWeights) -> dict[str, float]:
    model.train()
    images, labels, boxes = stack(canvases)
    out = model(images)
    terms = set_loss(out.class_logits, out.boxes, labels, boxes, weights)
    loss = terms["loss"] + sum(set_loss(c, b, labels, boxes, weights)["loss"] for c, b in out.aux)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # DETR clips at 0.1; 1.0 suits this small model
    optimizer.step()
    return {"loss": loss.item(), **{k: v.item() for k, v in terms.items() if k != "loss"}}


def _resume(run_dir: Path, model: DETR, optimizer) -> tuple[int, list[dict], float]:
    """Step, history and minutes already spent of an interrupted run in run_dir (0, [], 0 when none)."""
    state_path = run_dir / "last.pt"
    if not state_path.is_file():
        return 0, [], 0.0
    state = torch.load(state_path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["step"]), json.loads((run_dir / "history.json").read_text()), float(state["minutes"])


def _save_state(run_dir: Path, model: DETR, optimizer, step: int, history: list[dict], minutes: float) -> None:
    tmp = run_dir / "last.pt.tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "minutes": minutes}, tmp)
    tmp.replace(run_dir / "last.pt")
    (run_dir / "history.json").write_text(json.dumps(history, indent=1))


def train_detr(tc: DETRTrainConfig, run_dir: str | Path, out_dir: str | Path, log=print) -> dict:
    """Train on fresh canvases of the training images (resuming from run_dir/last.pt), save to out_dir."""
    torch.set_num_threads(tc.threads)
    torch.manual_seed(tc.seed)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = DETRConfig(**tc.model_overrides)
    model = DETR(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    step, history, spent = _resume(run_dir, model, optimizer)
    weights, start, losses = LossWeights(), time.perf_counter(), []
    minutes = spent
    while step < tc.steps:
        for group in optimizer.param_groups:
            group["lr"] = tc.lr * _lr_factor(step, minutes, tc)
        batch = canvas_batch(TRAIN_SEED, step * tc.batch_size, tc.batch_size, "train", cfg.canvas_size)
        losses.append(training_step(model, optimizer, batch, weights))
        step += 1
        minutes = spent + (time.perf_counter() - start) / 60
        if step % tc.eval_every == 0 or step == tc.steps:
            val = evaluate(model, tc.val_seed, 200)
            mean = {k: round(float(np.mean([d[k] for d in losses])), 4) for k in losses[0]}
            history.append({"step": step, "minutes": round(minutes, 2), **mean,
                            "val_precision": val["precision"], "val_recall": val["recall"]})
            losses = []
            log(f"step {step}: loss {mean['loss']:.3f}, val precision {val['precision']:.3f} recall "
                f"{val['recall']:.3f}, {minutes:.1f} min")
            _save_state(run_dir, model, optimizer, step, history, minutes)
        if tc.max_minutes and minutes > tc.max_minutes:
            log(f"stopping after step {step}: the {tc.max_minutes}-minute budget is spent")
            break
    minutes = spent + (time.perf_counter() - start) / 60
    _save_state(run_dir, model, optimizer, step, history, minutes)
    metadata = {
        "name": "Toy DETR on canvases of handwritten digits", "task": "digit detection",
        "description": "A small Detection Transformer trained from scratch on this CPU (transformer_viz/detr.py).",
        "data": {"canvases": CANVAS_TEXT, "training_seed": TRAIN_SEED},
        "training": {**asdict(tc), "steps_run": step, "optimizer": "AdamW", "minutes": round(minutes, 2)},
        "validation": evaluate(model, tc.val_seed, 1000),
        "history": history,
    }
    save_detr_checkpoint(out_dir, model, metadata)
    return metadata


CANVAS_TEXT = ("32 × 32 canvases with 1–4 non-touching digits, each one of scikit-learn's 8 × 8 digit images "
               "resized to 8–12 pixels; training canvases use the 1,437 training images of the ViT's fixed split, "
               "evaluation canvases the 360 held-out images and a seed other than the training seed")


# --- checkpoint -----------------------------------------------------------------------------------------------

def model_card(cfg: DETRConfig, meta: dict) -> str:
    training, val = meta.get("training", {}), meta.get("validation", {})
    test = meta.get("test", {})
    lines = [
        f"# {meta.get('name', 'DETR')}", "", meta.get("description", ""), "",
        "## Model", "", f"- Parameters: {meta.get('parameters', '?'):,}",
        f"- Backbone: four 3×3 convolutions ({cfg.backbone_channels}, then {2 * cfg.backbone_channels} channels, "
        f"two of stride 2) and a 1×1 projection: a {cfg.grid}×{cfg.grid} feature map of d_model {cfg.d_model}",
        f"- Transformer: {cfg.n_encoder_layers} encoder and {cfg.n_decoder_layers} decoder layers (Pre-LN), h "
        f"{cfg.h}, d_ff {cfg.d_ff}; {cfg.n_queries} learned object queries; learned position embedding",
        "- Heads: a linear classifier over 10 digits + ∅ (no object) and a 3-layer MLP for the box", "",
        "## Data", "", f"- {CANVAS_TEXT}", f"- Digits: {meta.get('digits_credit', '')}", "",
        "## Training", "",
        f"- Set loss with Hungarian matching (cost: class 1, L1 5, GIoU 2; ∅ weight 0.1), auxiliary losses on "
        f"every decoder layer; AdamW, lr {training.get('lr')}, weight decay {training.get('weight_decay')}, batch "
        f"{training.get('batch_size')}, {training.get('steps_run')} steps ({training.get('warmup_steps')} warm-up, "
        f"cosine decay)",
        f"- {training.get('minutes')} minutes on {training.get('threads')} CPU thread(s), seed {training.get('seed')}",
        "", "## Scores", "",
        "Precision and recall at IoU ≥ 0.5 with the right class (`python -m transformer_viz detr-eval`):", "",
        "| canvases | images | seed | precision | recall |", "|---|---|---|---|---|"]
    for name, row in (("validation (watched during training, nothing chosen on it)", val), ("test", test)):
        if row:
            lines.append(f"| {name}: {row.get('canvases')} | {row.get('images')} | {row.get('seed')} | "
                         f"{100 * row['precision']:.1f} % | {100 * row['recall']:.1f} % |")
    lines += ["", "Retrain with `python -m transformer_viz train-detr --run-dir RUN --out DIR`.", ""]
    return "\n".join(lines)


def save_detr_checkpoint(directory: str | Path, model: DETR, metadata: dict) -> Path:
    from transformer_viz.checkpoints.load import save_image_model
    from transformer_viz.vision.digits import DATA_CREDIT

    return save_image_model(directory, model, {**metadata, "digits_credit": DATA_CREDIT}, model_card)
