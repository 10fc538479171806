"""Bounded load and soak tests of the running app, through real headless-Chromium sessions on
127.0.0.1.

Load (default): --sessions browser sessions (one Chromium, one context each, spread over the pages)
each type a new sentence every --interval seconds and wait until the run is over and every chart is
drawn. Records the time from typing to drawn charts (p50, p95, max), the errors (exceptions or error
boxes on the page, timeouts), and the server's resident memory over time. Stops by itself after
--minutes.

Soak (--reruns N): one session warms up (every page with every one of --soak-sentences sentences),
then does N more sequential reruns over the same pages and sentences, so the caches are warm and any
growth of the server's memory is a leak, not a cache filling up. Reports the growth in %
(target <= 10 %).

    .venv/bin/python bench/load_test.py --start-server --sessions 20 --minutes 5
    .venv/bin/python bench/load_test.py --start-server --reruns 500
    # an app already running
    .venv/bin/python bench/load_test.py --port 8501 --sessions 5 --minutes 1

Prints a JSON summary on stdout (progress goes to stderr). Talks only to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the project root, for tests.support
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.browser import (CHROMIUM, CHROMIUM_ARGS, COUNT_RUNS_JS, PAGE_ERRORS_JS,  # noqa: E402
                                   ROOT, RUN_DONE_JS, app_pages, default_page, page_url,
                                   start_server, stop_server)
from app_speed import WORDS, nav_link, pid_listening_on, rss_bytes, sentence_language  # noqa: E402

MIB = 2**20
RUN_LOG_ENV = "TRANSFORMER_VIZ_RUN_LOG"  # read by the app (transformer_viz.app.runlog.logged_run)


def chosen_pages(spec: str | None) -> list[dict]:
    """The app's pages, or only those whose url_path is in the comma-separated --pages."""
    pages = app_pages()
    if not spec:
        return pages
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    unknown = set(wanted) - {p["url_path"] for p in pages}
    if unknown:
        raise SystemExit(f"unknown page(s) {sorted(unknown)}; "
                         f"known: {[p['url_path'] for p in pages]}")
    return [p for p in pages if p["url_path"] in wanted]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def new_sentence(rng: random.Random, lang: str, serial: str) -> str:
    # A serial number makes every sentence new to the server's run cache: each one costs a real
    # model run.
    words = rng.choices(WORDS[lang], k=rng.randint(5, 14))
    return f"{' '.join(words).capitalize()} {serial} ."


class Session:
    """One browser context on one page of the app, with a run counter installed before the app
    loads."""

    def __init__(self, browser, url: str, timeout_s: float):
        self.browser, self.url, self.timeout_s = browser, url, timeout_s
        self.page = None
        self.lang = "de"

    async def open(self, page: dict | None = None) -> None:
        """A new context on `page` (an app_pages() entry; None: the default page), drawn."""
        context = await self.browser.new_context(viewport={"width": 1280, "height": 900})
        await context.add_init_script(COUNT_RUNS_JS)
        self.page = await context.new_page()
        self.page.set_default_timeout(self.timeout_s * 1000)
        self.page.on("dialog", lambda d: asyncio.ensure_future(d.dismiss()))
        await self.goto(page)
        label = await self.area().get_attribute("aria-label") or ""
        self.lang = sentence_language(label)

    async def goto(self, page: dict | None = None) -> None:
        """Load `page` (None: the default page) and wait until its run is over and its charts are
        drawn."""
        page = page or default_page()
        await self.page.goto(page_url(self.url, page))
        await self.wait(0, title=page["title"])  # a fast first run may never show as "running"

    def area(self):
        return self.page.get_by_label(re.compile(r"^Sentence")).first

    async def runs(self) -> int:
        return await self.page.evaluate("window.__stRuns")

    async def wait(self, after: int, **expect: str) -> None:
        """Until the run after the action is over and drawn; `expect` (sentence=, title=) says what
        it shows."""
        # Every 100 ms: with tens of sessions in one browser, faster polling itself costs noticeable
        # CPU.
        await self.page.wait_for_function(RUN_DONE_JS, arg={"after": after, **expect}, polling=100,
                                          timeout=self.timeout_s * 1000)

    async def commit(self, text: str) -> list[str]:
        """Type and commit a sentence; wait for the run and the charts. Returns the errors shown on
        the page."""
        area = self.area()
        await area.fill(text)
        before = await self.runs()
        await area.press("Control+Enter")
        await self.wait(before, sentence=text)
        return await self.page.evaluate(PAGE_ERRORS_JS)

    async def open_page(self, title: str) -> list[str]:
        link = nav_link(self.page, title)
        if await link.get_attribute("aria-current") != "page":
            before = await self.runs()
            await link.click()
            await self.wait(before, title=title)
        return await self.page.evaluate(PAGE_ERRORS_JS)

    async def close(self) -> None:
        if self.page is not None:
            await self.page.context.close()


