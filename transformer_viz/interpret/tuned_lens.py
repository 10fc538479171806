"""The tuned lens (Belrose et al., 2023): one affine map per decoder layer, trained so that the map
of a layer's stream, read through the model's own last steps, predicts the model's final
distribution. The plain logit lens assumes every layer's stream already speaks the output layer's
language; the tuned lens learns the translation, so its reading of early layers is less distorted.

    lens_l(h) = softmax(out(A_l h + b_l)),  trained to minimise KL(p_final ‖ lens_l(h_l))

A_l starts as the identity and b_l at zero, so an untrained tuned lens is the plain lens. The last
layer needs none (its stream is the output's). The maps are trained on teacher-forced training
pairs (never the test sets) and shipped beside the checkpoint as tuned_lens.safetensors with
tuned_lens.json (the per-layer KL on held-out pairs before and after).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import torch
from torch import nn

from transformer_viz.interpret.lens import forward_with_streams, lens_logits
from transformer_viz.models.transformer.model import Transformer

WEIGHTS, REPORT = "tuned_lens.safetensors", "tuned_lens.json"


class TunedLens(nn.Module):
    """An affine map per decoder layer but the last, each starting as the identity."""

    def __init__(self, d_model: int, N: int) -> None:
        super().__init__()
        self.maps = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(N - 1))
        with torch.no_grad():
            for m in self.maps:
                m.weight.copy_(torch.eye(d_model))
                m.bias.zero_()

    def forward(self, stream: torch.Tensor, layer: int) -> torch.Tensor:
        """A layer's stream (B, T, d_model), translated (the last layer's as it is)."""
        return self.maps[layer](stream) if layer < len(self.maps) else stream


def _batches(examples: list[tuple[list[int], list[int]]], size: int, cfg, seed: int):
    from transformer_viz.text.corpora import make_batch

    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    for start in range(0, len(order), size):
        yield make_batch([examples[i] for i in order[start:start + size]], cfg.pad_id, cfg.bos_id,
                         cfg.eos_id)


def layer_kl(model: Transformer, lens: TunedLens | None, batch) -> tuple[torch.Tensor, int]:
    """Summed KL(p_final ‖ lens_l) per layer (N,) over the batch's real target positions, and their
    number; ``lens`` None is the plain logit lens."""
    with torch.no_grad():
        logits, streams = forward_with_streams(model, batch.src, batch.tgt_in)
        final = torch.log_softmax(logits.float(), -1)  # (B, T, V)
    real = batch.tgt_out != model.cfg.pad_id  # (B, T)
    kls = []
    for layer, stream in enumerate(streams):
        h = stream if lens is None else lens(stream, layer)
        logp = torch.log_softmax(lens_logits(model, h).float(), -1)  # (B, T, V)
        kl = (final.exp() * (final - logp)).sum(-1)  # (B, T)
        kls.append(kl[real].sum())
    return torch.stack(kls), int(real.sum())


def mean_kl(model: Transformer, lens: TunedLens | None, examples,
            batch_size: int = 32) -> list[float]:
    """Mean KL per layer over ``examples`` (source IDs, target IDs) pairs, in nats."""
    total, count = torch.zeros(model.cfg.N), 0
    for batch in _batches(examples, batch_size, model.cfg, seed=0):
        with torch.no_grad():
            kl, n = layer_kl(model, lens, batch)
        total, count = total + kl, count + n
    return (total / max(count, 1)).tolist()


def train_tuned_lens(model: Transformer, examples, steps: int = 300, batch_size: int = 32,
                     lr: float = 1e-3, seed: int = 0, log=print) -> TunedLens:
    """Fit the maps on ``examples`` (training pairs as IDs); the model itself is not changed."""
    torch.manual_seed(seed)
    lens = TunedLens(model.cfg.d_model, model.cfg.N)
    optimizer = torch.optim.Adam(lens.parameters(), lr=lr)
    step = 0
    while step < steps:
        for batch in _batches(examples, batch_size, model.cfg, seed + step):
            kl, n = layer_kl(model, lens, batch)
            loss = kl[:-1].sum() / max(n, 1)  # the last layer has no map
            optimizer.zero_grad(set_to_none=True)
            loss.backward(inputs=list(lens.parameters()))  # nothing into the shared model's .grad
            optimizer.step()
            step += 1
            if step % 50 == 0:
                log(f"step {step}: KL per position, summed over layers {float(loss.detach()):.4f}")
            if step >= steps:
                break
    return lens.eval()


def save_tuned_lens(lens: TunedLens, directory: str | Path, report: dict) -> None:
    from safetensors.torch import save_file

    directory = Path(directory)
    save_file({k: v.contiguous() for k, v in lens.state_dict().items()}, str(directory / WEIGHTS))
    (directory / REPORT).write_text(json.dumps(report, indent=1) + "\n")


def load_tuned_lens(directory: str | Path, cfg) -> TunedLens | None:
    """A checkpoint's tuned lens, or None where it ships none."""
    from safetensors.torch import load_file

    path = Path(directory) / WEIGHTS
    if not path.is_file():
        return None
    lens = TunedLens(cfg.d_model, cfg.N)
    lens.load_state_dict({k: v.float() for k, v in load_file(str(path)).items()})
    return lens.eval()


@torch.no_grad()
def sentence_lens(model: Transformer, lens: TunedLens | None, src_ids: list[int],
                  tgt_ids: list[int], top_k: int = 5) -> dict:
    """One sentence pair read through ``lens`` (None: the plain logit lens): explain.lens_numbers
    of every layer's stream (top_ids, top_probs, rank, p), and "kl" (N,), each layer's mean
    KL(p_final ‖ lens_l) over the sentence's target positions, in nats (layer_kl's numbers)."""
    from transformer_viz.interpret.explain import lens_numbers
    from transformer_viz.text.corpora import make_batch

    cfg = model.cfg
    batch = make_batch([(list(src_ids), list(tgt_ids[1:]))], cfg.pad_id, cfg.bos_id, cfg.eos_id)
    batch = batch.to(next(model.parameters()).device)
    _, streams = forward_with_streams(model, batch.src, batch.tgt_in)
    if lens is not None:
        streams = [lens(stream, layer) for layer, stream in enumerate(streams)]
    out = lens_numbers(model, streams, batch.tgt_out[0], top_k)
    kl, n = layer_kl(model, lens, batch)
    out["kl"] = (kl / max(n, 1)).cpu().numpy()
    return out
