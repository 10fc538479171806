"""How fast is the app? Four measurements, printed as tables:

(a) rerun    server-side rerun time of every page (streamlit.testing.v1.AppTest, in this process)
             for a sentence of ~20 source tokens, with the model and the sentence's run already
             cached: each page runs once to warm the caches, then --reruns timed reruns; the median
             is reported. Target: <= 200 ms per page.
(b) cold     from launching `streamlit run app.py` to the first page with all its charts drawn in
             headless Chromium. Target: <= 10 s.
(c) memory   resident memory (VmRSS, the server process and its children) after every page has been
             visited in the browser. Target: <= 1 GiB.
(d) cpu      CPU seconds (/proc/<pid>/stat) that one session costs the server and the browser, for
             opening each page and for each new sentence typed on it: the numbers behind how many
             students a machine holds; and the bytes the server sends for each (websocket messages).

    .venv/bin/python bench/app_speed.py                       # checkpoints/ of the project
    .venv/bin/python bench/app_speed.py --checkpoints DIR --reruns 10 --skip-browser

Only public means are used: time.perf_counter, /proc/<pid>/status, and the app's own HTTP/WebSocket
interface through the browser. The server and browser helpers are in tests/support/browser.py.
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

# the project root, for tests.support
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.browser import (CHECKPOINTS_ENV, CHROMIUM, CHROMIUM_ARGS, COUNT_RUNS_JS,  # noqa: E402, F401
                                   PAGE_ERRORS_JS, ROOT, RUN_DONE_JS, app_pages, children,
                                   default_page, page_url, process_tree, start_server, stop_server)

TARGETS = {"rerun_ms": 200, "cold_start_s": 10, "rss_mib": 1024}

# Words to build sentences from, per source language (the sidebar label says which: "Sentence
# (German)").
WORDS = {
    "de": "ein eine zwei der die das mann frau kind hund katze junge mädchen spielt läuft sitzt "
          "steht fährt mit dem einem roten blauen großen kleinen ball fahrrad auto straße park "
          "strand wasser schnee vor neben auf im in an über durch hause stadt buch liest trägt "
          "hemd hut".split(),
    "en": "a an two the man woman child dog cat boy girl plays runs sits stands rides with red "
          "blue big small ball bicycle car street park beach water snow in front of next to on at "
          "over through house city book reads wears shirt hat".split(),
}


# --- pages, server, memory ------------------------------------------------------------------------

def rss_bytes(pid: int) -> int:
    """VmRSS of the process and all its descendants (0 for a process that is gone)."""
    total = 0
    for p in process_tree([pid]):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def pid_listening_on(port: int) -> int | None:
    """The process that listens on 127.0.0.1:<port>, found through /proc/net/tcp and the fds in
    /proc."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A = LISTEN
                inodes.add(fields[9])
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(entry.name)
        except OSError:
            continue
    return None


def sentence_language(label: str) -> str:
    """'Sentence (German)' (or 'Sentence (de)') -> 'de' (falls back to German)."""
    lang = label.split("(")[-1].rstrip(") ").strip() if "(" in label else "de"
    lang = {"German": "de", "English": "en"}.get(lang, lang)
    return lang if lang in WORDS else "de"


# --- (a) rerun times with AppTest -----------------------------------------------------------------

