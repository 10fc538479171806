"""Why X, not Y? Integrated gradients of a contrast at one target position.

At decoder position t the model writes X; the question is what made it prefer X to another token Y.
The quantity attributed is

    g = log p(X | y_<t, x) − log p(Y | y_<t, x) = logit(X) − logit(Y)

(the softmax's normaliser cancels), to the source tokens' embeddings e (E[x]·√d_model) AND to the
target prefix's embeddings u (E[y_≤t]·√d_model, <s> included), through the hook points
``src.embedding`` and ``tgt.embedding`` on the model's one forward pass, as interpret/explain.py
does for the source alone. Baseline: both zero (positions kept); the path scales both together, α(e,
u), and the integral over α is Gauss–Legendre quadrature, so the attributions of the source and of
the prefix together sum to g(e, u) − g(0, 0) (completeness, up to the quadrature).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.core.hooks import Hooks
from transformer_viz.interpret.explain import IG_STEPS
from transformer_viz.models.transformer.model import Transformer


@dataclass
class Contrast:
    """IG of g = log p(X) − log p(Y) at position t: per source token (S,) and per target prefix
    token (t + 1,: <s> and the tokens written before t); g at the input and at the baseline."""

    position: int
    source: np.ndarray
    target: np.ndarray
    g_input: float
    g_baseline: float

    @property
    def gap(self) -> float:
        """|Σ attributions − (g(e, u) − g(0, 0))| / |g(e, u) − g(0, 0)|: the quadrature's error."""
        delta = self.g_input - self.g_baseline
        total = float(self.source.sum() + self.target.sum())
        return abs(total - delta) / abs(delta)


def _contrast_at(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, e: torch.Tensor,
                 u: torch.Tensor, t: int, x_id: int, y_id: int) -> torch.Tensor:
    """g = logit(X) − logit(Y) at position t of each row (B,), with the embeddings e (B, S, d_model)
    and u (B, t + 1, d_model) in place of the tokens' own."""
    hooks = Hooks({"src.embedding": lambda _, name: e, "tgt.embedding": lambda _, name: u})
    rows = len(e)
    logits = model(src.expand(rows, -1), tgt.expand(rows, -1), hooks=hooks)[:, t]  # (B, V)
    logits = logits.float()
    return logits[:, x_id] - logits[:, y_id]


def contrastive_ig(model: Transformer, src_ids: list[int], tgt_ids: list[int], t: int, x_id: int,
                   y_id: int, steps: int = IG_STEPS) -> Contrast:
    """Why ``x_id`` rather than ``y_id`` at decoder position t, where the decoder reads ``tgt_ids``
    (<s> + a translation; only its first t + 1 tokens matter at t). ONE forward and backward pass
    over a batch of ``steps`` rows, row k on the embeddings scaled by the node α_k."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids[:t + 1]], device=device)  # (1, t + 1): the prefix position t reads
    with torch.no_grad():
        e = model.src_embed(src)  # (1, S, d_model)
        u = model.tgt_embed(tgt)  # (1, t + 1, d_model)
    nodes, weights = np.polynomial.legendre.leggauss(steps)  # on [−1, 1]; weights sum to 2
    alpha = torch.as_tensor((nodes + 1) / 2, dtype=e.dtype, device=device)
    alpha = alpha[:, None, None]  # (K, 1, 1): one node per row
    w = torch.as_tensor(weights / 2, dtype=torch.float32, device=device)  # (K,)
    scaled_e = (alpha * e).requires_grad_(True)  # (K, S, d_model)
    scaled_u = (alpha * u).requires_grad_(True)  # (K, t + 1, d_model)
    with torch.enable_grad():
        g = _contrast_at(model, src, tgt, scaled_e, scaled_u, t, x_id, y_id)  # (K,)
        # autograd.grad, not backward: nothing is written to the shared model's parameters' .grad
        grad_e, grad_u = torch.autograd.grad((w * g).sum(), (scaled_e, scaled_u))
    with torch.no_grad():
        ends = _contrast_at(model, src, tgt, torch.cat([torch.zeros_like(e), e]),
                            torch.cat([torch.zeros_like(u), u]), t, x_id, y_id)  # (2,)
    source = (grad_e.sum(0) * e[0]).sum(-1)  # (S,): Σ_d e_sd Σ_k w_k ∂g/∂e_sd(α_k)
    target = (grad_u.sum(0) * u[0]).sum(-1)  # (t + 1,)
    return Contrast(t, source.float().cpu().numpy(), target.float().cpu().numpy(), float(ends[1]),
                    float(ends[0]))
