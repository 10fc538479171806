"""How fast does the Lecture move from one step to the next? Two measurements, printed as tables:

(a) server   the time of the script run that a click on Next starts, with the model and the
             sentence's run already cached, measured in this process with
             streamlit.testing.v1.AppTest: the first walk through all steps (each step's figure
             built for the first time) and --passes more walks (every figure cached); median and
             max per walk. Target: median <= 300 ms per step after the first.
(b) browser  the real app (`streamlit run app.py`) in headless Chromium at 1280×720 in projector
             mode, walked with the ArrowRight key as a clicker sends it: per step, the time from the
             key to the step drawn, the server's script run (its own log, TRANSFORMER_VIZ_RUN_LOG)
             and the CPU seconds of the server and of Chromium (/proc/<pid>/stat).

    .venv/bin/python bench/lecture_speed.py                     # checkpoints/, en-de, "they"
    .venv/bin/python bench/lecture_speed.py --checkpoint de-en --sentence "Komm her bitte." \\
        --skip-browser

Both include the work of every element of the page (sidebar, navigation, text, figure, presets,
notes); (a) also AppTest's own overhead of building and walking the element tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project root
from bench.app_speed import chromium_pids, cpu_seconds, launch_browser  # noqa: E402
from tests.support.browser import (CHECKPOINTS_ENV, CHROMIUM, COUNT_RUNS_JS, ROOT, RUN_DONE_JS,  # noqa: E402
                                   start_server, stop_server)

TARGET_MS = 300
SENTENCE = "The kids were scared of the lions, so they left right away."
PAGE = "transformer_viz/app/pages/lecture.py"


def measure_server(checkpoints: Path, name: str, sentence: str, passes: int) -> dict:
    """(a): per walk through the steps, the seconds of each Next's script run (AppTest, this
    process)."""
    os.environ[CHECKPOINTS_ENV] = str(checkpoints)
    from streamlit.testing.v1 import AppTest

    from transformer_viz.views.lecture import STEPS

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params.update({"ckpt": name, "s": sentence, "projector": "1"})
    at.switch_page(PAGE)
    t = time.perf_counter()
    at.run()  # the model loads and the sentence runs: not a step change
    first_run_s = time.perf_counter() - t
    walks = []
    for walk in range(1 + passes):
        at.session_state["lecture_step"] = 1
        at.run()
        times = []
        for _ in range(len(STEPS) - 1):
            at.button(key="lecture_next").click()
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
            if at.exception:
                raise SystemExit(f"step {at.session_state['lecture_step']}: "
                                 f"{at.exception[0].value[:300]}")
        walks.append(times)
    return {"first_run_s": first_run_s, "walks": walks, "steps": [s.id for s in STEPS]}


def step_drawn(page, n: int, sentence: str, timeout_s: float) -> None:
    page.wait_for_function("(n) => new URLSearchParams(location.search).get('step') === String(n)",
                           arg=n, polling=20, timeout=timeout_s * 1000)
    page.wait_for_function(RUN_DONE_JS, arg={"after": 0, "sentence": sentence}, polling=20,
                           timeout=timeout_s * 1000)


def measure_browser(checkpoints: Path, name: str, sentence: str, timeout_s: float) -> dict:
    """(b): one fresh server, the lecture walked twice with ArrowRight (the first walk builds every
    figure)."""
    from playwright.sync_api import sync_playwright

    from transformer_viz.views.lecture import STEPS

    log = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    out = {"walks": []}
    with sync_playwright() as p:
        browser = launch_browser(p)
        proc, url, _ = start_server(checkpoints, env={"TRANSFORMER_VIZ_RUN_LOG": str(log)},
                                    timeout_s=timeout_s)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            context.add_init_script(COUNT_RUNS_JS)
            page = context.new_page()
            page.set_default_timeout(timeout_s * 1000)
            query = {"ckpt": name, "s": sentence, "projector": "1", "step": "1"}
            for walk in range(2):
                page.goto(f"{url}/lecture?" + urllib.parse.urlencode(query))
                step_drawn(page, 1, sentence, timeout_s)
                rows = []
                for n in range(2, len(STEPS) + 1):
                    lines = len(log.read_text().splitlines())
                    b0, s0 = cpu_seconds(chromium_pids()), cpu_seconds([proc.pid])
                    t = time.perf_counter()
                    page.keyboard.press("ArrowRight")
                    step_drawn(page, n, sentence, timeout_s)
                    wall = time.perf_counter() - t
                    # plotly's last layout pass, and the log line of the run
                    page.wait_for_timeout(300)
                    runs = [json.loads(x) for x in log.read_text().splitlines()[lines:]]
                    rows.append({"step": n, "id": STEPS[n - 1].id, "wall_s": wall,
                                 "server_run_s": sum(r["seconds"] for r in runs
                                                     if r["page"] == "Lecture"),
                                 "server_cpu_s": cpu_seconds([proc.pid]) - s0,
                                 "browser_cpu_s": cpu_seconds(chromium_pids()) - b0})
                out["walks"].append(rows)
            context.close()
        finally:
            stop_server(proc)
            browser.close()
            log.unlink(missing_ok=True)
    return out


def median_ms(values) -> str:
    return f"{1000 * statistics.median(values):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--checkpoint", default="en-de", help="checkpoint name (default en-de)")
    parser.add_argument("--sentence", default=SENTENCE)
    parser.add_argument("--passes", type=int, default=3, help="(a): walks with every figure cached")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    checkpoints = args.checkpoints.resolve()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    server = measure_server(checkpoints, args.checkpoint, args.sentence, args.passes)
    print(f"(a) server, AppTest: {args.checkpoint}, {args.sentence!r}; "
          f"first run (model + sentence) {server['first_run_s']:.1f} s; "
          f"one Next's script run, per walk of {len(server['steps']) - 1} steps "
          f"(target: median <= {TARGET_MS} ms)")
    for k, walk in enumerate(server["walks"]):
        what = "first walk (figures built)" if k == 0 else f"walk {k + 1} (figures cached)"
        print(f"    {what:<28} median {median_ms(walk):>5} ms   max {1000 * max(walk):>5.0f} ms "
              f"({server['steps'][1 + walk.index(max(walk))]})")
    result = {"server": server}
    if not args.skip_browser and Path(CHROMIUM).exists():
        browser = measure_browser(checkpoints, args.checkpoint, args.sentence, args.timeout)
        result["browser"] = browser
        print("(b) Chromium at 1280×720, projector mode, ArrowRight per step: "
              "medians over the steps")
        for k, rows in enumerate(browser["walks"]):
            what = "first walk (figures built)" if k == 0 else "second walk (figures cached)"
            print(f"    {what:<28} key→drawn {median_ms([r['wall_s'] for r in rows]):>5} ms   "
                  f"server run {median_ms([r['server_run_s'] for r in rows]):>4} ms   server CPU "
                  f"{median_ms([r['server_cpu_s'] for r in rows]):>4} ms   browser CPU "
                  f"{median_ms([r['browser_cpu_s'] for r in rows]):>4} ms")
            # a median hides one step that takes seconds
            slowest = max(rows, key=lambda r: r["wall_s"])
            print(f"    {'':<28} slowest step {slowest['id']}: "
                  f"key→drawn {1000 * slowest['wall_s']:.0f} ms, "
                  f"browser CPU {1000 * slowest['browser_cpu_s']:.0f} ms; "
                  f"whole walk's browser CPU {sum(r['browser_cpu_s'] for r in rows):.1f} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
