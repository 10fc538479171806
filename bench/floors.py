"""What Streamlit and plotly.js cost on this machine before any of the app's own work: the floors under the
browser targets of bench/app_speed.py and bench/lecture_speed.py.

(1) cold start: from launching `streamlit run` (Chromium already running) to the page drawn, for the
    yardstick page (bench/baseline_app.py: a text area, a title, a line of text), the same page with one
    small plotly chart (``-- --chart``: the browser loads plotly.js as the app's first page does) and the
    app (its first page with its chart, the trained checkpoints of checkpoints/), in turn, --rounds times.
(2) browser CPU per rerun of the yardstick page: a new sentence typed in its text area, until the page shows
    it, then 300 ms for the last layout pass, as app_speed.py's part (d) waits; CPU seconds of all Chromium
    processes (/proc/<pid>/stat), --reruns times, median.

    .venv/bin/python bench/floors.py                 # 3 rounds, 12 reruns
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


def cold_start(browser, script: tuple[str, tuple[str, ...]], timeout_s: float) -> float:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_RUNS_JS)
    page = context.new_page()
    t0 = time.perf_counter()
    proc, url, _ = start_server(ROOT / "checkpoints", timeout_s=timeout_s, script=script[0], script_args=script[1])
    try:
        page.goto(url)
        wait_for_run(page, 0, timeout_s, title=TITLE)
        return time.perf_counter() - t0
    finally:
        stop_server(proc)
        context.close()


def rerun_cpu(browser, reruns: int, timeout_s: float) -> list[float]:
    script, script_args = SCRIPTS["yardstick page"]
    proc, url, _ = start_server(None, timeout_s=timeout_s, script=script, script_args=script_args)
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(COUNT_RUNS_JS)
        page = context.new_page()
        page.goto(url)
        wait_for_run(page, 0, timeout_s, title=TITLE)
        area = page.get_by_label(re.compile(r"^Sentence")).first
        out = []
        for n in range(2 + reruns):  # the first two warm the page's code paths
            before, c0 = page.evaluate("window.__stRuns"), cpu_seconds(chromium_pids())
            text = f"Ein Satz mit der Nummer {n} ."
            area.fill(text)
            area.press("Control+Enter")
            wait_for_run(page, before, timeout_s, sentence=text)
            page.wait_for_timeout(300)
            if n >= 2:
                out.append(cpu_seconds(chromium_pids()) - c0)
        context.close()
        return out
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="cold starts of each script, taken in turn")
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
            cpu = rerun_cpu(browser, args.reruns, args.timeout)
        finally:
            browser.close()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("(1) cold start, launch -> page drawn: median (all)")
    for name, times in cold.items():
        print(f"    {name:36s} {statistics.median(times):5.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    print(f"(2) browser CPU per rerun of the yardstick page: median {statistics.median(cpu):.3f} s "
          f"(min {min(cpu):.3f}, max {max(cpu):.3f}, {len(cpu)} reruns)")
    if args.json:
        args.json.write_text(json.dumps({"cold_start_s": cold, "yardstick_rerun_browser_cpu_s": cpu}, indent=1))


if __name__ == "__main__":
    main()
