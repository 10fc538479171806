"""Boxes, their overlap, and the set loss of DETR: every prediction is paired with at most one
object by the Hungarian algorithm (the pairing of least total cost), and only then is the loss
taken.

Boxes are (cx, cy, w, h), fractions of the canvas side, as the model predicts them; (x0, y0, x1, y1)
corners are used to measure overlap. With M queries and n ≤ M objects the cost of pairing query i
with object j is

    C[i, j] = −w_class · p_i(c_j) + w_L1 · ‖b_i − b_j‖₁ − w_GIoU · GIoU(b_i, b_j),

the pairing σ minimises Σ_j C[σ(j), j], and the loss is cross-entropy on every query
(the unpaired ones must say ∅, with a weight of ``no_object_weight``, since they are most of the
queries) plus the L1 and 1 − GIoU terms on the paired ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F


def cxcywh_to_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """(…, 4) centre and size -> (…, 4) corners."""
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)


def xyxy_to_cxcywh(boxes: torch.Tensor) -> torch.Tensor:
    """(…, 4) corners -> (…, 4) centre and size."""
    x0, y0, x1, y1 = boxes.unbind(-1)
    return torch.stack([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0], dim=-1)


def pairwise_iou(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Corner boxes a (n, 4), b (m, 4) -> IoU (n, m) and the union areas (n, m)."""
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])  # (n,)
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])  # (m,)
    top_left = torch.maximum(a[:, None, :2], b[None, :, :2])  # (n, m, 2)
    bottom_right = torch.minimum(a[:, None, 2:], b[None, :, 2:])  # (n, m, 2)
    inter = (bottom_right - top_left).clamp(min=0).prod(-1)  # (n, m)
    union = area_a[:, None] + area_b[None, :] - inter
    return inter / union, union


def pairwise_giou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Generalised IoU (Rezatofighi et al., 2019) of corner boxes a (n, 4), b (m, 4) -> (n, m) in
    [−1, 1]: IoU − (hull − union) / hull, where hull is the smallest box around both; unlike IoU it
    still has a gradient when the boxes do not touch."""
    iou, union = pairwise_iou(a, b)
    top_left = torch.minimum(a[:, None, :2], b[None, :, :2])
    bottom_right = torch.maximum(a[:, None, 2:], b[None, :, 2:])
    hull = (bottom_right - top_left).clamp(min=0).prod(-1)  # (n, m)
    return iou - (hull - union) / hull


@dataclass
class LossWeights:
    class_: float = 1.0
    l1: float = 5.0
    giou: float = 2.0
    no_object: float = 0.1  # the weight of the ∅ class in the cross-entropy


def matching_cost(class_logits: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor,
                  target_boxes: torch.Tensor, w: LossWeights = LossWeights()) -> torch.Tensor:
    """One canvas: predictions (M, C+1), (M, 4) against n objects (n,), (n, 4) -> cost C (M, n)."""
    probs = class_logits.softmax(-1)[:, labels]  # (M, n)
    l1 = torch.cdist(boxes, target_boxes, p=1)  # (M, n)
    giou = pairwise_giou(cxcywh_to_xyxy(boxes), cxcywh_to_xyxy(target_boxes))  # (M, n)
    return -w.class_ * probs + w.l1 * l1 - w.giou * giou


def hungarian_match(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cost (M, n), M ≥ n -> (query indices, object indices) of the pairing of least total cost."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost)
    order = np.argsort(cols)
    return rows[order], cols[order]


@torch.no_grad()
def match(class_logits: torch.Tensor, boxes: torch.Tensor, labels: list[torch.Tensor],
          target_boxes: list[torch.Tensor],
          w: LossWeights = LossWeights()) -> list[tuple[np.ndarray, np.ndarray]]:
    """A batch: (B, M, C+1), (B, M, 4) and per canvas its objects -> per canvas
    (query indices, object indices)."""
    return [hungarian_match(matching_cost(class_logits[b].float(), boxes[b].float(), labels[b],
                                          target_boxes[b], w)
                            .cpu().numpy()) for b in range(len(labels))]


def set_loss(class_logits: torch.Tensor, boxes: torch.Tensor, labels: list[torch.Tensor],
             target_boxes: list[torch.Tensor],
             w: LossWeights = LossWeights()) -> dict[str, torch.Tensor]:
    """The DETR loss of one decoder layer's predictions (B, M, C+1), (B, M, 4): a dict of its three
    terms and their weighted sum under "loss". Box terms are averaged over the objects of the
    batch."""
    B, M, n_logits = class_logits.shape
    pairs = match(class_logits, boxes, labels, target_boxes, w)
    # all ∅
    target_classes = torch.full((B, M), n_logits - 1, dtype=torch.long, device=class_logits.device)
    for b, (queries, objects) in enumerate(pairs):
        target_classes[b, torch.as_tensor(queries, dtype=torch.long)] = labels[b][objects]
    class_weight = torch.ones(n_logits, device=class_logits.device)
    class_weight[-1] = w.no_object
    ce = F.cross_entropy(class_logits.reshape(B * M, n_logits), target_classes.reshape(B * M),
                         class_weight)
    batch = torch.cat([torch.full((len(q),), b) for b, (q, _) in enumerate(pairs)])  # (n_total,)
    queries = torch.cat([torch.as_tensor(q, dtype=torch.long) for q, _ in pairs])
    predicted = boxes[batch, queries]  # (n_total, 4)
    # (n_total, 4)
    wanted = torch.cat([target_boxes[b][objects] for b, (_, objects) in enumerate(pairs)])
    n_objects = max(1, len(wanted))
    l1 = (predicted - wanted).abs().sum() / n_objects
    giou = (1 - torch.diag(pairwise_giou(cxcywh_to_xyxy(predicted),
                                         cxcywh_to_xyxy(wanted)))).sum() / n_objects
    return {"loss": w.class_ * ce + w.l1 * l1 + w.giou * giou, "class": ce, "l1": l1, "giou": giou}
