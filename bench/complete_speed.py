"""How fast does the "Complete the sentence" page rerun for a new prompt? Server-side rerun time in
Streamlit's AppTest (in this process), with the models loaded: the page runs once per prompt to warm
up, then each timed rerun types a prompt not seen before (nothing cached), so it costs the
completion (greedy, 12 new tokens, the page's default length), the traced forward pass and the open
step's figure. The median is reported, and the library call alone (engine.run_prompt) for
comparison. Target: <= 300 ms median.

    .venv/bin/python bench/complete_speed.py                         # checkpoints/ of the project
    .venv/bin/python bench/complete_speed.py --checkpoints DIR --prompts 15 --json out.json

Only public means: time.perf_counter around AppTest.run() and around the library call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_MS = 300
STARTS = ["Where there is a will, there", "A man in a red", "Two dogs are", "The children play",
          "She said that", "A woman with a", "I think that the", "A group of people",
          "The weather is", "My brother and I", "A young boy is", "We should go to",
          "There is a cat", "The man on the", "Tom wants to", "A girl in a blue",
          "People are walking", "It is too late", "The old car", "Please tell me"]


def timed_reruns(checkpoints: Path, n: int, step: int) -> list[float]:
    from streamlit.testing.v1 import AppTest

    os.environ["TRANSFORMER_VIZ_CHECKPOINTS"] = str(checkpoints)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"T": "0", "n": "12"})
    at.run()
    at.switch_page("transformer_viz/app/pages/complete.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if step:
        at.session_state["complete_step"] = at.tabs[step].label
        at.run()
    times = []
    for k in range(n):
        at.text_input(key="complete_prompt").set_value(
            f"{STARTS[k % len(STARTS)]} {'and ' * (k // len(STARTS))}")
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]
    return times


def library_times(checkpoint: Path, n: int) -> list[float]:
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.engine import run_prompt
    from transformer_viz.generation.completion import SamplingSettings

    ckpt = load_checkpoint(checkpoint)
    run_prompt(ckpt, "warm up", SamplingSettings(0.0, max_new_tokens=12))
    times = []
    for k in range(n):
        start = time.perf_counter()
        run_prompt(ckpt, STARTS[k % len(STARTS)], SamplingSettings(0.0, max_new_tokens=12))
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--model", default="gpt-en",
                        help="the decoder-only checkpoint's directory name")
    parser.add_argument("--prompts", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    lib = library_times(args.checkpoints / args.model, args.prompts)
    out = {"library_ms": 1000 * statistics.median(lib)}
    for step, name in ((0, "temperature"), (2, "attention")):
        out[f"rerun_ms_{name}"] = 1000 * statistics.median(
            timed_reruns(args.checkpoints, args.prompts, step))
    for key, value in out.items():
        print(f"{key:24s} median {value:7.1f} ms"
              + (f"  (target <= {TARGET_MS} ms)" if key.startswith("rerun") else ""))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if all(v <= TARGET_MS for k, v in out.items() if k.startswith("rerun")) else 1


if __name__ == "__main__":
    sys.exit(main())
