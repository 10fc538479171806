"""Training the toy DETR (models.detr) on fresh canvases of the training images (vision.canvases),
resumable, and saving it as a checkpoint directory (checkpoints.save_image_model, with
checkpoints.cards.detr_card)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from transformer_viz.checkpoints import save_image_model
from transformer_viz.checkpoints.cards import detr_card
from transformer_viz.models.detr.boxes import LossWeights, set_loss
from transformer_viz.models.detr.config import DETRConfig
from transformer_viz.models.detr.model import DETR
from transformer_viz.vision.canvases import (CANVAS_TEXT, TRAIN_SEED, Canvas, canvas_batch,
                                             evaluate, stack)
from transformer_viz.vision.digits import DATA_CREDIT


@dataclass
class DETRTrainConfig:
    model_overrides: dict = field(default_factory=dict)  # changes to DETRConfig's defaults
    steps: int = 30000
    batch_size: int = 32
    lr: float = 5e-4  # AdamW's peak learning rate (cosine decay to lr/20 after a linear warm-up)
    warmup_steps: int = 500
    weight_decay: float = 1e-4
    # stop after the step that passes this wall-clock budget (0: no limit)
    max_minutes: float = 55.0
    eval_every: int = 1000  # steps between evaluations on 200 canvases of the validation seed
    # the canvases watched during training (held-out images); the final score uses others
    val_seed: int = 1
    seed: int = 1234  # initial weights (the canvases come from TRAIN_SEED)
    threads: int = 1


def _lr_factor(step: int, minutes: float, tc: DETRTrainConfig) -> float:
    """Linear warm-up, then cosine decay to 1/20 over the steps or the minutes, whichever runs out
    first, so that a run cut short by its time budget still ends on a small learning rate."""
    if step < tc.warmup_steps:
        return (step + 1) / tc.warmup_steps
    progress = (step - tc.warmup_steps) / max(1, tc.steps - tc.warmup_steps)
    if tc.max_minutes:
        progress = max(progress, minutes / tc.max_minutes)
    return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def training_step(model: DETR, optimizer, canvases: list[Canvas],
                  weights: LossWeights) -> dict[str, float]:
    model.train()
    images, labels, boxes = stack(canvases)
    out = model(images)
    terms = set_loss(out.class_logits, out.boxes, labels, boxes, weights)
    loss = terms["loss"] + sum(set_loss(c, b, labels, boxes, weights)["loss"] for c, b in out.aux)
    optimizer.zero_grad()
    loss.backward()
    # DETR clips at 0.1; 1.0 suits this small model
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return {"loss": loss.item(), **{k: v.item() for k, v in terms.items() if k != "loss"}}


def _resume(run_dir: Path, model: DETR, optimizer) -> tuple[int, list[dict], float]:
    """Step, history and minutes already spent of an interrupted run in run_dir (0, [], 0 when
    none)."""
    state_path = run_dir / "last.pt"
    if not state_path.is_file():
        return 0, [], 0.0
    state = torch.load(state_path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    history = json.loads((run_dir / "history.json").read_text())
    return int(state["step"]), history, float(state["minutes"])


def _save_state(run_dir: Path, model: DETR, optimizer, step: int,
                history: list[dict], minutes: float) -> None:
    tmp = run_dir / "last.pt.tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "minutes": minutes}, tmp)
    tmp.replace(run_dir / "last.pt")
    (run_dir / "history.json").write_text(json.dumps(history, indent=1))


def train_detr(tc: DETRTrainConfig, run_dir: str | Path, out_dir: str | Path, log=print) -> dict:
    """Train on fresh canvases of the training images (resuming from run_dir/last.pt), save to
    out_dir."""
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
        batch = canvas_batch(TRAIN_SEED, step * tc.batch_size, tc.batch_size, "train",
                             cfg.canvas_size)
        losses.append(training_step(model, optimizer, batch, weights))
        step += 1
        minutes = spent + (time.perf_counter() - start) / 60
        if step % tc.eval_every == 0 or step == tc.steps:
            val = evaluate(model, tc.val_seed, 200)
            mean = {k: round(float(np.mean([d[k] for d in losses])), 4) for k in losses[0]}
            history.append({"step": step, "minutes": round(minutes, 2), **mean,
                            "val_precision": val["precision"], "val_recall": val["recall"]})
            losses = []
            log(f"step {step}: loss {mean['loss']:.3f}, val precision {val['precision']:.3f} "
                f"recall {val['recall']:.3f}, {minutes:.1f} min")
            _save_state(run_dir, model, optimizer, step, history, minutes)
        if tc.max_minutes and minutes > tc.max_minutes:
            log(f"stopping after step {step}: the {tc.max_minutes}-minute budget is spent")
            break
    minutes = spent + (time.perf_counter() - start) / 60
    _save_state(run_dir, model, optimizer, step, history, minutes)
    metadata = {
        "name": "Toy DETR on canvases of handwritten digits", "task": "digit detection",
        "description": "A small Detection Transformer trained from scratch on this CPU "
                       "(transformer_viz/detr.py).",
        "data": {"canvases": CANVAS_TEXT, "training_seed": TRAIN_SEED},
        "training": {**asdict(tc), "steps_run": step, "optimizer": "AdamW",
                     "minutes": round(minutes, 2)},
        "validation": evaluate(model, tc.val_seed, 1000),
        "history": history,
    }
    save_detr_checkpoint(out_dir, model, metadata)
    return metadata


def save_detr_checkpoint(directory: str | Path, model: DETR, metadata: dict) -> Path:
    return save_image_model(directory, model, {**metadata, "digits_credit": DATA_CREDIT}, detr_card)
