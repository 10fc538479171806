"""What the server side costs per new sentence, behind nginx: two app processes on the trained
checkpoints behind deploy/nginx.conf (tests/support/proxy.py), and --sessions headless-Chromium
sessions that each type a new sentence every --interval seconds for --minutes (the load test's
users, bench/load_test.py).

The server's cost is read from the run log: for each process, its CPU time (`process_cpu_s`, all its
threads) from its first to its last run in the measured window, divided by the runs in between. That
is CPU time, not wall time, so it counts the work and not the waiting: it holds on a machine whose
cores are busy with other things, where every latency is inflated. Measured from /proc over the same
window: the browsers' CPU (the Chromium this script starts, apart from the server's), nginx's, and
the server's again as a cross-check. The latencies are reported too, but only describe this machine
under this load.

Before the window, with every session open and nobody typing, the processes' idle cost per second is
measured (--idle-seconds): the server's own timers, paid whatever the load. At this benchmark's few
sentences per second it is a noticeable part of each one's cost; at a lecture hall's rate it is not,
so the cost per sentence beyond it is reported too.

    .venv/bin/python bench/proxy_capacity.py --sessions 10 --interval 20 --minutes 4

Prints a JSON summary on stdout (progress on stderr). Talks only to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the project root, for tests.support
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.browser import CHROMIUM, ROOT, children, process_tree  # noqa: E402
from tests.support.proxy import CHROMIUM_PROXY_ARGS, cluster  # noqa: E402
from load_test import (Crowd, Session, chosen_pages, launch, log, percentile,  # noqa: E402
                       read_run_log)


def tree_cpu_seconds(roots: list[int]) -> float:
    """User + system CPU of these processes and their descendants, including descendants that have
    exited since (a parent's reaped children count in its cutime and cstime): it only ever grows."""
    ticks = 0
    for p in process_tree(roots):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        except OSError:
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu_per_run(runs: list[dict], start: float, end: float) -> dict:
    """Per process, from the run log: CPU seconds between its first and last run in the window, per
    run."""
    out = {}
    for pid in sorted({r["pid"] for r in runs}):
        mine = [r for r in runs if r["pid"] == pid and start <= r["time"] <= end]
        if len(mine) >= 2:
            cpu = mine[-1]["process_cpu_s"] - mine[0]["process_cpu_s"]
            out[pid] = {"runs": len(mine), "cpu_s_per_run": round(cpu / (len(mine) - 1), 3),
                        "run_thread_cpu_s_p50": percentile([r["cpu_s"] for r in mine], 50)}
    return out


async def measure(args, url: str, server_pids: list[int], nginx_pid: int, run_log: Path) -> dict:
    from playwright.async_api import async_playwright

    pages = chosen_pages(args.pages)
    async with async_playwright() as p:
        browser = await launch(p, CHROMIUM_PROXY_ARGS)
        # not measured: the first visits (round robin: one per process) load the model
        for _ in server_pids:
            warm = Session(browser, url, args.timeout)
            await warm.open()
            await warm.close()
        crowd = Crowd(browser, url, args, pages)
        stats = crowd.stats
        await crowd.arrive()

        # The browser: playwright's driver and the Chromium it started, all children of this process
        # but for the servers and nginx.
        browser_roots = [p for p in children(os.getpid()) if p not in server_pids + [nginx_pid]]

        def cpu() -> tuple[float, float, float]:  # the servers', the browser's and nginx's
            return (tree_cpu_seconds(server_pids), tree_cpu_seconds(browser_roots),
                    tree_cpu_seconds([nginx_pid]))

        # What the processes cost while every session has its page and nobody types: the server's
        # own timers (the event loop's ticks, websocket pings), paid per second, whatever the load.
        idle0, idle_t0 = tree_cpu_seconds(server_pids), time.perf_counter()
        await asyncio.sleep(args.idle_seconds)
        idle_cpu_per_s = (tree_cpu_seconds(server_pids) - idle0) / (time.perf_counter() - idle_t0)
        servers0, browser0, nginx0 = cpu()
        t0, wall0 = crowd.start()
        log(f"all {args.sessions} sessions have their page; measuring for {args.minutes} min")
        await crowd.finish()
        servers1, browser1, nginx1 = cpu()
        elapsed, wall1 = time.perf_counter() - t0, time.time()
        await browser.close()
    per_process = server_cpu_per_run(read_run_log(run_log), wall0, wall1)
    sentences = len(stats["latencies"])
    total_runs = sum(v["runs"] for v in per_process.values())
    return {
        "sessions": args.sessions, "interval_s": args.interval, "minutes": args.minutes,
        "elapsed_s": round(elapsed, 1), "sentences": sentences, "errors": len(stats["errors"]),
        "error_samples": stats["errors"][:10],
        "sentences_per_s": round(sentences / elapsed, 3),
        "server_cpu_s_per_sentence_run_log": round(
            sum(v["cpu_s_per_run"] * v["runs"] for v in per_process.values())
            / max(1, total_runs), 3),
        "server_cpu_s_per_sentence_proc": round((servers1 - servers0) / max(1, sentences), 3),
        # Both processes together, while idle; and per sentence once that idle cost is taken out,
        # which at a lecture hall's rate of sentences is what each one adds.
        "server_idle_cpu_s_per_s": round(idle_cpu_per_s, 4),
        "server_cpu_s_per_sentence_beyond_idle": round(
            (servers1 - servers0 - idle_cpu_per_s * elapsed) / max(1, sentences), 3),
        "browser_cpu_s_per_sentence": round((browser1 - browser0) / max(1, sentences), 3),
        "nginx_cpu_s_per_sentence": round((nginx1 - nginx0) / max(1, sentences), 4),
        "per_process": per_process,
        "latency_s": {"p50": percentile(stats["latencies"], 50),
                      "p95": percentile(stats["latencies"], 95)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10, help="browser sessions, spread over "
                        "the pages")
    parser.add_argument("--interval", type=float, default=20, help="seconds between a session's "
                        "sentences (±30 %%)")
    parser.add_argument("--minutes", type=float, default=4, help="the measured window")
    parser.add_argument("--ramp", type=float, default=30, help="seconds over which the sessions "
                        "arrive (not measured)")
    parser.add_argument("--idle-seconds", type=float, default=20,
                        help="seconds measured before the window, every session open and idle")
    parser.add_argument("--pages", help="only these pages, by url_path, comma-separated "
                        "(default: all)")
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                        help="the checkpoint root")
    parser.add_argument("--timeout", type=float, default=120, help="bound on every single wait, "
                        "in seconds")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    workdir = Path(tempfile.mkdtemp(prefix="transformer-viz-proxy-"))
    log(f"app processes, nginx, their logs and the run log in {workdir}")
    with cluster(workdir, args.checkpoints.resolve(), args.timeout) as c:
        pids = [proc.pid for proc in c.apps.values()]
        summary = asyncio.run(measure(args, c.url, pids, c.nginx.pid, c.run_log))
    print(json.dumps(summary, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
