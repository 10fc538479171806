"""What a new sentence costs each page, for any checkpoint the sidebar offers (made for one of the
paper's base size): every page of the navigation in turn, on its first step, through
streamlit.testing.v1.AppTest in this process. Per page: one run with a first sentence (the model
loads, the page's caches fill: not counted), then --sentences new sentences typed into the sidebar,
each timed from the sentence's change to the end of the script run: the sentence's translation and
trace, shared by every page (engine.run_sentence), the page's own work and AppTest's overhead.
Median and largest, wall clock and this process's CPU seconds (time.process_time: on a machine busy
with other jobs the wall clock includes waiting for a core, the CPU time does not).

With --every-step, each page's other steps too (its tabs, the Lecture's steps, Practice's
exercises), each opened by its link (step=N, ex=N) and timed on the same sentences.

Target (the paper-size model): a median of at most 1 s per page. One torch thread, as the server
runs (app/threads.py). The sentences are Multi30k's val split, each new to the process
(the sentence's run is cached per process).

    .venv/bin/python bench/new_sentence_speed.py --checkpoints checkpoints:DIR --name base-de-en
    .venv/bin/python bench/new_sentence_speed.py --name de-en --sentences 3 --json out.json

--checkpoints is the app's own setting (TRANSFORMER_VIZ_CHECKPOINTS: roots separated by ':'), so
the pages that load other models (RNNs, GPT, ViT, DETR) find the shipped ones beside DIR's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from transformer_viz.app.catalogue import CHECKPOINTS_ENV  # noqa: E402
from transformer_viz.app.navigation import PAGES  # noqa: E402

TARGET_S = 1.0


def open_page(name: str, page: str, first: str, step: tuple[str, int] | None = None):
    """An AppTest on ``page`` after a first run with the sentence ``first`` (the model loads, the
    caches fill: not counted); ``step``: (the URL's parameter, its value), the step to open."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params.update({"ckpt": name, "s": first, **({step[0]: str(step[1])} if step else {})})
    at.switch_page(page)  # the link opens the page itself: its step is the page's
    at.run()
    return at


def page_steps(at) -> tuple[str, int] | None:
    """(the URL's parameter, how many) for a page with steps: tabs (step=), the Lecture's steps
    (step=), Practice's exercises (ex=); None for a page without."""
    if len(at.tabs):
        return "step", len(at.tabs)
    keys = {box.key: box for box in at.selectbox}
    if "lecture_jump" in keys:
        return "step", len(keys["lecture_jump"].options)
    if "practice_jump" in keys:
        return "ex", len(keys["practice_jump"].options)
    return None


def timed_reruns(at, sentences: list[str]) -> tuple[list[float], list[float], str | None]:
    """Each sentence typed into the sidebar and its rerun timed: wall-clock and CPU seconds, and the
    first exception's text (None when there was none), after which it stops."""
    wall, cpu = [], []
    for sentence in sentences:
        at.text_area(key="sentence").set_value(sentence)
        t, c = time.perf_counter(), time.process_time()
        at.run()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        if at.exception:
            return wall, cpu, at.exception[0].value[:300]
    return wall, cpu, None


def rerun_times(at, sentences: list[str]) -> dict:
    """The median and largest rerun of :func:`timed_reruns`, or the error."""
    if at.exception:
        return {"error": at.exception[0].value[:300]}
    wall, cpu, error = timed_reruns(at, sentences)
    if error:
        return {"error": error}
    return {"median_s": statistics.median(wall), "max_s": max(wall),
            "median_cpu_s": statistics.median(cpu), "charts": len(at.get("plotly_chart"))}


def row(title: str, r: dict) -> str:
    if "error" in r:
        return f"| {title} | error: {r['error'][:80]} | | | |"
    return (f"| {title} | {r['median_s']:.2f} s | {r['max_s']:.2f} s | {r['median_cpu_s']:.2f} s "
            f"| {r['charts']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", default=str(ROOT / "checkpoints"),
                        help="the app's checkpoint roots, separated by ':'")
    parser.add_argument("--name", required=True, help="the checkpoint the sidebar picks")
    parser.add_argument("--sentences", type=int, default=5, help="new sentences a page")
    parser.add_argument("--data", default=os.environ.get("TRANSFORMER_VIZ_DATA"),
                        help="Multi30k's folder (default $TRANSFORMER_VIZ_DATA)")
    parser.add_argument("--pages", nargs="*", help="only these page files (default all)")
    parser.add_argument("--every-step", action="store_true",
                        help="also each page's other steps (tabs, the Lecture's steps, "
                        "Practice's exercises), each with the page's sentences")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    os.environ[CHECKPOINTS_ENV] = args.checkpoints
    if args.data:
        os.environ["TRANSFORMER_VIZ_DATA"] = args.data

    from transformer_viz.app import about
    from transformer_viz.checkpoints import CheckpointError
    from transformer_viz.text.corpora import read_any_split

    try:  # the app's own listing and reading: the name the sidebar offers
        cfg, metadata = about.checkpoint_info(args.name)
    except CheckpointError as exc:
        raise SystemExit(f"{exc} in {args.checkpoints}") from None
    src, tgt = metadata.get("src_lang", "de"), metadata.get("tgt_lang", "en")
    pages = [p for p in PAGES if not args.pages or p.file in args.pages]
    # a new sentence for every rerun: the sentence's run is cached per process
    fresh = iter([source for source, _ in read_any_split("val", src, tgt)])
    first = next(fresh)
    print(f"{args.name}: d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N}; "
          f"{args.sentences} new sentences a page ({src}, Multi30k val)", flush=True)
    print("| page | median | largest | median CPU | charts |")
    print("|---|---|---|---|---|")
    results = {}
    for page in pages:
        at = open_page(args.name, page.file, first)
        steps = None if at.exception else page_steps(at)
        r = results[page.title] = rerun_times(at, list(islice(fresh, args.sentences)))
        print(row(page.title, r), flush=True)
        if not args.every_step or steps is None:
            continue
        for number in range(2, steps[1] + 1):
            title = f"{page.title}, {steps[0]}={number}"
            r = results[title] = rerun_times(open_page(args.name, page.file, first,
                                                       (steps[0], number)),
                                             list(islice(fresh, args.sentences)))
            print(row(title, r), flush=True)
    timed = {t: r for t, r in results.items() if "error" not in r}
    over = [t for t, r in timed.items() if r["median_s"] > TARGET_S]
    print(f"\n{len(timed)} of {len(results)} pages and steps ran; median over {TARGET_S:.0f} s: "
          f"{', '.join(over) if over else 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"checkpoint": args.name, "config": vars(cfg),
                                               "sentences": args.sentences,
                                               "pages": results}, indent=1))


if __name__ == "__main__":
    main()
