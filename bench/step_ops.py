"""What one update of the GPU run's loop asks of PyTorch, counted on the CPU: the operators it
dispatches (on a GPU each costs the host a few microseconds, and the base model's update is
bound by them) and the reads of a tensor's value back to the host (aten._local_scalar_dense:
.item(), float(), bool()) with the function that made each (on a GPU a read of a device tensor
makes the host wait for the device), then the optimizer's step alone, fused (gpu_run's Adam) and
multi-tensor (PyTorch's default on CUDA).

    .venv/bin/python bench/step_ops.py --data gpu-data
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformer_viz.text.corpora import token_batches  # noqa: E402
from transformer_viz.training.gpu_run import GpuRunConfig  # noqa: E402
from transformer_viz.training.gpu_run.train import BudgetedRun  # noqa: E402
from transformer_viz.training.translation import run_epoch  # noqa: E402

READ = "aten._local_scalar_dense"


class Counted(TorchDispatchMode):
    """Counts the operators that reach the kernels (below autograd: the backward's too), and
    which of the project's functions made each read."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter = collections.Counter()
        self.readers: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket)] += 1
        if str(func.overloadpacket) == READ:
            ours = [f for f in traceback.extract_stack() if "transformer_viz" in f.filename]
            self.readers[ours[-1].name if ours else "the optimizer"] += 1
        return func(*args, **(kwargs or {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="gpu-data", help="a folder written by gpu_run prepare")
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch-tokens", type=int, default=2000,
                        help="the counts do not depend on it; the time does")
    args = parser.parse_args()
    rc = GpuRunConfig(preset=args.preset, batch_tokens=args.batch_tokens, eval_every=0)
    run = BudgetedRun(rc, args.data, log=lambda *_: None)
    batches = token_batches(run.examples, rc.batch_tokens, shuffle=True, seed=1)
    run.model.train()

    def update(k: int) -> None:
        run_epoch(run.model, run.model, run.optimizer, run.scaler, batches[k:k + 1], run.examples,
                  run.tc, run.state, run.device, False, 1, after_step=run.after_step)

    update(0)  # the first update creates Adam's state
    with Counted() as counted:
        update(1)
    ops = counted.ops
    print(f"{args.preset}, one update of the loop ({rc.amp} autocast): {sum(ops.values()):,} "
          f"operators, {ops[READ]} reads back to the host ("
          + ", ".join(f"{name} {n}" for name, n in counted.readers.most_common()) + ")")
    for kind, flags in (("fused", {"fused": True}), ("multi-tensor", {"foreach": True})):
        optimizer = torch.optim.Adam(run.model.parameters(), lr=1e-6, betas=(0.9, 0.98),
                                     eps=1e-9, **flags)
        optimizer.step()  # its state
        with Counted() as counted:
            optimizer.step()
        print(f"  Adam {kind}: {sum(counted.ops.values()):,} operators, {counted.ops[READ]} reads "
              f"back to the host")


if __name__ == "__main__":
    main()
