"""What Streamlit and plotly.js cost on this machine before any of the app's own work: the floors
under the browser targets of bench/app_speed.py and bench/lecture_speed.py.

(1) cold start: from launching `streamlit run` (Chromium already running) to the page drawn, for the
    yardstick page (bench/baseline_app.py: a text area, a title, a line of text), the same page with
    one small plotly chart (``-- --chart``: the browser loads plotly.js as the app's first page
    does) and the app (its first page with its chart, the trained checkpoints of checkpoints/), in
    turn, --rounds times.
(2) CPU per rerun of the yardstick page, without and with its chart (which then shows the sentence's
    words, a new figure per sentence): a new sentence typed in its text area, until the page shows
    it, then 300 ms for the last layout pass, as app_speed.py's part (d) waits; CPU seconds
    (/proc/<pid>/stat) of all Chromium processes and of the server, --reruns times, median and mean.
    The server's is the floor under the proxy benchmark's CPU per sentence, beside the model's own
    (bench/model_cost.py).

    .venv/bin/python bench/floors.py                 # 3 rounds, 12 reruns of each yardstick page
    .venv/bin/python bench/floors.py --rounds 5 --json floors.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project root
from bench.app_speed import chromium_pids, cpu_seconds, launch_browser, wait_for_run  # noqa: E402
from tests.support.browser import COUNT_RUNS_JS, ROOT, start_server, stop_server  # noqa: E402

TITLE = "Overview & translation"  # the app's first page; the yardstick page shows the same title
# name -> (script, its arguments)
SCRIPTS = {"yardstick page": ("bench/baseline_app.py", ()),
           "yardstick page + one plotly chart": ("bench/baseline_app.py", ("--chart",)),
           "the app (first page)": ("app.py", ())}
RERUN_PAGES = ("yardstick page", "yardstick page + one plotly chart")  # (2)


def cold_start(browser, script: tuple[str, tuple[str, ...]], timeout_s: float) -> float:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_RUNS_JS)
    page = context.new_page()
    t0 = time.perf_counter()
    proc, url, _ = start_server(ROOT / "checkpoints", timeout_s=timeout_s, script=script[0],
                                script_args=script[1])
    try:
        page.goto(url)
        wait_for_run(page, 0, timeout_s, title=TITLE)
        return time.perf_counter() - t0
    finally:
        stop_server(proc)
        context.close()


def rerun_cpu(browser, script: tuple[str, tuple[str, ...]], reruns: int,
              timeout_s: float) -> dict[str, list[float]]:
    """CPU seconds of Chromium and of the server per rerun of ``script`` (a yardstick page), each a
    list."""
    proc, url, _ = start_server(None, timeout_s=timeout_s, script=script[0], script_args=script[1])
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(COUNT_RUNS_JS)
        page = context.new_page()
        page.goto(url)
        wait_for_run(page, 0, timeout_s, title=TITLE)
        area = page.get_by_label(re.compile(r"^Sentence")).first
        out = {"browser": [], "server": []}
        for n in range(2 + reruns):  # the first two warm the page's code paths
            before = page.evaluate("window.__stRuns")
            c0, s0 = cpu_seconds(chromium_pids()), cpu_seconds([proc.pid])
            text = f"Ein Satz mit der Nummer {n} ."
            area.fill(text)
            area.press("Control+Enter")
            wait_for_run(page, before, timeout_s, sentence=text)
            page.wait_for_timeout(300)
            if n >= 2:
                out["browser"].append(cpu_seconds(chromium_pids()) - c0)
                out["server"].append(cpu_seconds([proc.pid]) - s0)
        context.close()
        return out
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3,
                        help="cold starts of each script, taken in turn")
    parser.add_argument("--reruns", type=int, default=12, help="timed reruns of the yardstick page")
    parser.add_argument("--timeout", type=float, default=120, help="bound on every wait in seconds")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    cold = {name: [] for name in SCRIPTS}
    with sync_playwright() as p:
        browser = launch_browser(p)
        try:
            for r in range(args.rounds):
                for name, script in SCRIPTS.items():
                    cold[name].append(cold_start(browser, script, args.timeout))
                    print(f"round {r + 1}: {name}: {cold[name][-1]:.2f} s", file=sys.stderr)
            cpu = {name: rerun_cpu(browser, SCRIPTS[name], args.reruns, args.timeout)
                   for name in RERUN_PAGES}
        finally:
            browser.close()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("(1) cold start, launch -> page drawn: median (all)")
    for name, times in cold.items():
        print(f"    {name:36s} {statistics.median(times):5.2f} s  "
              f"({', '.join(f'{t:.2f}' for t in times)})")
    # The clock ticks in 10 ms steps: the server's few ticks per rerun say more as a mean.
    print(f"(2) CPU seconds per rerun (a new sentence): median, mean "
          f"(min-max of {args.reruns} reruns)")
    for name, parts in cpu.items():
        print(f"    {name:36s} "
              + "  ".join(f"{who} {statistics.median(v):.3f}, {statistics.mean(v):.3f} "
                          f"({min(v):.3f}-{max(v):.3f})" for who, v in parts.items()))
    if args.json:
        args.json.write_text(json.dumps({"cold_start_s": cold, "rerun_cpu_s": cpu}, indent=1))


if __name__ == "__main__":
    main()