async def sample_memory(pid: int, samples: list, stop: asyncio.Event, every_s: float,
                        t0: float) -> None:
    while not stop.is_set():
        samples.append((round(time.perf_counter() - t0, 1), round(rss_bytes(pid) / MIB, 1)))
        try:
            await asyncio.wait_for(stop.wait(), every_s)
        except asyncio.TimeoutError:
            pass


async def user(k: int, browser, url: str, args, pages: list[dict], stats: dict,
               opened: asyncio.Queue, window: dict, go: asyncio.Event) -> None:
    """One simulated user: opens one page (spread over all), then types a new sentence every
    --interval s."""
    rng = random.Random(k)
    info = pages[k % len(pages)]
    # users arrive spread over --ramp seconds
    await asyncio.sleep(args.ramp * k / max(1, args.sessions))
    session = Session(browser, url, args.timeout)
    try:
        for attempt in range(3):
            try:
                t = time.perf_counter()
                await session.open(info)
                stats["open_latencies"].append(time.perf_counter() - t)
                break
            except Exception as exc:  # noqa: BLE001 - a failure to open is a recorded error, then a retry
                stats["errors"].append({"session": k, "page": info["title"],
                                        "error": f"open: {type(exc).__name__}: {exc}"[:300]})
                await session.close()
                session = Session(browser, url, args.timeout)
        else:
            return
    finally:
        await opened.put(k)
    await go.wait()  # the measured window starts once every session has its page open
    n = 0
    while time.perf_counter() < window["end"]:
        n += 1
        t = time.perf_counter()
        try:
            problems = await session.commit(new_sentence(rng, session.lang, f"{k}x{n}"))
            stats["latencies"].append(time.perf_counter() - t)
            stats["by_page"].setdefault(info["title"], []).append(time.perf_counter() - t)
            if problems:
                stats["errors"].append({"session": k, "page": info["title"], "error": problems[0]})
        except Exception as exc:  # noqa: BLE001
            stats["errors"].append({"session": k, "page": info["title"],
                                    "error": f"{type(exc).__name__}: {exc}"[:300]})
            try:  # start over on the same page, as a user would reload
                await session.goto(info)
            except Exception:  # noqa: BLE001
                break
        stats["interactions"] += 1
        pause = args.interval * rng.uniform(0.7, 1.3)
        await asyncio.sleep(max(0.0, min(pause, window["end"] - time.perf_counter())))
    await session.close()


class Crowd:
    """The --sessions simulated users (:func:`user`) of one browser and the window of --minutes in
    which they type: :meth:`arrive` waits until every one has its page, :meth:`start` opens the
    window, :meth:`finish` waits until every one has stopped."""

    def __init__(self, browser, url: str, args, pages: list[dict]):
        self.args = args
        self.stats = stats = {"latencies": [], "open_latencies": [], "errors": [],
                              "interactions": 0, "by_page": {}}
        self.opened: asyncio.Queue = asyncio.Queue()
        self.go, self.window = asyncio.Event(), {"end": math.inf}
        self.users = [asyncio.create_task(user(k, browser, url, args, pages, stats, self.opened,
                                               self.window, self.go))
                      for k in range(args.sessions)]

    async def arrive(self) -> None:
        for _ in range(self.args.sessions):
            await self.opened.get()

    def start(self) -> tuple[float, float]:
        """Opens the window; returns its start by time.perf_counter and by time.time."""
        t0, wall0 = time.perf_counter(), time.time()
        self.window["end"] = t0 + self.args.minutes * 60
        self.go.set()
        return t0, wall0

    async def finish(self) -> set:
        """The users' tasks that ended; one still running past a hard bound is cancelled and
        counted as an error."""
        # Hard bound: every wait inside is bounded too, this only guards against the unforeseen.
        timeout = self.args.minutes * 60 + 2 * self.args.timeout + 30
        done, pending = await asyncio.wait(self.users, timeout=timeout)
        for task in pending:
            task.cancel()
            self.stats["errors"].append(
                {"error": "a session did not stop in time and was cancelled"})
        return done


