"""Driving the app in headless Chromium: shared by tests/browser/test_browser.py, bench/app_speed.py
and bench/load_test.py.

Debian's Chromium (/usr/bin/chromium), started by playwright with the flags below; the app started
with `streamlit run app.py` on a free port of 127.0.0.1; and two small scripts run in the page that
tell when the Streamlit run after an action is over and every chart is drawn, so that no wait
guesses with sleeps. Only the standard library (and the list of pages, plain data) is imported here.
"""

from __future__ import annotations

import contextlib

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from transformer_viz.app.navigation import DEFAULT_PAGE, PAGES

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHECKPOINTS_ENV = "TRANSFORMER_VIZ_CHECKPOINTS"

# Browser-side: count the Streamlit runs that start, so "the run after my action is done" needs no
# sleeps.
COUNT_RUNS_JS = """
window.__stRuns = 0;
new MutationObserver((records) => {
  // A record holds only the value *before* the change: a short run can start and end before this
  // callback, so each record's new value is the next record's old value (or, for the last, the
  // current one).
  records.forEach((r, i) => {
    const next = records.slice(i + 1).find((n) => n.target === r.target);
    const value = next ? next.oldValue : r.target.getAttribute('data-test-script-state');
    if (value === 'running') window.__stRuns++;
  });
}).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
"""
# The run after an action has finished, nothing is a loading skeleton, every plotly chart drew its
# svg. The argument is `after` (the run count before the action) or {after, sentence, title, step}.
# Counting runs alone misses fast ones: when the server's "started" and "finished" messages arrive
# together, React applies both in one render and the script-state attribute never changes (1 commit
# in 3 on a trivial page). So the run also counts as done once the page shows what the action asked
# for: the app mirrors the sentence (?s=) and the open step (?step=, from 1) into the URL, and a
# page switch shows the new page's title; any other action can name a text the page shows only after
# its run (text=). An action that changes only charts can pass their content before it (charts=,
# from CHART_CONTENT_JS): the run then also counts as done once some chart's content differs. What a
# chart shows, without plotly's per-render random ids: its text, raster images (heatmaps) and paths.
CHART_CONTENT_JS = """() => Array.from(
    document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
  .map((p) => [p.textContent,
               ...Array.from(p.querySelectorAll('image')).map((i) => i.getAttribute('href')),
               ...Array.from(p.querySelectorAll('path'))
                 .map((d) => d.getAttribute('d'))].join('|'))"""
RUN_DONE_JS = """(arg) => {
  const {after, sentence = null, title = null, step = null, text = null, charts = null} =
    typeof arg === 'number' ? {after: arg} : arg;
  const chartContent = """ + CHART_CONTENT_JS + """;
  const app = document.querySelector('[data-testid="stApp"]');
  const main = document.querySelector('[data-testid="stMain"]');
  if (!app || !main) return false;
  const h1 = main.querySelector('h1');
  const query = new URLSearchParams(location.search);
  const shown = (sentence !== null && query.get('s') === sentence)
    || (step !== null && query.get('step') === step)
    || (title !== null && h1 !== null && h1.textContent.trim() === title)
    || (text !== null && main.innerText.includes(text))
    || (charts !== null && ((now) => now.length !== charts.length
                                     || now.some((c, i) => c !== charts[i]))(chartContent()));
  if (window.__stRuns <= after && !shown) return false;
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (main.querySelector('[data-testid="stSkeleton"]')) return false;
  return Array.from(main.querySelectorAll('[data-testid="stPlotlyChart"]'))
    .every((c) => c.querySelector('.js-plotly-plot svg.main-svg'));
}"""
# What went wrong on the page, as text (exceptions and error boxes); empty when all is well.
PAGE_ERRORS_JS = """() => Array.from(document.querySelectorAll(
  '[data-testid="stException"], [data-testid="stAlertContentError"]'))
  .map((e) => e.innerText.slice(0, 300))"""


def app_pages() -> list[dict]:
    """The app's pages in navigation order (transformer_viz.app.navigation): file, title, url_path,
    default."""
    return [{"file": page.file, "title": page.title, "url_path": page.url_path,
             "default": page == DEFAULT_PAGE}
            for page in PAGES]


def default_page() -> dict:
    """The page the root URL opens."""
    return next(p for p in app_pages() if p["default"])


def page_url(base: str, info: dict) -> str:
    """The address of one of :func:`app_pages` on the app at ``base``: the default page at the
    root."""
    return f"{base}/{'' if info['default'] else info['url_path']}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(checkpoints: Path | None, port: int | None = None, log_path: Path | None = None,
                 timeout_s: float = 120, env: dict[str, str] | None = None, script: str = "app.py",
                 script_args: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str, float]:
    """`streamlit run app.py` on 127.0.0.1; returns (process, url, seconds until /_stcore/health
    answered). `env`: variables set for the server on top of this process's environment; `script`
    and `script_args`: another script of the project to run instead (a benchmark's yardstick page),
    and its own arguments."""
    port = port or free_port()
    env = {**os.environ, **(env or {})}
    if checkpoints is not None:
        env[CHECKPOINTS_ENV] = str(checkpoints)
    log = open(log_path, "w") if log_path else subprocess.DEVNULL
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(PYTHON if PYTHON.exists() else sys.executable), "-m", "streamlit", "run", script,
         "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
         "--server.runOnSave", "false", *(("--", *script_args) if script_args else ())],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    if log_path:
        log.close()  # the child keeps its own handle
    url = f"http://127.0.0.1:{port}"
    try:
        while time.perf_counter() - t0 < timeout_s:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}"
                                   + (f"; see {log_path}" if log_path else ""))
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        return proc, url, time.perf_counter() - t0
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"streamlit did not answer within {timeout_s} s")
    except BaseException:  # no server left behind, not even when the wait is interrupted (Ctrl-C)
        if proc.poll() is None:
            stop_server(proc)
        raise


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


def children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            kids.append(int(entry.name))
    return kids


def process_tree(pids: list[int]) -> list[int]:
    """These processes and all their descendants, each once."""
    todo, seen = list(pids), []
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.append(p)
            todo.extend(children(p))
    return seen


@contextlib.contextmanager
def serving(checkpoints: Path | None, log: Path, timeout_s: float):
    """The app running on ``checkpoints`` for a module's browser tests: yields its address, fails
    the test with the server's log when it does not start, stops it afterwards."""
    import pytest

    try:
        proc, url, _ = start_server(checkpoints, log_path=log, timeout_s=timeout_s)
    except RuntimeError as exc:
        pytest.fail(f"{exc}:\n{log.read_text()[-3000:]}")
    try:
        yield url
    finally:
        stop_server(proc)


@contextlib.contextmanager
def counted_page(browser, width: int, height: int, timeout_ms: int):
    """A new page in its own browser context at width × height, counting the app's script runs
    (COUNT_RUNS_JS), every wait bounded by ``timeout_ms``; the context closes after the block."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(COUNT_RUNS_JS)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    try:
        yield page
    finally:
        context.close()