def sentence_of_tokens(checkpoints: Path, name: str | None, n_tokens: int) -> tuple[str, str, int]:
    """A sentence whose source has n_tokens tokens (with </s>) for the chosen checkpoint: (name,
    text, count)."""
    sys.path.insert(0, str(ROOT))
    os.environ[CHECKPOINTS_ENV] = str(checkpoints)
    from transformer_viz.app import about, catalogue
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.text.tokenizer import encode_source

    # the app's own discovery, so the name matches the sidebar's
    available = catalogue.list_checkpoints()
    if not available:
        raise SystemExit(f"no checkpoint in {checkpoints}")
    name = name or about.checkpoints_in_order()[0]  # the sidebar's default
    ckpt = load_checkpoint(available[name])
    lang = ckpt.metadata.get("src_lang", "de")
    words, count = [], 0
    pool = WORDS.get(lang, WORDS["de"])
    while count < n_tokens:
        words.append(pool[len(words) * 7 % len(pool)])
        text = (" ".join(words) + " .").capitalize()
        count = len(encode_source(ckpt.tokenizer, text, max_tokens=ckpt.config.max_len).ids)
        if len(words) > 4 * n_tokens:
            break
    return name, text, count


def measure_reruns(checkpoints: Path, name: str | None, n_tokens: int,
                   reruns: int) -> tuple[dict, dict]:
    from streamlit.testing.v1 import AppTest

    name, sentence, count = sentence_of_tokens(checkpoints, name, n_tokens)
    info = {"checkpoint": name, "sentence": sentence, "source_tokens": count, "reruns": reruns}
    results = {}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params["ckpt"] = name
    at.query_params["s"] = sentence
    at.run()
    for page in app_pages():
        at.switch_page(page["file"])
        at.run()  # warm: model, run and page caches
        if at.exception:
            results[page["title"]] = {"error": at.exception[0].value[:200]}
            continue
        times = []
        for _ in range(reruns):
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
        results[page["title"]] = {"median_ms": 1000 * statistics.median(times),
                                  "max_ms": 1000 * max(times),
                                  "charts": len(at.get("plotly_chart"))}
    return info, results


# --- (b) cold start and (c) memory in the browser -------------------------------------------------

def launch_browser(playwright, extra_args: list[str] | tuple[str, ...] = ()):
    """Debian's Chromium, headless, with the flags every test and benchmark uses (and
    ``extra_args``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=[*CHROMIUM_ARGS, *extra_args])


def nav_link(page, title: str):
    """The sidebar navigation link with exactly this title (works for sync and async pages)."""
    return page.locator('[data-testid="stSidebarNav"] a',
                        has_text=re.compile(rf"^\s*{re.escape(title)}\s*$")).first


def wait_for_run(page, after: int, timeout_s: float, **expect: str) -> None:
    """Until the run after an action is drawn; `expect` (sentence=, title=): what the action makes
    the page show."""
    page.wait_for_function(RUN_DONE_JS, arg={"after": after, **expect}, polling=50,
                           timeout=timeout_s * 1000)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes and their descendants, from /proc/<pid>/stat."""
    ticks = 0
    for p in process_tree(pids):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def chromium_pids() -> list[int]:
    """The Chromium processes this process started (through playwright's driver), not any other on
    the machine: a second browser running beside the benchmark would otherwise count as this one's
    work."""
    pids = []
    for p in process_tree([os.getpid()]):
        try:
            if b"chromium" in (Path(f"/proc/{p}/cmdline")).read_bytes().split(b"\0")[0]:
                pids.append(p)
        except OSError:
            continue
    return pids


def count_received_bytes(page) -> list[int]:
    """A one-element list that grows by the size of every websocket message the server sends this
    page (Streamlit's protobuf messages: elements, figures, widget states)."""
    received = [0]

    def on_socket(ws) -> None:
        ws.on("framereceived", lambda payload: received.__setitem__(0, received[0] + len(payload)))

    page.on("websocket", on_socket)
    return received


