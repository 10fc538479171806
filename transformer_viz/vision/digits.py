"""The handwritten digits the Vision Transformer (models.vit) learns from, its fixed split and its
accuracy (training is training.vit, the checkpoint's card checkpoints.cards.vit_card).

Data: scikit-learn's copy of the UCI "Optical Recognition of Handwritten Digits" test set (Alpaydin
& Kaynak, 1998; UCI Machine Learning Repository, CC BY 4.0): 1,797 images of 8 × 8 pixels, each
pixel a count 0–16 of the set pixels in a 4 × 4 block of the 32 × 32 scan; it ships inside the
package (no download).

Split (fixed, never changed): ``train_test_split(..., test_size=0.2, random_state=0,
stratify=labels)``: 360 held-out images (20 %, the class proportions kept) that training never sees;
the other 1,437 are trained on. Pixels are divided by 16, so they lie in [0, 1].

Checkpoint layout (no tokenizer; ``checkpoints.load_checkpoint`` reads it by ``"arch": "vit"``)::

    DIR/model.safetensors  DIR/config.json (ViTConfig)  DIR/metadata.json
    DIR/README.md (the model card)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.models.vit.model import ViT

TEST_SIZE, SPLIT_SEED = 0.2, 0
DATA_CREDIT = ("scikit-learn's copy (sklearn.datasets.load_digits) of the test set of the UCI "
               "Optical Recognition of Handwritten Digits data set, E. Alpaydin and C. Kaynak "
               "(1998), UCI Machine Learning Repository, https://doi.org/10.24432/C50P49, licensed "
               "CC BY 4.0")
SPLIT_TEXT = ("sklearn.model_selection.train_test_split(test_size=0.2, random_state=0, "
              "stratify=labels): 1,437 training images, 360 held-out images never trained on; "
              "pixels / 16, in [0, 1]")


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
    train_index, test_index = train_test_split(index, test_size=TEST_SIZE, random_state=SPLIT_SEED,
                                               stratify=labels)
    return DigitsSplit(images[train_index], labels[train_index], images[test_index],
                       labels[test_index], train_index, test_index)


@torch.no_grad()
def accuracy(model: ViT, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    logits = model(torch.from_numpy(images))  # (n, 10)
    return float((logits.argmax(-1).numpy() == labels).mean())