def read_run_log(run_log: Path) -> list[dict]:
    """The server's runs, one JSON object a line (TRANSFORMER_VIZ_RUN_LOG)."""
    lines = run_log.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def server_runs(run_log: Path | None, start: float, end: float) -> dict | None:
    """Summary of the server's own run times (TRANSFORMER_VIZ_RUN_LOG) within the measured
    window."""
    if run_log is None or not run_log.exists():
        return None
    runs = [r for r in read_run_log(run_log) if start <= r["time"] <= end]
    seconds = [r["seconds"] for r in runs]
    outcomes: dict[str, int] = {}
    for r in runs:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return {"runs": len(runs), "outcomes": outcomes, "p50_s": percentile(seconds, 50),
            "p95_s": percentile(seconds, 95), "max_s": max(seconds, default=None),
            "busy_fraction": round(sum(seconds) / max(1e-9, end - start), 3)}


async def load(args, url: str, pid: int, run_log: Path | None = None) -> dict:
    from playwright.async_api import async_playwright

    pages = chosen_pages(args.pages)
    samples: list = []
    stop = asyncio.Event()
    async with async_playwright() as p:
        browser = await launch(p)
        # Warm-up, not timed: the first visit loads the model into the server.
        t_warm = time.perf_counter()
        warm = Session(browser, url, args.timeout)
        try:
            await warm.open()
        except Exception as exc:  # noqa: BLE001 - no point loading a server that cannot show one page
            await browser.close()
            return {"mode": "load", "url": url,
                    "error": f"warm-up failed: {type(exc).__name__}: {exc}"[:500]}
        await warm.close()
        log(f"warm-up (model loaded, first page drawn) took {time.perf_counter() - t_warm:.1f} s")
        t_open = time.perf_counter()
        sampler = asyncio.create_task(sample_memory(pid, samples, stop, args.sample_every, t_open))
        crowd = Crowd(browser, url, args, pages)
        stats = crowd.stats
        log(f"{args.sessions} sessions arriving over {args.ramp:.0f} s against {url}")
        await crowd.arrive()
        t0, wall0 = crowd.start()
        log(f"all sessions have their page after {t0 - t_open:.1f} s; "
            f"measuring for {args.minutes} min")
        for task in await crowd.finish():
            if task.exception() is not None:
                stats["errors"].append({"error": f"session crashed: {task.exception()!r}"[:300]})
        stop.set()
        await sampler
        elapsed, wall1 = time.perf_counter() - t0, time.time()
        await browser.close()
    lat, opens = stats["latencies"], stats["open_latencies"]
    rss = [m for _, m in samples]
    return {
        "mode": "load", "url": url, "sessions": args.sessions, "minutes": args.minutes,
        "interval_s": args.interval,
        "warmup_s": round(t_open - t_warm, 1), "arrival_s": round(t0 - t_open, 1),
        "elapsed_s": round(elapsed, 1), "interactions": stats["interactions"],
        "completed": len(lat),
        "errors": len(stats["errors"]), "error_samples": stats["errors"][:10],
        "latency_s": {"p50": percentile(lat, 50), "p95": percentile(lat, 95),
                      "max": max(lat, default=None),
                      "mean": sum(lat) / len(lat) if lat else None},
        "server_runs_in_window": server_runs(run_log, wall0, wall1),
        "open_s": {"p50": percentile(opens, 50), "p95": percentile(opens, 95),
                   "max": max(opens, default=None)},
        "latency_p50_by_page_s": {k: percentile(v, 50) for k, v in stats["by_page"].items()},
        "server_rss_mib": {"start": rss[0] if rss else None, "max": max(rss, default=None),
                           "end": rss[-1] if rss else None},
        # about 60 points over the run
        "server_rss_samples": samples[:: max(1, len(samples) // 60)],
    }


def soak_sentence_count(wanted: int, n_pages: int) -> int:
    """As many sentences as --soak-sentences, a number prime to the page count, so that stepping
    both together visits every (page, sentence) pair; at least 2, as consecutive steps must change
    the sentence, or no rerun would follow."""
    k = max(2, wanted)
    while any(k % d == 0 and n_pages % d == 0 for d in range(2, k + 1)):
        k += 1
    return k


async def launch(playwright, extra_args: list[str] | tuple[str, ...] = ()):
    """Debian's Chromium, headless, with the flags every test and benchmark uses (and
    ``extra_args``)."""
    return await playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                            args=[*CHROMIUM_ARGS, *extra_args])


async def soak(args, url: str, pid: int) -> dict:
    from playwright.async_api import async_playwright

    pages = chosen_pages(args.pages)
    k = soak_sentence_count(args.soak_sentences, len(pages))
    rng = random.Random(0)
    errors, samples = [], []
    async with async_playwright() as p:
        browser = await launch(p)
        session = Session(browser, url, args.timeout)
        await session.open()
        sentences = [new_sentence(rng, session.lang, f"s{i}") for i in range(k)]

        counted = {"before_reloads": 0}  # the browser's run counter starts again with every reload

        async def runs() -> int:
            return counted["before_reloads"] + await session.runs()

        async def step(i: int) -> None:
            title = pages[i % len(pages)]["title"]
            try:
                for problems in (await session.open_page(title),
                                 await session.commit(sentences[i % k])):
                    if problems:
                        errors.append({"step": i, "page": title, "error": problems[0]})
            except Exception as exc:  # noqa: BLE001 - recorded; then reload, as a user would, and go on
                errors.append({"step": i, "page": title,
                               "error": f"{type(exc).__name__}: {exc}"[:300]})
                log(f"soak: step {i} ({title}) failed: {type(exc).__name__}; reloading")
                counted["before_reloads"] = await runs()
                await session.goto()

        warm_steps = len(pages) * k
        log(f"soak: warm-up of {warm_steps} steps ({len(pages)} pages x {k} sentences)")
        t0 = time.perf_counter()
        for i in range(warm_steps):
            await step(i)
        warm_runs = await runs()
        base = rss_bytes(pid) / MIB
        samples.append((0, round(base, 1)))
        log(f"soak: warm after {warm_runs} reruns, RSS {base:.0f} MiB; now {args.reruns} reruns")
        i, t1 = warm_steps, time.perf_counter()
        next_sample = 50
        while await runs() - warm_runs < args.reruns:
            await step(i)
            i += 1
            done = await runs() - warm_runs
            if done >= next_sample:
                samples.append((done, round(rss_bytes(pid) / MIB, 1)))
                log(f"soak: {done} reruns, RSS {samples[-1][1]:.0f} MiB")
                next_sample += 50
        end = rss_bytes(pid) / MIB
        if samples[-1][0] != await runs() - warm_runs:
            samples.append((await runs() - warm_runs, round(end, 1)))
        measured_s = time.perf_counter() - t1
        await session.close()
        await browser.close()
    return {
        "mode": "soak", "url": url, "pages": len(pages), "sentences": k, "warmup_reruns": warm_runs,
        "warmup_s": round(t1 - t0, 1), "reruns": samples[-1][0], "measured_s": round(measured_s, 1),
        "server_rss_mib": {"after_warmup": round(base, 1), "end": round(end, 1),
                           "max": max(m for _, m in samples)},
        "growth_percent": round(100 * (end - base) / base, 2), "target_growth_percent": 10,
        "rss_by_rerun": samples, "errors": len(errors), "error_samples": errors[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20,
                        help="concurrent browser sessions (load mode)")
    parser.add_argument("--minutes", type=float, default=5, help="duration of the load (load mode)")
    parser.add_argument("--interval", type=float, default=3,
                        help="seconds between a session's sentences (±30 %%)")
    parser.add_argument("--ramp", type=float, default=60,
                        help="seconds over which the sessions arrive (not measured)")
    parser.add_argument("--reruns", type=int,
                        help="soak mode: this many sequential reruns after warm-up")
    parser.add_argument("--soak-sentences", type=int, default=7,
                        help="sentences cycled in soak mode")
    parser.add_argument("--pages",
                        help="only these pages, by url_path, comma-separated (default: all)")
    parser.add_argument("--port", type=int,
                        help="port of the app on 127.0.0.1 (default: 8501, or a free one with "
                             "--start-server)")
    parser.add_argument("--start-server", action="store_true",
                        help="start `streamlit run app.py` (and stop it)")
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                        help="with --start-server: the checkpoint root (default: checkpoints/)")
    parser.add_argument("--timeout", type=float, default=120,
                        help="bound on every single wait, in seconds")
    parser.add_argument("--sample-every", type=float, default=1.0,
                        help="seconds between RSS samples")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")

    proc, run_log = None, None
    if args.start_server:
        # The server appends the duration of each of its runs here: its share of every latency.
        run_log = Path(tempfile.mkdtemp(prefix="transformer-viz-load-")) / "runs.jsonl"
        os.environ[RUN_LOG_ENV] = str(run_log)
        proc, url, ready = start_server(args.checkpoints.resolve(), args.port,
                                        log_path=run_log.parent / "server.log",
                                        timeout_s=args.timeout)
        pid = proc.pid
        log(f"server up at {url} after {ready:.1f} s; "
            f"its output and run log are in {run_log.parent}")
    else:
        port = args.port or 8501
        url = f"http://127.0.0.1:{port}"
        pid = pid_listening_on(port)
        if pid is None:
            raise SystemExit(f"nothing listens on 127.0.0.1:{port} "
                             "(or it is not visible in /proc); "
                             "use --start-server")
    try:
        summary = asyncio.run(soak(args, url, pid) if args.reruns
                              else load(args, url, pid, run_log))
    finally:
        if proc is not None:
            stop_server(proc)
    print(json.dumps(summary, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
