"""Server time of the "Beyond text: a Vision Transformer" page for a NEW held-out digit, model cached.

Streamlit's AppTest runs the app in this process. The page is opened (loading the ViT and the digits), then
for each of its steps a series of held-out digits not shown before is chosen: each rerun runs the ViT on the
digit (one traced forward pass) and builds that step's figures. The median and the maximum are reported per
step. Target: <= 300 ms.

    .venv/bin/python bench/vit_page_speed.py                       # checkpoints/ of the project
    .venv/bin/python bench/vit_page_speed.py --checkpoints DIR --digits 8
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--digits", type=int, default=8, help="new digits timed per step")
    args = parser.parse_args()
    os.environ["TRANSFORMER_VIZ_CHECKPOINTS"] = str(args.checkpoints)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("app_pages/vit.py")
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    labels = [tab.label for tab in at.tabs]
    results, used = {}, 1
    for label in labels:
        at.session_state["vit_step"] = label
        at.run()  # this step's figures for the current digit
        times = []
        for _ in range(args.digits):
            at.number_input(key="vit_digit").set_value(used)
            used += 1
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
            if at.exception:
                raise SystemExit(at.exception[0].value)
        results[label] = {"median_ms": round(1000 * statistics.median(times)), "max_ms": round(1000 * max(times))}
    print(json.dumps({"first_open_s": round(first, 2), "new_digit_per_step": results}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