def measure_cpu(browser, url: str, server_pid: int, commits: int, timeout_s: float,
                only: set[str] | None = None) -> dict:
    """(d) CPU seconds that opening each page, and then typing a new sentence on it, cost the server
    and the browser, one session at a time: what a lecture hall multiplies by its number of
    students; and the bytes the server sent the browser for each."""
    out = {}
    for k, info in enumerate(app_pages()):
        if only and info["url_path"] not in only:
            continue
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(COUNT_RUNS_JS)
        page = context.new_page()
        page.set_default_timeout(timeout_s * 1000)
        received = count_received_bytes(page)
        b0, s0 = cpu_seconds(chromium_pids()), cpu_seconds([server_pid])
        page.goto(page_url(url, info))
        wait_for_run(page, 0, timeout_s, title=info["title"])
        b1, s1 = cpu_seconds(chromium_pids()), cpu_seconds([server_pid])
        open_bytes = received[0]
        area = page.get_by_label(re.compile(r"^Sentence")).first
        lang = sentence_language(area.get_attribute("aria-label") or "")
        walls, browser_s, server_s, sent = [], [], [], []
        for n in range(commits):
            words = [WORDS[lang][(7 * n + 3 * k + i) % len(WORDS[lang])] for i in range(10)]
            before, t = page.evaluate("window.__stRuns"), time.perf_counter()
            c0, d0, r0 = cpu_seconds(chromium_pids()), cpu_seconds([server_pid]), received[0]
            # new to the run cache: a real model run
            text = f"{' '.join(words).capitalize()} {k}{n} ."
            area.fill(text)
            area.press("Control+Enter")
            wait_for_run(page, before, timeout_s, sentence=text)
            walls.append(time.perf_counter() - t)
            page.wait_for_timeout(300)  # plotly's last layout pass: part of drawing this sentence
            browser_s.append(cpu_seconds(chromium_pids()) - c0)
            server_s.append(cpu_seconds([server_pid]) - d0)
            sent.append(received[0] - r0)
        out[info["title"]] = {"open_browser_cpu_s": b1 - b0, "open_server_cpu_s": s1 - s0,
                              "open_bytes": open_bytes,
                              "commit_bytes": statistics.median(sent),
                              "commit_wall_s": statistics.median(walls),
                              "commit_browser_cpu_s": statistics.median(browser_s),
                              "commit_server_cpu_s": statistics.median(server_s)}
        context.close()
    return out


