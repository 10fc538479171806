"""Server time of a page's steps for inputs no cache has seen, with Streamlit's AppTest: shared by
the page-speed benchmarks (bench/rnn_page_speed.py, bench/vit_page_speed.py,
bench/detr_page_speed.py)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The project root, for the app's package: the page-speed scripts run from bench/.
sys.path.insert(0, str(ROOT))


def time_new_inputs(at, page: str, step_key: str, set_input, per_step: int) -> dict:
    """Open ``page`` in the AppTest ``at``; then, step by step (the tabs of app.steps.tabs, chosen
    through ``step_key``), change the input with ``set_input(at, k)`` (k = 0, 1, …, never the same
    twice) and time the rerun. Returns the first open's seconds and, per step, the median and the
    largest rerun in ms."""
    at.switch_page(page)
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    results, used = {}, 0
    for label in [tab.label for tab in at.tabs]:
        at.session_state[step_key] = label
        at.run()  # this step's figures for the current input
        times = []
        for _ in range(per_step):
            set_input(at, used)
            used += 1
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
            if at.exception:
                raise SystemExit(at.exception[0].value)
        results[label] = {"median_ms": round(1000 * statistics.median(times)),
                          "max_ms": round(1000 * max(times))}
    return {"first_open_s": round(first, 2), "per_step": results}


def main(doc: str, page: str, step_key: str, count_flag: str, count_default: int, set_input,
         query: dict | None = None) -> None:
    """A page-speed benchmark's command line: ``--checkpoints DIR`` and ``--COUNT_FLAG n`` (new
    inputs per step); opens the app in AppTest (with ``query`` in its URL), times ``page`` and
    prints the result as JSON."""
    import argparse
    import json
    import os

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument(f"--{count_flag}", dest="count", type=int, default=count_default,
                        help=f"new {count_flag} timed per step")
    args = parser.parse_args()
    os.environ["TRANSFORMER_VIZ_CHECKPOINTS"] = str(args.checkpoints)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    timed = time_new_inputs(at, page, step_key, set_input, args.count)
    print(json.dumps({"first_open_s": timed["first_open_s"], "new_inputs": count_flag,
                      "per_step": timed["per_step"]}, indent=1, ensure_ascii=False))
