"""Training the Vision Transformer (models.vit) on the handwritten digits' training part
(vision.digits), and saving it as a checkpoint directory (checkpoints.save_image_model, with
checkpoints.cards.vit_card)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from transformer_viz.checkpoints import save_image_model
from transformer_viz.checkpoints.cards import vit_card
from transformer_viz.models.vit.config import ViTConfig
from transformer_viz.models.vit.model import ViT
from transformer_viz.vision.digits import DATA_CREDIT, SPLIT_TEXT, accuracy, load_split


@dataclass
class ViTTrainConfig:
    model_overrides: dict = field(default_factory=dict)  # changes to ViTConfig's defaults
    epochs: int = 300
    batch_size: int = 32
    lr: float = 1e-3  # AdamW's peak learning rate (cosine decay to 0 after a linear warm-up)
    warmup_epochs: int = 10
    weight_decay: float = 0.05
    shift: int = 1  # augmentation: each training image moved by up to this many pixels (0: none)
    # stop after the epoch that passes this wall-clock budget (0: no limit)
    max_minutes: float = 10.0
    seed: int = 1234
    threads: int = 1


def shift_images(images: torch.Tensor, max_shift: int, generator: torch.Generator) -> torch.Tensor:
    """Each image (B, H, W) moved by a random (dy, dx) in [−max_shift, max_shift]², zeros coming
    in."""
    if max_shift <= 0:
        return images
    B, H, W = images.shape
    padded = F.pad(images, (max_shift,) * 4)  # (B, H + 2s, W + 2s)
    dy, dx = (torch.randint(0, 2 * max_shift + 1, (B,), generator=generator) for _ in range(2))
    rows = dy[:, None] + torch.arange(H)[None, :]  # (B, H)
    cols = dx[:, None] + torch.arange(W)[None, :]  # (B, W)
    return padded[torch.arange(B)[:, None, None], rows[:, :, None], cols[:, None, :]]  # (B, H, W)


def _lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to 0 at ``total`` steps."""
    return min((step + 1) / max(1, warmup),
               0.5 * (1 + math.cos(math.pi * min(1.0, step / max(1, total)))))


def train_vit(tc: ViTTrainConfig, out_dir: str | Path, log=print) -> dict:
    """Train on the training part of the split, score the held-out part once at the end, save to
    out_dir."""
    torch.set_num_threads(tc.threads)
    torch.manual_seed(tc.seed)
    generator = torch.Generator().manual_seed(tc.seed)
    split = load_split()
    cfg = ViTConfig(**tc.model_overrides)
    model = ViT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    images, labels = torch.from_numpy(split.train_images), torch.from_numpy(split.train_labels)
    steps_per_epoch = math.ceil(len(labels) / tc.batch_size)
    total, warmup = tc.epochs * steps_per_epoch, tc.warmup_epochs * steps_per_epoch
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, warmup, total))
    start, history = time.perf_counter(), []
    for epoch in range(1, tc.epochs + 1):
        model.train()
        order, losses = torch.randperm(len(labels), generator=generator), []
        for batch in order.split(tc.batch_size):
            logits = model(shift_images(images[batch], tc.shift, generator))
            loss = F.cross_entropy(logits, labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        elapsed = time.perf_counter() - start
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)),
                        "elapsed_s": round(elapsed, 1)})
        if epoch % 25 == 0 or epoch == tc.epochs:
            log(f"epoch {epoch}: train loss {history[-1]['train_loss']:.4f}, "
                f"{elapsed / 60:.1f} min")
        if tc.max_minutes and elapsed > 60 * tc.max_minutes:
            log(f"stopping after epoch {epoch}: the {tc.max_minutes}-minute budget is spent")
            break
    metadata = {
        "name": "ViT on 8 × 8 handwritten digits", "task": "digit classification",
        "description": "A small Vision Transformer trained from scratch on this CPU "
                       "(transformer_viz/vit.py).",
        "data": {"source": DATA_CREDIT, "split": SPLIT_TEXT},
        "training": {**asdict(tc), "epochs_run": len(history), "optimizer": "AdamW",
                     "minutes": round((time.perf_counter() - start) / 60, 2),
                     "final_train_loss": round(history[-1]["train_loss"], 4),
                     "train_accuracy": round(accuracy(model, split.train_images,
                                                      split.train_labels), 4)},
        "held_out_accuracy": round(accuracy(model, split.test_images, split.test_labels), 4),
        "held_out_images": int(len(split.test_labels)),
        "history": history[::10] + ([history[-1]] if len(history) % 10 != 1 else []),
    }
    save_vit_checkpoint(out_dir, model, metadata)
    return metadata


def save_vit_checkpoint(directory: str | Path, model: ViT, metadata: dict) -> Path:
    return save_image_model(directory, model, metadata, vit_card)