def measure_browser(checkpoints: Path, timeout_s: float, commits: int = 0,
                    only: set[str] | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as p:
        browser = launch_browser(p)  # started first: its own start-up is not the app's cold start
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(COUNT_RUNS_JS)
        page = context.new_page()
        page.set_default_timeout(timeout_s * 1000)
        t0 = time.perf_counter()
        proc, url, health_s = start_server(checkpoints, timeout_s=timeout_s)
        try:
            page.goto(url)
            wait_for_run(page, 0, timeout_s, title=default_page()["title"])
            out["cold_start_s"] = time.perf_counter() - t0
            out["server_ready_s"] = health_s
            charts = page.locator('[data-testid="stMain"] [data-testid="stPlotlyChart"]')
            out["first_page_charts"] = charts.count()
            out["rss_after_first_page_mib"] = rss_bytes(proc.pid) / 2**20
            errors = {}
            for info in app_pages():
                link = nav_link(page, info["title"])
                if link.get_attribute("aria-current") != "page":
                    before = page.evaluate("window.__stRuns")
                    link.click()
                    wait_for_run(page, before, timeout_s, title=info["title"])
                problems = page.evaluate(PAGE_ERRORS_JS)
                if problems:
                    errors[info["title"]] = problems
            out["rss_after_all_pages_mib"] = rss_bytes(proc.pid) / 2**20
            out["page_errors"] = errors
            if commits:
                out["cpu"] = measure_cpu(browser, url, proc.pid, commits, timeout_s, only)
        finally:
            stop_server(proc)
            browser.close()
    return out


def print_reruns(info: dict, reruns: dict, count: int) -> None:
    """(a) as a table: each page's median and largest rerun against the target."""
    print(f"(a) server-side rerun per page: checkpoint {info['checkpoint']!r}, "
          f"{info['source_tokens']} source tokens, median of {count} reruns after one warm-up "
          f"(target <= {TARGETS['rerun_ms']} ms)")
    print(f"    sentence: {info['sentence']}")
    print(f"    {'page':<28} {'median ms':>10} {'max ms':>9} {'charts':>7}  ok")
    for title, r in reruns.items():
        if "error" in r:
            print(f"    {title:<28} {'ERROR':>10}  {r['error']}")
            continue
        ok = "yes" if r["median_ms"] <= TARGETS["rerun_ms"] else "NO"
        print(f"    {title:<28} {r['median_ms']:>10.1f} {r['max_ms']:>9.1f} {r['charts']:>7}  {ok}")


def print_browser(b: dict, commits: int) -> None:
    """(b), (c) and, when measured, (d): :func:`measure_browser`'s results against the targets."""
    ok = "yes" if b["cold_start_s"] <= TARGETS["cold_start_s"] else "NO"
    print(f"(b) cold start to the first page with its {b['first_page_charts']} chart(s): "
          f"{b['cold_start_s']:.2f} s (server answering after {b['server_ready_s']:.2f} s; "
          f"target <= {TARGETS['cold_start_s']} s) {ok}")
    ok = "yes" if b["rss_after_all_pages_mib"] <= TARGETS["rss_mib"] else "NO"
    print(f"(c) server RSS after every page: {b['rss_after_all_pages_mib']:.0f} MiB "
          f"(after the first page: {b['rss_after_first_page_mib']:.0f} MiB; "
          f"target <= {TARGETS['rss_mib']} MiB) {ok}")
    if b["page_errors"]:
        print(f"    errors shown on pages: {json.dumps(b['page_errors'], ensure_ascii=False)}")
    if "cpu" not in b:
        return
    print(f"(d) CPU seconds per session, one at a time "
          f"(median of {commits} new sentences per page)")
    print(f"    {'page':<28} {'open: browser':>14} {'server':>7} {'kB':>6} "
          f"{'new sentence: wall':>19} {'browser':>8} {'server':>7} {'kB':>6}")
    for title, c in b["cpu"].items():
        print(f"    {title:<28} {c['open_browser_cpu_s']:>14.1f} {c['open_server_cpu_s']:>7.1f} "
              f"{c['open_bytes'] / 1000:>6.1f} {c['commit_wall_s']:>19.2f} "
              f"{c['commit_browser_cpu_s']:>8.2f} {c['commit_server_cpu_s']:>7.2f} "
              f"{c['commit_bytes'] / 1000:>6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                        help="directory of checkpoint directories (default: the project's "
                             "checkpoints/)")
    parser.add_argument("--checkpoint",
                        help="checkpoint name for the rerun timings (default: the first)")
    parser.add_argument("--tokens", type=int, default=20,
                        help="source tokens of the timed sentence")
    parser.add_argument("--reruns", type=int, default=20, help="timed reruns per page")
    parser.add_argument("--timeout", type=float, default=120, help="bound on every wait in seconds")
    parser.add_argument("--skip-browser", action="store_true", help="only (a): no Chromium")
    parser.add_argument("--commits", type=int, default=3,
                        help="(d): new sentences typed per page while measuring CPU time "
                             "(0 skips (d))")
    parser.add_argument("--pages",
                        help="(d) only on these pages, by url_path, comma-separated (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    args = parser.parse_args()
    checkpoints = args.checkpoints.resolve()

    info, reruns = measure_reruns(checkpoints, args.checkpoint, args.tokens, args.reruns)
    print_reruns(info, reruns, args.reruns)
    result = {"rerun": {"info": info, "pages": reruns}}

    if not args.skip_browser:
        if not Path(CHROMIUM).exists():
            print(f"(b), (c) skipped: {CHROMIUM} is missing")
        else:
            b = measure_browser(checkpoints, args.timeout, args.commits,
                                set(args.pages.split(",")) if args.pages else None)
            result["browser"] = b
            print_browser(b, args.commits)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
