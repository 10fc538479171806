"""How fast are the patching grids? The median time of ``interpret.patching.patch_grids`` \
(every patch
of the four grids: encoder layer × source position, encoder layer, decoder layer × target position,
every head) for each preset, on its shipped checkpoint, one torch thread as the app runs it; the
translations and tokens are computed once, outside the timing. Also the CPU time of the calling
thread, which a loaded machine disturbs less than the wall clock. Target: <= 300 ms a preset.

    .venv/bin/python bench/patch_speed.py [--repeats 9] [--preset "she / he"]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.interpret import patching as P  # noqa: E402

TARGET_MS = 300


def time_preset(preset: P.Preset, repeats: int) -> tuple[float, float, int]:
    """Median wall and thread-CPU milliseconds of the grids, and the number of patched rows."""
    ckpt = load_checkpoint(ROOT / "checkpoints" / preset.checkpoint)
    p = P.patch_sentences(ckpt, preset.clean, preset.corrupted)
    src = ckpt.tokenizer.convert_tokens_to_ids(p.src_tokens)
    bad = ckpt.tokenizer.convert_tokens_to_ids(p.corrupted_tokens)
    tgt = ckpt.tokenizer.convert_tokens_to_ids(p.tgt_tokens)
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.thread_time()
        P.patch_grids(ckpt.model, src, bad, tgt, p.position, p.clean_id, p.corrupted_id)
        walls.append(1000 * (time.perf_counter() - wall))
        cpus.append(1000 * (time.thread_time() - cpu))
    return statistics.median(walls), statistics.median(cpus), len(P.grid_rows(ckpt.config, len(src),
                                                                                len(tgt)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--preset", default=None, help="one preset's name (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'preset':<20} {'rows':>5} {'wall ms':>9} {'cpu ms':>8}  target <= {TARGET_MS} ms")
    for preset in P.PRESETS:
        if args.preset not in (None, preset.name):
            continue
        wall, cpu, rows = time_preset(preset, args.repeats)
        print(f"{preset.name:<20} {rows:>5} {wall:>9.0f} {cpu:>8.0f}")


if __name__ == "__main__":
    main()
