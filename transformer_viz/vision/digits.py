"""The handwritten digits the Vision Transformer (vit.py) learns from, its fixed split, its training and its
checkpoint directory.

Data: scikit-learn's copy of the UCI "Optical Recognition of Handwritten Digits" test set (Alpaydin &
Kaynak, 1998; UCI Machine Learning Repository, CC BY 4.0): 1,797 images of 8 × 8 pixels, each pixel a count
0–16 of the set pixels in a 4 × 4 block of the 32 × 32 scan; it ships inside the package (no download).

Split (fixed, never changed): ``train_test_split(..., test_size=0.2, random_state=0, stratify=labels)``: 360
held-out images (20 %, the class proportions kept) that training never sees; the other 1,437 are trained on.
Pixels are divided by 16, so they lie in [0, 1].

Checkpoint layout (no tokenizer; ``checkpoint.load_checkpoint`` reads it by ``"arch": "vit"``)::

    DIR/model.safetensors  DIR/config.json (ViTConfig)  DIR/metadata.json  DIR/README.md (the model card)
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from transformer_viz.models.vit import ViT, ViTConfig

TEST_SIZE, SPLIT_SEED = 0.2, 0
DATA_CREDIT = ("scikit-learn's copy (sklearn.datasets.load_digits) of the test set of the UCI Optical Recognition "
               "of Handwritten Digits data set, E. Alpaydin and C. Kaynak (1998), UCI Machine Learning Repository, "
               "https://doi.org/10.24432/C50P49, licensed CC BY 4.0")
SPLIT_TEXT = ("sklearn.model_selection.train_test_split(test_size=0.2, random_state=0, stratify=labels): "
              "1,437 training images, 360 held-out images never trained on; pixels / 16, in [0, 1]")


@dataclass
class DigitsSplit:
    train_images: np.ndarray  # (n_train, 8, 8) float32 in [0, 1]
    train_labels: np.ndarray  # (n_train,) int64
    test_images: np.ndarray  # (n_test, 8, 8)
    test_labels: np.ndarray  # (n_test,)
    train_index: np.ndarray  # positions in load_digits()'s order
    test_index: np.ndarray


def load_split() -> DigitsSplit:
    """The fixed split described in the module docstring: the same images on every call."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)  # (1797, 8, 8) in [0, 1]
    labels = digits.target.astype(np.int64)
    index = np.arange(len(labels))
    train_index, test_index = train_test_split(index, test_size=TEST_SIZE, random_state=SPLIT_SEED, stratify=labels)
    return DigitsSplit(images[train_index], labels[train_index], images[test_index], labels[test_index],
                       train_index, test_index)


@dataclass
class ViTTrainConfig:
    model_overrides: dict = field(default_factory=dict)  # changes to ViTConfig's defaults
    epochs: int = 300
    batch_size: int = 32
    lr: float = 1e-3  # AdamW's peak learning rate (cosine decay to 0 after a linear warm-up)
    warmup_epochs: int = 10
    weight_decay: float = 0.05
    shift: int = 1  # augmentation: each training image moved by up to this many pixels (0: none)
    max_minutes: float = 10.0  # stop after the epoch that passes this wall-clock budget (0: no limit)
    seed: int = 1234
    threads: int = 1


def shift_images(images: torch.Tensor, max_shift: int, generator: torch.Generator) -> torch.Tensor:
    """Each image (B, H, W) moved by a random (dy, dx) in [−max_shift, max_shift]², zeros coming in."""
    if max_shift <= 0:
        return images
    B, H, W = images.shape
    padded = F.pad(images, (max_shift,) * 4)  # (B, H + 2s, W + 2s)
    dy, dx = (torch.randint(0, 2 * max_shift + 1, (B,), generator=generator) for _ in range(2))
    rows = dy[:, None] + torch.arange(H)[None, :]  # (B, H)
    cols = dx[:, None] + torch.arange(W)[None, :]  # (B, W)
    return padded[torch.arange(B)[:, None, None], rows[:, :, None], cols[:, None, :]]  # (B, H, W)


