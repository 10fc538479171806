"""What every sequence-to-sequence trainer shares (the Transformer's, training.translation, and the
RNN's, training.rnn): one or several processes, resumable state as safetensors + JSON (no pickle),
mixed precision, and the validation scores that choose between epochs."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transformer_viz.checkpoints import state_dict_for_saving
from transformer_viz.models.losses import label_smoothed_loss
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.corpora import Batch

STATE_TENSORS, STATE_JSON = "train_state.safetensors", "train_state.json"


class Distributed:
    """Process group details when launched by torchrun; a single process otherwise."""

    def __init__(self) -> None:
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.enabled = self.world > 1
        if self.enabled and not torch.distributed.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            torch.distributed.init_process_group(backend)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            torch.distributed.barrier()

    def all_sum(self, *values: float) -> list[float]:
        if not self.enabled:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64)
        torch.distributed.all_reduce(t)
        return t.tolist()

    def close(self) -> None:
        if self.enabled and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def save_train_state(run_dir: Path, model: Transformer,
                     optimizer: torch.optim.Optimizer, info: dict) -> None:
    from safetensors.torch import save_file

    tensors = {f"model.{k}": v for k, v in state_dict_for_saving(model).items()}
    opt_state = optimizer.state_dict()
    for idx, state in opt_state["state"].items():
        for key, value in state.items():
            tensors[f"opt.{idx}.{key}"] = (value.detach().cpu().contiguous()
                                           if torch.is_tensor(value) else torch.tensor(value))
    tensors["rng.torch"] = torch.get_rng_state()
    tmp = run_dir / (STATE_TENSORS + ".tmp")
    save_file(tensors, str(tmp))
    (run_dir / (STATE_JSON + ".tmp")).write_text(json.dumps(info, indent=1))
    # Rename last, so an interrupted save leaves the previous complete state in place.
    os.replace(tmp, run_dir / STATE_TENSORS)
    os.replace(run_dir / (STATE_JSON + ".tmp"), run_dir / STATE_JSON)


def load_train_state(run_dir: Path, model: Transformer,
                     optimizer: torch.optim.Optimizer) -> dict | None:
    from safetensors.torch import load_file

    if not (run_dir / STATE_TENSORS).is_file():
        return None
    tensors = load_file(str(run_dir / STATE_TENSORS))
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")},
                          strict=False)
    opt_state = optimizer.state_dict()
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("opt."):
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value
    opt_state["state"] = state
    optimizer.load_state_dict(opt_state)
    torch.set_rng_state(tensors["rng.torch"])
    return json.loads((run_dir / STATE_JSON).read_text())


def autocast(device: torch.device, amp: str):
    if amp == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if amp == "auto" and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()  # float32: nothing to switch (and any device type will do)


def attention_kernel(device: torch.device):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # On the CPU, for sentence-length sequences, the plain math kernel trains up to twice as fast as
    # the fused flash kernel (whose backward is slow in bfloat16); on CUDA let PyTorch choose.
    if device.type == "cpu":
        return sdpa_kernel([SDPBackend.MATH])
    return contextlib.nullcontext()


def set_dropout(model: torch.nn.Module, p: float) -> None:
    """Every ``nn.Dropout`` of ``model`` at rate ``p`` from now on (the Transformer's: on the
    embeddings and on every sublayer's output; its attention dropout, a config field of its own,
    stays)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = p


@torch.no_grad()
def validation_loss(model: Transformer, batches: list[Batch], device, smoothing: float) -> float:
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        batch = batch.to(device)
        logits = model(batch.src, batch.tgt_in)
        total += label_smoothed_loss(logits, batch.tgt_out, smoothing, model.cfg.pad_id,
                                     reduction="sum").item()
        count += batch.n_tokens
    model.train()
    return total / max(count, 1)


def average_weights(paths: list[Path]) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    avg: dict[str, torch.Tensor] = {}
    for path in paths:
        for k, v in load_file(str(path)).items():
            avg[k] = avg.get(k, 0) + v.double() / len(paths)
    return {k: v.float() for k, v in avg.items()}


@dataclass
class TrainState:
    """What a run has done so far; saved as JSON after every epoch (and every few minutes within
    one) so that a restart resumes here."""

    step: int = 0
    epoch: int = 0
    history: list[dict] = field(default_factory=list)
    best_bleu: float = -1.0  # the selection score: validation BLEU (mean over the validation sets)
    best_epoch: int = 0
    elapsed_s: float = 0.0
    # the step at which training went on from an exported checkpoint (-1: never)
    restart_step: int = -1
    # Saved in the middle of an epoch: its batches already trained, and their loss and tokens and
    # seconds, so that a restart goes on with the next batch and the epoch's record counts all of
    # them.
    batches_done: int = 0
    epoch_loss: float = 0.0
    epoch_tokens: int = 0
    epoch_s: float = 0.0

    @classmethod
    def from_dict(cls, info: dict | None) -> "TrainState":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in (info or {}).items() if k in known})


def validation_bleu(model, tokenizer,
                    validation: dict[str, list[tuple[str, str]]], limit: int) -> dict[str, float]:
    """Greedy BLEU on each validation set (its first ``limit`` pairs when limit > 0)."""
    from transformer_viz.generation.evaluation import score, translate_texts

    out = {}
    for name, val_pairs in validation.items():
        chosen = val_pairs[: limit or None]
        hyps = translate_texts(model, tokenizer, [s for s, _ in chosen])  # greedy
        out[name] = score(hyps, [t for _, t in chosen]).bleu
    return out
