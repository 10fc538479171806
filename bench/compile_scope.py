"""How long the GPU run's --compile takes at each --compile-scope, and what an update costs after
it, on this machine: the base model, en-de, the prepared data's batches, bf16 autocast, as
``gpu_run train --compile`` runs them. Each scope runs in a process of its own with an empty
inductor cache (as on a fresh GPU machine), after an uncompiled baseline.

    .venv/bin/python bench/compile_scope.py --data gpu-data [--updates 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _one(scope: str, data: str, updates: int, threads: int) -> dict:
    """In this process: compile at ``scope`` ("eager": not at all), then time ``updates``
    updates of the run's own loop."""
    import torch

    from transformer_viz.text.corpora import token_batches
    from transformer_viz.training.gpu_run import GpuRunConfig
    from transformer_viz.training.gpu_run.train import BudgetedRun
    from transformer_viz.training.translation import run_epoch

    rc = GpuRunConfig(direction="en-de", preset="base", batch_tokens=2048, threads=threads,
                      compile=scope != "eager", eval_every=0)
    if scope != "eager":
        rc = replace(rc, compile_scope=scope)
    run = BudgetedRun(rc, data, log=lambda _: None)
    run.model.train()
    t_start = time.perf_counter()
    forward = run.compiled() if rc.compile else run.model
    compile_s = time.perf_counter() - t_start
    batches = token_batches(run.examples, rc.batch_tokens, shuffle=True, seed=7)[:updates + 1]
    run_epoch(run.model, forward, run.optimizer, run.scaler, batches[:1], run.examples, run.tc,
              run.state, run.device, False, 1)  # the first update allocates Adam's moments
    t_start = time.perf_counter()
    run_epoch(run.model, forward, run.optimizer, run.scaler, batches[1:], run.examples, run.tc,
              run.state, run.device, False, 1)
    per_update = (time.perf_counter() - t_start) / updates
    return {"scope": scope, "compile_s": round(compile_s, 1),
            "update_s": round(per_update, 3), "compiled": run.compile_record.get("compiled"),
            "torch": torch.__version__}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="gpu-data")
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--one", help=argparse.SUPPRESS)  # the child process's scope
    args = p.parse_args()
    if args.one:
        print(json.dumps(_one(args.one, args.data, args.updates, args.threads)))
        return 0
    for scope in ("eager", "layers", "model"):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            done = subprocess.run([sys.executable, __file__, "--data", args.data, "--updates",
                                   str(args.updates), "--threads", str(args.threads), "--one",
                                   scope], env=env, capture_output=True, text=True)
        if done.returncode:
            print(f"{scope}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            return 1
        print(done.stdout.strip().splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
