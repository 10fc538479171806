"""Source or prefix? For every token a translation writes, the share of its prediction that came
from the source sentence and the share that came from the translation so far; and flags for a likely
hallucination (a token that took little from the source) and under-translation (a source token that
no output token used).

The question is Voita, Sennrich and Titov's (2021, "Analyzing the source and target contributions to
predictions in neural machine translation"), who split relevance by layer-wise relevance
propagation; here the attributions are integrated gradients (Sundararajan et al., 2017) of the
token's log-probability f_t = log p(y_t | y_<t, x) with respect to the source embeddings e_s and the
target prefix embeddings u_j together (baseline: both zero, positions kept), through the hook points
``src.embedding`` and ``tgt.embedding``:

    source share_t = Σ_s |IG_t(e_s)| / (Σ_s |IG_t(e_s)| + Σ_{j≤t} |IG_t(u_j)|)

so a token's two shares sum to 1. Every target position of a sentence is one batch: rows (node k,
position t) keep only f_t, as interpret/explain.py's attributions do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.core.hooks import Hooks
from transformer_viz.interpret.explain import IG_STEPS, _token_logp
from transformer_viz.models.transformer.model import Transformer

# A written token that took less than this share from the source is flagged: it reads the
# translation so far more than the sentence it translates.
LOW_SOURCE_SHARE = 0.4
# A source token is unused when no written token gives it this much of its source attribution.
UNUSED_SOURCE = 0.05


@dataclass
class SourceShares:
    """Per written token (T,: the translation's tokens and </s>): its source share; per written
    token and source token (T, S): the absolute source attributions; and the flags."""

    source_share: np.ndarray
    source_attribution: np.ndarray

    @property
    def low_source(self) -> np.ndarray:
        """(T,) True where a written token took little from the source (a hallucination's sign)."""
        return self.source_share < LOW_SOURCE_SHARE

    def unused_sources(self, content: np.ndarray | None = None) -> np.ndarray:
        """(S,) True for source tokens no written token used (under-translation's sign); ``content``
        (S,) limits the flags to tokens that carry meaning (not </s> or punctuation)."""
        a = self.source_attribution
        shares = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)  # (T, S): each token's split
        unused = shares.max(0) < UNUSED_SOURCE
        return unused if content is None else unused & content


def content_tokens(tokens: list[str]) -> np.ndarray:
    """(S,) True for source tokens that carry meaning: not </s>, not punctuation alone (the tokens
    whose going unused is a sign of under-translation)."""
    from transformer_viz.plots.common import token_text

    return np.array([tok != "</s>" and any(ch.isalnum() for ch in token_text(tok))
                     for tok in tokens])


def source_shares(model: Transformer, src_ids: list[int], tgt_ids: list[int],
                  steps: int = IG_STEPS) -> SourceShares:
    """The shares of every token the decoder writes when it reads ``tgt_ids``
    (<s> + translation)."""
    device = next(model.parameters()).device
    T, S = len(tgt_ids), len(src_ids)
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)
    predicted = torch.tensor(tgt_ids[1:] + [model.cfg.eos_id], device=device)  # (T,)
    with torch.no_grad():
        e, u = model.src_embed(src), model.tgt_embed(tgt)  # (1, S, d_model), (1, T, d_model)
    nodes, weights = np.polynomial.legendre.leggauss(steps)  # on [−1, 1]; weights sum to 2
    alpha = torch.as_tensor((nodes + 1) / 2, dtype=e.dtype, device=device).repeat_interleave(T)
    scaled_e = (alpha[:, None, None] * e).requires_grad_(True)  # (K·T, S, d_model)
    scaled_u = (alpha[:, None, None] * u).requires_grad_(True)  # (K·T, T, d_model)
    hooks = Hooks({"src.embedding": lambda _, name: scaled_e,
                   "tgt.embedding": lambda _, name: scaled_u})
    K = len(nodes)
    with torch.enable_grad():
        logits = model(src.expand(K * T, -1), tgt.expand(K * T, -1), hooks=hooks)  # (K·T, T, V)
        f = _token_logp(logits, predicted)  # (K·T, T)
        own = f.view(K, T, T).diagonal(dim1=1, dim2=2)  # (K, T): row (k, t) keeps its position t
        w = torch.as_tensor(weights / 2, dtype=own.dtype, device=device)[:, None]  # (K, 1)
        # autograd.grad, not backward: nothing is written to the shared model's parameters' .grad
        grad_e, grad_u = torch.autograd.grad((w * own).sum(), (scaled_e, scaled_u))
    ig_e = (grad_e.view(K, T, S, -1).sum(0) * e).sum(-1).abs()  # (T, S)
    ig_u = (grad_u.view(K, T, T, -1).sum(0) * u).sum(-1).abs()  # (T, T): zero after t (causal)
    total_e, total_u = ig_e.sum(-1), ig_u.sum(-1)  # (T,)
    share = total_e / (total_e + total_u).clamp(min=1e-12)
    return SourceShares(share.float().cpu().numpy(), ig_e.float().cpu().numpy())
