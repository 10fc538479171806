"""--rollback-above: a copy of the weights and Adam's state at the lowest Multi30k val loss so
far, put back when an evaluation climbs too far above it. A run that diverges (dropout 0.3 from
scratch did on the GPU, on 2026-11-28) would otherwise spend the rest of its budget, and of a GPU
session, on nothing."""

from __future__ import annotations

import copy

from torch import nn
from torch.optim import Optimizer


class Lowest:
    """The evaluation with the lowest val loss so far: its step, its loss, and copies of the
    weights and of the optimiser's state (on the training device: 0.54 GiB for the base model)."""

    def __init__(self, above: float) -> None:
        self.above = above
        self.kept: dict | None = None

    def roll_back(self, model: nn.Module, optimizer: Optimizer, step: int,
                  val_loss: float) -> dict | None:
        """After an evaluation: keep the weights if ``val_loss`` is the lowest yet; put the kept
        ones back if it is above the lowest by more than ``above``. Returns the kept evaluation
        ({"step", "val_loss"}) when it rolled back, else None."""
        from transformer_viz.checkpoints import unique_state_dict

        kept = self.kept
        if kept is None or val_loss < kept["val_loss"]:
            weights = unique_state_dict(model)  # tied weights once, on their device
            self.kept = {"val_loss": val_loss, "step": step,
                         "model": {k: v.clone() for k, v in weights.items()},
                         "optimizer": copy.deepcopy(optimizer.state_dict())}
            return None
        if val_loss <= kept["val_loss"] + self.above:
            return None
        model.load_state_dict(kept["model"], strict=False)
        # a copy again: Adam adopts the tensors it is given and would update the kept ones
        optimizer.load_state_dict(copy.deepcopy(kept["optimizer"]))
        return {"step": kept["step"], "val_loss": kept["val_loss"]}
