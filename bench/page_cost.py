"""What a page visit costs the server, three ways: the other half of a student's cost, beside new
sentences.

(1) a first visit from a browser that has nothing cached, straight to one app process (`streamlit
    run app.py`): the process serves Streamlit's frontend (about 7.6 MiB, a hundred files) as well
    as running the page;
(2) the same first visits through deploy/nginx.conf, two app processes behind nginx
    (tests/support/proxy.py), where nginx serves the frontend from its copy (docs/deployment.md §4):
    the CPU of both app processes, and nginx's own apart;
(3) a switch to another page in a session that is open (a click in the sidebar's navigation): the
    browser keeps the frontend and its websocket, and the server runs the new page; (3') the same
    with a new sentence typed before each switch (not timed), so that the page switched to runs a
    sentence it has not shown yet: what a student who types and then moves on costs.

Each visit is timed from the action until the page shows its title, no run is left and every chart
is drawn, then 300 ms more (as bench/app_speed.py's part (d) waits); CPU seconds from
/proc/<pid>/stat (user + system, the processes and their children). Before any visit is timed, every
page is visited once (in (2), once per process), so the model is loaded and the default sentence's
runs and figures are in the process's caches, as for a student who arrives after the first. Reported
per page: the mean of --visits visits (the clock ticks in 10 ms steps, so a mean says more than a
median), and the mean over the pages.

    .venv/bin/python bench/page_cost.py                   # all three, every page, 3 visits each
    .venv/bin/python bench/page_cost.py --skip-proxy --pages lecture,decoder --visits 5
    .venv/bin/python bench/page_cost.py --json page_cost.json

(2) needs nginx (`apt-get install nginx-light openssl`); without it, (2) is left out with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

# the project root, for tests.support
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.app_speed import launch_browser, nav_link, wait_for_run  # noqa: E402
from bench.proxy_capacity import tree_cpu_seconds  # noqa: E402
from tests.support.browser import (COUNT_RUNS_JS, ROOT, app_pages, page_url,  # noqa: E402
                                   start_server, stop_server)
from tests.support.proxy import CHROMIUM_PROXY_ARGS, cluster, nginx_binary  # noqa: E402

SETTLE_MS = 300  # plotly's last layout pass: part of drawing the page


def first_visit(browser, base: str, info: dict, pids: list[int], timeout_s: float,
                others: list[int] | tuple[int, ...] = ()) -> tuple[float, float]:
    """CPU seconds of ``pids``, and of ``others`` apart, for one page opened by a browser context
    with nothing cached."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_RUNS_JS)
    try:
        page = context.new_page()
        page.set_default_timeout(timeout_s * 1000)
        before, before_others = tree_cpu_seconds(pids), tree_cpu_seconds(others)
        page.goto(page_url(base, info))
        wait_for_run(page, 0, timeout_s, title=info["title"])
        page.wait_for_timeout(SETTLE_MS)
        return tree_cpu_seconds(pids) - before, tree_cpu_seconds(others) - before_others
    finally:
        context.close()


