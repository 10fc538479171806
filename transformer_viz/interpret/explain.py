"""What does a head do, what does each decoder layer already guess, and which source words did a
translation use: head ablation, the logit lens and attributions for the encoder–decoder Transformer.

Every quantity is about one sentence and its translation, teacher-forced: the decoder reads <s> +
the translation and f_t = log p(y_t | y_<t, x) is the log-probability the model gives the token it
wrote at position t (the last one is </s>). The page "What does a head do?" and
``python -m transformer_viz explain`` call these functions, so they show the same numbers.

- **Head ablation**: a head's output is zeroed before W_O (interpret/ablation.py: hooks). The drop
  of Σ_t f_t when one head alone is off is computed for every head in ONE batched forward pass:
  batch row r switches head r off.
- **Logit lens**: the decoder's residual stream after layer l, through the model's own last steps
  (final LayerNorm where it has one, tied output projection, softmax).
- **Attribution** to the source tokens' embeddings e_s (E[x_s]·√d_model, before the positional
  encoding): gradient × input, Σ_d e_sd ∂f_t/∂e_sd, and integrated gradients from the baseline
  e' = 0 (every source token's embedding removed, positions kept),
  IG_s = Σ_d (e_sd − e'_sd) ∫₀¹ ∂f_t/∂e_sd(e' + α(e − e')) dα, the integral by Gauss–Legendre
  quadrature. IG's attributions sum to f_t(e) − f_t(e') (completeness).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import torch

from transformer_viz.core.hooks import Hooks
from transformer_viz.generation.decoding import greedy_decode, max_output_length
from transformer_viz.interpret import ablation as H
from transformer_viz.interpret.lens import decode_streams, forward_with_streams, lens_logits
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.tokenizer import decode

# Gauss–Legendre nodes for integrated gradients. Where the model is smooth along the path (a GELU
# model) 16 nodes already meet completeness to within 3e-5 (tests/unit/test_explain.py checks 1 %);
# ReLU's kinks make the integrand only piecewise smooth and the gap shrinks slowly: on the shipped
# de-en model and "Ein Mann fährt mit dem Fahrrad durch die Stadt." 32 nodes leave 1.6 % of Σ_t
# |f_t(e) − f_t(e')| unexplained (6 % at the worst position), 64 nodes 0.65 %; over 500 test
# sentences 16 nodes leave 4.4 %. The page and `explain` report the gap.
IG_STEPS = 32


def _device(model: Transformer) -> torch.device:
    return next(model.parameters()).device


def _pair(model: Transformer, src_ids: list[int], tgt_ids: list[int], rows: int = 1):
    """The sentence pair as a batch of ``rows`` identical rows: src (rows, S), tgt (rows, T), and
    what each decoder position predicts (T,): the translation shifted left, ending in </s>."""
    device = _device(model)
    src = torch.tensor([src_ids], device=device).expand(rows, -1)  # (rows, S)
    tgt = torch.tensor([tgt_ids], device=device).expand(rows, -1)  # (rows, T)
    predicted = torch.tensor(tgt_ids[1:] + [model.cfg.eos_id], device=device)  # (T,)
    return src, tgt, predicted


def _token_logp(logits: torch.Tensor, predicted: torch.Tensor) -> torch.Tensor:
    """logits (B, T, V) -> f_t = log p(predicted_t) = logit − logsumexp(logits) per row and
    position, (B, T), in float32 or wider (one pass over the logits: the full log-softmax is never
    needed)."""
    logits = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    return (logits.gather(-1, predicted.expand(logits.size(0), -1)[..., None])[..., 0]
            - logits.logsumexp(-1))


# --- switching heads off --------------------------------------------------------------------------

@dataclass
class HeadsRun:
    """One sentence's teacher-forced numbers with and without heads: p_base and p_off (T,), the
    probability of each translation token with every head on and with ``heads_off`` off; drops
    (3·N·h,), per head of ``heads`` (interpret.ablation.all_heads order) the fall of
    log p(translation) = Σ_t f_t when that head alone is off (None when not computed); the logit
    lens of the run with every head on (:func:`lens_numbers`)."""

    heads: list
    heads_off: list
    p_base: np.ndarray
    p_off: np.ndarray
    drops: np.ndarray | None
    lens: dict


@torch.no_grad()
def heads_run(model: Transformer, src_ids: list[int], tgt_ids: list[int], heads_off=(),
              top_k: int = 5, each_head: bool = True) -> HeadsRun:
    """Everything the ablation bars and the logit lens need, in ONE batched forward pass: row 0 with
    every head on, row 1 with ``heads_off`` off, and one row per head with that head alone off.
    ``each_head=False``: rows 0 and 1 only (drops None), 2 rows instead of 2 + 3·N·h."""
    cfg = model.cfg
    every = H.all_heads(cfg)
    rows = [[], list(heads_off)] + ([[head] for head in every] if each_head else [])
    src, tgt, predicted = _pair(model, src_ids, tgt_ids, len(rows))
    keep = H.keep_mask(cfg, rows, _device(model), next(model.parameters()).dtype)
    # (R, T, d_model), N × (1, T, d_model)
    final, base = _final_streams(model, src, tgt, keep, rows)
    f = _token_logp(lens_logits(model, final), predicted)  # (R, T)
    total = f.sum(-1)  # (R,) log p(translation)
    lens = lens_numbers(model, base, predicted, top_k)
    drops = (total[0] - total[2:]).cpu().numpy() if each_head else None
    return HeadsRun(every, list(heads_off), f[0].exp().cpu().numpy(), f[1].exp().cpu().numpy(),
                    drops, lens)


def _final_streams(model: Transformer, src, tgt, keep: dict, rows: list[list]) -> tuple:
    """The decoder's last stream (R, T, d_model) of every row, and row 0's stream after each layer,
    sharing what rows have in common: only the rows with an encoder head off run an encoder of their
    own (the others share row 0's memory), and a row whose first head off is in decoder layer l
    starts there from row 0's stream after layer l − 1. For 3 layers of 8 heads: 25 encoder rows
    instead of 74, 171 decoder row-layers instead of 222; the same numbers
    (tests/unit/test_explain.py: equal to one head at a time)."""
    enc_keep, which = keep["enc"].unique(dim=0, return_inverse=True)  # (U, N, h), (R,)
    memory, src_mask = model.encode(src[:len(enc_keep)], hooks=H.ablation_hooks({"enc": enc_keep}))
    memory, src_mask = memory[which], src_mask[which]  # (R, S, d_model), (R, 1, 1, S)
    N = model.cfg.N
    # (R,): the first layer the row computes differently from row 0
    start = torch.tensor([0 if any(h.kind == "enc" for h in off)
                          else min((h.layer for h in off), default=N) for off in rows])
    start[0] = 0  # row 0 itself, every head on: all layers, the others start from its streams
    base = decode_streams(model, tgt[:1], memory[:1], src_mask[:1])  # N × (1, T, d_model)
    # (R, T, d_model): rows with nothing off keep row 0's
    final = base[-1].expand(len(rows), -1, -1).clone()
    for layer in range(N):
        group = (start == layer).nonzero()[:, 0]
        group = group[group > 0]
        if not len(group):
            continue
        g_keep = {kind: k[group] for kind, k in keep.items()}
        y = None if layer == 0 else base[layer - 1].expand(len(group), -1, -1)
        streams = decode_streams(model, tgt[group], memory[group], src_mask[group],
                                 H.ablation_hooks(g_keep), layer, y)
        final[group] = streams[-1]
    return final, base


def drop_grid(run: HeadsRun, cfg) -> np.ndarray:
    """A run's per-head drops as (3, N, h): kind (KINDS order), layer, head."""
    return run.drops.reshape(len(H.KINDS), cfg.N, cfg.h)


@torch.no_grad()
def head_drops_one_at_a_time(model: Transformer, src_ids: list[int],
                             tgt_ids: list[int]) -> np.ndarray:
    """The same drops as :func:`heads_run`, one forward pass per head: slow, the reference the test
    compares the batched pass with."""
    src, tgt, predicted = _pair(model, src_ids, tgt_ids)
    base = _token_logp(model(src, tgt), predicted).sum()
    drops = []
    for head in H.all_heads(model.cfg):
        keep = H.keep_mask(model.cfg, [[head]], _device(model), next(model.parameters()).dtype)
        logits = model(src, tgt, hooks=H.ablation_hooks(keep))
        drops.append(float(base - _token_logp(logits, predicted).sum()))
    return np.array(drops)


@torch.no_grad()
def translate_with_heads(model: Transformer, src_ids: list[int], heads_off=(), max_len: int = 60,
                         suppress: tuple[int, ...] = ()) -> list[int]:
    """Greedy decoding with ``heads_off`` switched off -> the output IDs (without <s>, cut before
    </s>): the model's own cached decoding with the ablation hooks on every step."""
    cfg = model.cfg
    src, _, _ = _pair(model, src_ids, [cfg.bos_id])
    hooks = H.heads_off_hooks(cfg, heads_off, _device(model), next(model.parameters()).dtype)
    result = greedy_decode(model, src, max_len=min(max_len, cfg.max_len - 1), record=False,
                           suppress=suppress, hooks=hooks)
    return result.tokens[0]


def most_important_text(run: HeadsRun, top: int = 3) -> str:
    """The heads that matter most for this sentence, in one plain sentence (markdown)."""
    order = np.argsort(-run.drops)[:top]
    named = [f"**{run.heads[i]}** ({run.heads[i].label}: −{run.drops[i]:.2f} nats)" for i in order]
    harmless = int((np.abs(run.drops) < 0.05).sum())
    return (f"For this sentence the heads that matter most are {', '.join(named)}: switching one "
            f"of them off costs the translation that much log-probability. {harmless} of the "
            f"{len(run.drops)} heads change it by less than 0.05 nats.")


# --- the logit lens -------------------------------------------------------------------------------

@torch.no_grad()
def lens_numbers(model: Transformer, streams: list[torch.Tensor], predicted: torch.Tensor,
                 top_k: int = 5, final_norm: bool = True) -> dict[str, np.ndarray]:
    """The decoder's guess after each layer, per target position: top_ids and top_probs (N, T, k),
    and the rank (1 = most probable) and probability of the token finally written, rank and p
    (N, T).

    ``streams``: the residual stream after each layer, each (1, T, d_model). ``final_norm=False``
    skips a Pre-LN model's final LayerNorm (to show what it changes); a Post-LN model has none to
    skip."""
    probs = []
    for stream in streams:
        logits = lens_logits(model, stream) if final_norm else model.project(stream)  # (1, T, V)
        probs.append(torch.softmax(logits[0].float(), -1))  # (T, V)
    p = torch.stack(probs)  # (N, T, V)
    chosen = p.gather(-1, predicted.expand(p.size(0), -1)[..., None])  # (N, T, 1)
    top_probs, top_ids = p.topk(top_k, dim=-1)  # (N, T, k)
    return {"top_ids": top_ids.cpu().numpy(), "top_probs": top_probs.cpu().numpy(),
            "rank": 1 + (p > chosen).sum(-1).cpu().numpy(), "p": chosen[..., 0].cpu().numpy()}


@torch.no_grad()
def logit_lens(model: Transformer, src_ids: list[int], tgt_ids: list[int], top_k: int = 5,
               final_norm: bool = True) -> dict[str, np.ndarray]:
    """:func:`lens_numbers` for one sentence pair with every head on; also "probs" (N, T, V), the
    whole distributions (the last layer's is the model's output distribution)."""
    src, tgt, predicted = _pair(model, src_ids, tgt_ids)
    _, streams = forward_with_streams(model, src, tgt)
    out = lens_numbers(model, streams, predicted, top_k, final_norm)
    out["probs"] = torch.stack([
        torch.softmax((lens_logits(model, s) if final_norm else model.project(s))[0].float(), -1)
        for s in streams]).cpu().numpy()
    return out


LENS_NOTE = {
    False: "This model is **Post-LN** (the paper's): every layer ends in "
           "LayerNorm(x + Sublayer(x)), so the stream after each layer is already normalised like "
           "the last one, and the lens applies only the tied output projection and the softmax. "
           "The model has no final LayerNorm to borrow.",
    True: "This model is **Pre-LN**: the stream between layers is never normalised "
          "(x + Sublayer(LayerNorm(x))), and only the final LayerNorm makes the last layer's "
          "stream readable. The lens borrows that final LayerNorm for every layer; without it (the "
          "second view) early layers' guesses are distorted by the stream's growing scale.",
}


# --- attribution to the source tokens -------------------------------------------------------------

def source_embedding(model: Transformer, src_ids: list[int]) -> torch.Tensor:
    """e = E[x]·√d_model for the source, (S, d_model): what the attributions are computed for."""
    src = torch.tensor([src_ids], device=_device(model))  # (1, S)
    return model.src_embed(src)[0].detach()


def _embedding_hooks(embedding: torch.Tensor) -> Hooks:
    """Hooks that run the model on ``embedding`` (B, S, d_model) in place of E[x]·√d_model (the
    positional encoding is still added): vectors that belong to no token."""
    return Hooks({"src.embedding": lambda _, name: embedding})


def _gradients(model: Transformer, src_ids: list[int], tgt_ids: list[int], alphas,
               weights) -> tuple:
    """Σ_k w_k ∂f_t/∂e(α_k e) for every target position t, in ONE forward and backward pass over a
    batch of (steps × T) rows: row (k, t) runs the scaled embedding α_k e and keeps only its
    position t's f_t, so its gradient is that of f_t alone. -> gradients (T, S, d_model),
    e (S, d_model), f_t at the rows (K, T)."""
    e = source_embedding(model, src_ids)  # (S, d_model)
    T, K = len(tgt_ids), len(alphas)
    src, tgt, predicted = _pair(model, src_ids, tgt_ids, K * T)
    alpha = torch.as_tensor(alphas, dtype=e.dtype, device=e.device).repeat_interleave(T)  # (K·T,)
    scaled = (alpha[:, None, None] * e).requires_grad_(True)  # (K·T, S, d_model)
    with torch.enable_grad():
        logits = model(src, tgt, hooks=_embedding_hooks(scaled))  # (K·T, T, V)
        f = _token_logp(logits, predicted)  # (K·T, T)
        own = f.view(K, T, T).diagonal(dim1=1, dim2=2)  # (K, T): row (k, t)'s own position t
        w = torch.as_tensor(weights, dtype=own.dtype, device=own.device)[:, None]  # (K, 1)
        # autograd.grad, not backward: nothing is written to the shared model's parameters' .grad
        (grad,) = torch.autograd.grad((w * own).sum(), scaled)  # (K·T, S, d_model)
    return grad.view(K, T, *grad.shape[1:]).sum(0), e, own.detach()


def gradient_x_input(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> np.ndarray:
    """Σ_d e_sd ∂f_t/∂e_sd, per target position t and source token s: (T, S)."""
    grad, e, _ = _gradients(model, src_ids, tgt_ids, [1.0], [1.0])
    return (grad * e).sum(-1).float().cpu().numpy()


def integrated_gradients(model: Transformer, src_ids: list[int], tgt_ids: list[int],
                         steps: int = IG_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Integrated gradients from the baseline e' = 0, per target position and source token: (T, S),
    and f_t(e) − f_t(e') (T,), which each row sums to (completeness) up to the quadrature's
    error."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)  # on [−1, 1]; weights sum to 2
    grad, e, _ = _gradients(model, src_ids, tgt_ids, (nodes + 1) / 2, weights / 2)
    with torch.no_grad():
        src, tgt, predicted = _pair(model, src_ids, tgt_ids, 2)
        ends = torch.stack([torch.zeros_like(e), e])  # (2, S, d_model): baseline, input
        f = _token_logp(model(src, tgt, hooks=_embedding_hooks(ends)), predicted)  # (2, T)
    return (grad * e).sum(-1).float().cpu().numpy(), (f[1] - f[0]).float().cpu().numpy()


def integrated_gradients_at(model: Transformer, src_ids: list[int], tgt_ids: list[int], t: int,
                            steps: int = IG_STEPS) -> tuple[np.ndarray, float]:
    """Row t of :func:`integrated_gradients` alone: (S,) and f_t(e) − f_t(e'). A batch of ``steps``
    rows on the prefix position t reads (tgt_ids[:t + 1]) instead of steps × T rows of the whole
    translation: what one word needs (the page "Why this word?")."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)  # on [−1, 1]; weights sum to 2
    e = source_embedding(model, src_ids)  # (S, d_model)
    written = tgt_ids[1:] + [model.cfg.eos_id]  # what each position predicts
    predicted = torch.tensor(written[:t + 1], device=e.device)  # (t + 1,)
    src, tgt, _ = _pair(model, src_ids, tgt_ids[:t + 1], steps)
    alpha = torch.as_tensor((nodes + 1) / 2, dtype=e.dtype, device=e.device)[:, None, None]
    scaled = (alpha * e).requires_grad_(True)  # (K, S, d_model): one node per row
    with torch.enable_grad():
        f = _token_logp(model(src, tgt, hooks=_embedding_hooks(scaled)), predicted)[:, t]  # (K,)
        w = torch.as_tensor(weights / 2, dtype=f.dtype, device=f.device)  # (K,)
        # autograd.grad, not backward: nothing is written to the shared model's parameters' .grad
        (grad,) = torch.autograd.grad((w * f).sum(), scaled)  # (K, S, d_model)
    with torch.no_grad():
        ends = torch.stack([torch.zeros_like(e), e])  # (2, S, d_model): baseline, input
        f = _token_logp(model(src[:2], tgt[:2], hooks=_embedding_hooks(ends)), predicted)[:, t]
    return (grad.sum(0) * e).sum(-1).float().cpu().numpy(), float(f[1] - f[0])


# --- attention against attribution ----------------------------------------------------------------

def argmax_agreement(cross_weights: np.ndarray, attribution: np.ndarray) -> dict[str, np.ndarray]:
    """How often attention's most-attended source token is attribution's most-attributed one.

    cross_weights (N, h, T, S), one sentence's cross-attention; attribution (T, S). Returns per_head
    (N, h), the share of target positions where head (l, j)'s argmax equals the attribution's;
    per_layer (N,), its mean over heads; and mean_heads (N,), the same share for the attention
    averaged over the heads."""
    top = np.asarray(attribution).argmax(-1)  # (T,)
    weights = np.asarray(cross_weights)
    per_head = (weights.argmax(-1) == top).mean(-1)  # (N, h)
    mean_heads = (weights.mean(1).argmax(-1) == top).mean(-1)  # (N,)
    return {"per_head": per_head, "per_layer": per_head.mean(-1), "mean_heads": mean_heads}


# --- the coreference examples ---------------------------------------------------------------------

# The lecture's sentences (text/lecture_sentences.py) per source language: the pronoun and the nouns
# it may refer to, the right one first.
COREFERENCE = {
    "en": {"The animal didn't cross the street because it was too tired.":
            ("it", ("animal", "street")),
           "The animal didn't cross the street because it was too wide.":
            ("it", ("street", "animal")),
           "The kids were scared of the lions, so they left right away.":
            ("they", ("kids", "lions"))},
    "de": {"Das Tier überquerte die Straße nicht, weil es zu müde war.": ("es", ("Tier", "Straße")),
           "Das Tier überquerte die Straße nicht, weil sie zu breit war.":
            ("sie", ("Straße", "Tier")),
           "Die Kinder hatten Angst vor den Löwen, also gingen sie sofort.":
            ("sie", ("Kinder", "Löwen"))},
}
# what a translation's pronoun may be
PRONOUNS = {"de": ("es", "sie", "er"), "en": ("it", "they", "he", "she")}


def word_position(tokens: list[str], word: str, after: int = -1) -> int | None:
    """The position of the first token after ``after`` that starts ``word``: a word is a token with
    the word-start mark ▁ and the pieces that follow it ("▁li" "ons" "," = lions, punctuation
    aside), or None."""
    # <s>, </s> alone
    starts = [i for i, token in enumerate(tokens) if token.startswith(("▁", "<"))] + [len(tokens)]
    for start, end in pairwise(starts):
        if (start > after and "".join(tokens[start:end]).replace("▁", "").strip(".,;:!?").lower()
                == word.lower()):
            return start
    return None


def pronouns_in(translation: str, lang: str) -> list[str]:
    """The pronouns of PRONOUNS[lang] that a translation contains, in order."""
    words = [w.strip(".,;:!?\"'").lower() for w in translation.split()]
    return [w for w in words if w in PRONOUNS.get(lang, ())]


def pronoun_attention(enc_weights: np.ndarray, src_tokens: list[str], pronoun: str,
                      candidates: tuple[str, ...]) -> dict | None:
    """Encoder self-attention from the pronoun to each candidate noun, per layer and head.

    enc_weights (N, h, S, S). Returns {"weights": (len(candidates), N, h), "pronoun": its position,
    "positions": the candidates' positions, "best": (layer, head) linking the pronoun most to the
    first (right) candidate, ahead of the others}; None when a word is not a single token of the
    source."""
    candidate_positions = [word_position(src_tokens, word) for word in candidates]
    where = word_position(src_tokens, pronoun,
                          max((p for p in candidate_positions if p is not None), default=-1))
    if where is None or None in candidate_positions:
        return None
    weights = np.asarray(enc_weights)[:, :, where, candidate_positions]  # (N, h, C)
    weights = np.moveaxis(weights, -1, 0)  # (C, N, h)
    # (N, h): the right noun's lead over the best wrong one
    margin = weights[0] - weights[1:].max(0)
    best = np.unravel_index(int(margin.argmax()), margin.shape)
    return {"weights": weights, "pronoun": where, "positions": candidate_positions,
            "best": (int(best[0]), int(best[1]))}


# --- one sentence, everything: what the page's table and ``explain`` print ------------------------

def translation_with_heads_off(ckpt, src_ids: list[int], heads_off) -> tuple[list[int], str]:
    """The greedy translation of a checkpoint (model, tokenizer, generation settings) with
    ``heads_off`` off: its IDs and its text, decoded with the same length cap and forbidden tokens
    as engine.run_sentence."""
    ids = translate_with_heads(ckpt.model, src_ids, heads_off,
                               max_output_length(ckpt.config, len(src_ids)),
                               ckpt.generation.suppress_ids)
    return ids, decode(ckpt.tokenizer, ids)


def explanation_rows(run, lens: dict, ig: np.ndarray, gxi: np.ndarray) -> list[dict]:
    """Per target token of a sentence run (engine.SentenceRun, traced): the token written, its
    probability, the most-attended source token per decoder layer (cross-attention averaged over the
    heads), the most-attributed source token by integrated gradients and by gradient × input, and
    the logit-lens rank of the token after each layer (1: already the top guess)."""
    cfg = run.config
    cross = np.stack([run.trace[f"decoder.{i}.cross_attn.weights"][0].numpy().mean(0)
                      for i in range(cfg.N)])  # (N, T, S): each layer's heads averaged
    probs = run.trace["probs"][0].numpy()  # (T, V)
    written = run.predicted_ids
    tokens = run.tgt_tokens[1:] + ["</s>"]
    return [{"position": t, "token": tokens[t], "p": round(float(probs[t, written[t]]), 6),
             "most_attended": [run.src_tokens[int(s)] for s in cross[:, t].argmax(-1)],
             "most_attributed_ig": run.src_tokens[int(ig[t].argmax())],
             "most_attributed_gxi": run.src_tokens[int(gxi[t].argmax())],
             "lens_rank": [int(r) for r in lens["rank"][:, t]]} for t in range(len(written))]
