"""Server time of a page's steps for inputs no cache has seen, with Streamlit's AppTest: shared by the
page-speed benchmarks (bench/rnn_page_speed.py, bench/vit_page_speed.py)."""

from __future__ import annotations

import statistics
import time


def time_new_inputs(at, page: str, step_key: str, set_input, per_step: int) -> dict:
    """Open ``page`` in the AppTest ``at``; then, step by step (the tabs of webapp.steps, chosen through
    ``step_key``), change the input with ``set_input(at, k)`` (k = 0, 1, …, never the same twice) and time
    the rerun. Returns the first open's seconds and, per step, the median and the largest rerun in ms."""
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
        results[label] = {"median_ms": round(1000 * statistics.median(times)), "max_ms": round(1000 * max(times))}
    return {"first_open_s": round(first, 2), "per_step": results}