def first_visits(browser, base: str, pages: list[dict], pids: list[int], visits: int,
                 timeout_s: float, others: list[int] | tuple[int, ...] = (),
                 ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """:func:`first_visit` ``visits`` times per page, after one untimed visit per process in
    ``pids`` (it loads the model and fills the caches; a first visit goes to any process): per page,
    the CPU of ``pids`` and of ``others``."""
    for info in pages:
        for _ in pids:
            first_visit(browser, base, info, pids, timeout_s)
    costs: dict[str, list[float]] = {info["title"]: [] for info in pages}
    costs_others: dict[str, list[float]] = {info["title"]: [] for info in pages}
    for info in pages:
        for _ in range(visits):
            cpu, cpu_others = first_visit(browser, base, info, pids, timeout_s, others)
            costs[info["title"]].append(cpu)
            costs_others[info["title"]].append(cpu_others)
    return costs, costs_others


def switches(browser, base: str, pages: list[dict], pids: list[int], visits: int, timeout_s: float,
             typed: bool = False) -> dict[str, list[float]]:
    """CPU seconds of ``pids`` per switch to each page in one open session, going round the pages.
    ``typed``: a new sentence is typed on the page before each switch (not timed), so that the page
    switched to meets a sentence it has not shown yet and may need more of the model than the page
    before did (a traced pass, beam search, the recurrent models)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_RUNS_JS)
    out: dict[str, list[float]] = {info["title"]: [] for info in pages}
    try:
        page = context.new_page()
        page.set_default_timeout(timeout_s * 1000)
        page.goto(page_url(base, pages[-1]))
        wait_for_run(page, 0, timeout_s, title=pages[-1]["title"])
        for round_ in range(1 + visits):  # the first round is not timed
            for k, info in enumerate(pages):
                if typed:
                    text = (f"Ein Mann und eine Frau sehen {round_ * len(pages) + k + 2} "
                            "Hunde im Park .")
                    before_runs = page.evaluate("window.__stRuns")
                    area = page.get_by_label(re.compile(r"^Sentence")).first
                    area.fill(text)
                    area.press("Control+Enter")
                    wait_for_run(page, before_runs, timeout_s, sentence=text)
                before_runs, before = page.evaluate("window.__stRuns"), tree_cpu_seconds(pids)
                nav_link(page, info["title"]).click()
                wait_for_run(page, before_runs, timeout_s, title=info["title"])
                page.wait_for_timeout(SETTLE_MS)
                if round_:
                    out[info["title"]].append(tree_cpu_seconds(pids) - before)
        return out
    finally:
        context.close()


def summary(costs: dict[str, list[float]]) -> dict:
    means = {title: statistics.mean(v) for title, v in costs.items()}
    return {"per_page_mean_s": {t: round(m, 4) for t, m in means.items()},
            "mean_over_pages_s": round(statistics.mean(means.values()), 4), "all_s": costs}


def print_table(name: str, result: dict, extra: dict | None = None) -> None:
    print(f"{name}: mean over the pages {result['mean_over_pages_s']:.3f} CPU-s")
    for title, mean in result["per_page_mean_s"].items():
        more = f"   nginx {extra['per_page_mean_s'][title]:.4f}" if extra else ""
        print(f"    {title:45s} {mean:.3f}{more}")


def print_results(results: dict) -> None:
    print(f"load average: {results['load_average_before']:.2f} before, "
          f"{results['load_average_after']:.2f} after")
    print_table("(1) first visit, straight to one app process: the app process's CPU",
                results["first_visit_direct"])
    if "first_visit_nginx" in results:
        print_table("(2) first visit through nginx: both app processes' CPU (and nginx's)",
                    results["first_visit_nginx"], results["first_visit_nginx_nginx_itself"])
    print_table("(3) switch to the page in an open session: the app process's CPU",
                results["switch"])
    print_table("(3') the same, a new sentence typed on the page before (not timed)",
                results["switch_after_new_sentence"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", help="only these pages, by url_path, comma-separated "
                        "(default: every page)")
    parser.add_argument("--visits", type=int, default=3,
                        help="timed visits of each page in each part")
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--skip-proxy", action="store_true",
                        help="leave out (2), the visits through nginx")
    parser.add_argument("--timeout", type=float, default=120,
                        help="bound on every wait, in seconds")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    wanted = set(args.pages.split(",")) if args.pages else None
    pages = [info for info in app_pages() if wanted is None or info["url_path"] in wanted]
    from playwright.sync_api import sync_playwright

    results: dict = {"load_average_before": os.getloadavg()[0]}
    with sync_playwright() as p:
        browser = launch_browser(p)
        try:
            proc, url, _ = start_server(args.checkpoints, timeout_s=args.timeout)
            try:
                app, _ = first_visits(browser, url, pages, [proc.pid], args.visits, args.timeout)
                results["first_visit_direct"] = summary(app)
                results["switch"] = summary(switches(browser, url, pages, [proc.pid], args.visits,
                                                     args.timeout))
                results["switch_after_new_sentence"] = summary(
                    switches(browser, url, pages, [proc.pid], args.visits, args.timeout,
                             typed=True))
            finally:
                stop_server(proc)
        finally:
            browser.close()
        if not args.skip_proxy and nginx_binary():
            browser = launch_browser(p, CHROMIUM_PROXY_ARGS)
            try:
                with tempfile.TemporaryDirectory(prefix="transformer-viz-page-cost-") as workdir, \
                        cluster(Path(workdir), args.checkpoints, args.timeout) as c:
                    app, nginx = first_visits(browser, c.url, pages,
                                              [proc.pid for proc in c.apps.values()],
                                              args.visits, args.timeout, others=c.nginx_workers())
                    results["first_visit_nginx"] = summary(app)
                    results["first_visit_nginx_nginx_itself"] = summary(nginx)
            finally:
                browser.close()
        elif not args.skip_proxy:
            print("(2) left out: no nginx on this machine (apt-get install nginx-light openssl)",
                  file=sys.stderr)
    results["load_average_after"] = os.getloadavg()[0]
    print_results(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