@torch.no_grad()
def accuracy(model: ViT, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    logits = model(torch.from_numpy(images))  # (n, 10)
    return float((logits.argmax(-1).numpy() == labels).mean())


def train_vit(tc: ViTTrainConfig, out_dir: str | Path, log=print) -> dict:
    """Train on the training part of the split, score the held-out part once at the end, save to out_dir."""
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
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / max(1, warmup), 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / max(1, total))))))
    start, history = time.perf_counter(), []
    for epoch in range(1, tc.epochs + 1):
        model.train()
        order, losses = torch.randperm(len(labels), generator=generator), []
        for batch in order.split(tc.batch_size):
            loss = F.cross_entropy(model(shift_images(images[batch], tc.shift, generator)), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        elapsed = time.perf_counter() - start
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "elapsed_s": round(elapsed, 1)})
        if epoch % 25 == 0 or epoch == tc.epochs:
            log(f"epoch {epoch}: train loss {history[-1]['train_loss']:.4f}, {elapsed / 60:.1f} min")
        if tc.max_minutes and elapsed > 60 * tc.max_minutes:
            log(f"stopping after epoch {epoch}: the {tc.max_minutes}-minute budget is spent")
            break
    metadata = {
        "name": "ViT on 8 × 8 handwritten digits", "task": "digit classification",
        "description": "A small Vision Transformer trained from scratch on this CPU (transformer_viz/vit.py).",
        "data": {"source": DATA_CREDIT, "split": SPLIT_TEXT},
        "training": {**asdict(tc), "epochs_run": len(history), "optimizer": "AdamW",
                     "minutes": round((time.perf_counter() - start) / 60, 2),
                     "final_train_loss": round(history[-1]["train_loss"], 4),
                     "train_accuracy": round(accuracy(model, split.train_images, split.train_labels), 4)},
        "held_out_accuracy": round(accuracy(model, split.test_images, split.test_labels), 4),
        "held_out_images": int(len(split.test_labels)),
        "history": history[::10] + ([history[-1]] if len(history) % 10 != 1 else []),
    }
    save_vit_checkpoint(out_dir, model, metadata)
    return metadata


def model_card(cfg: ViTConfig, meta: dict) -> str:
    training = meta.get("training", {})
    return "\n".join([
        f"# {meta.get('name', 'ViT')}", "", meta.get("description", ""), "",
        "## Model", "", f"- Parameters: {meta.get('parameters', '?'):,}",
        f"- {cfg.patch_size}×{cfg.patch_size}-pixel patches of {cfg.image_size}×{cfg.image_size} images: "
        f"{cfg.n_patches} patch tokens + [CLS]; learned position embeddings; d_model {cfg.d_model}, d_ff {cfg.d_ff}, "
        f"h {cfg.h}, N {cfg.N}, dropout {cfg.dropout}, {'Pre' if cfg.pre_ln else 'Post'}-LN", "",
        "## Data", "", f"- {DATA_CREDIT}", f"- Split: {SPLIT_TEXT}", "",
        "## Training", "",
        f"- AdamW, lr {training.get('lr')}, weight decay {training.get('weight_decay')}, batch "
        f"{training.get('batch_size')}, {training.get('epochs_run')} epochs (cosine schedule, "
        f"{training.get('warmup_epochs')} warm-up), random shifts of up to {training.get('shift')} pixel",
        f"- {training.get('minutes')} minutes on {training.get('threads')} CPU thread(s), seed {training.get('seed')}",
        f"- Final training loss {training.get('final_train_loss')}, training accuracy "
        f"{100 * training.get('train_accuracy', float('nan')):.2f} %", "",
        "## Held-out accuracy", "",
        f"**{100 * meta.get('held_out_accuracy', float('nan')):.2f} %** of the {meta.get('held_out_images')} "
        f"held-out images, measured once after training (no choice was made on them). Retrain with "
        f"`python -m transformer_viz train-vit --out DIR`.", ""])


def save_vit_checkpoint(directory: str | Path, model: ViT, metadata: dict) -> Path:
    from transformer_viz.checkpoints.load import save_image_model

    return save_image_model(directory, model, metadata, model_card)
