"""Server time of the "Before the Transformer: RNNs" page for a NEW sentence, models cached.

Streamlit's AppTest runs the app in this process. The page is opened (loading the three models, the
Transformer and the two RNNs, and measuring the time per sentence once), then for each of its steps a
series of sentences never seen before is typed: each rerun runs both RNNs and the Transformer on the
sentence (greedy translation + traced pass) and builds that step's figures. The median and the maximum
are reported per step. Target: <= 300 ms.

    .venv/bin/python bench/rnn_page_speed.py                       # checkpoints/ of the project
    .venv/bin/python bench/rnn_page_speed.py --checkpoints DIR --sentences 8
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

SENTENCES = [
    "Ein Mann fährt mit dem Fahrrad durch die Stadt.", "Zwei Hunde spielen im Schnee.",
    "Eine Frau liest ein Buch auf einer Bank im Park.", "Kinder spielen am Strand mit einem roten Ball.",
    "Ein Junge springt von einem Felsen ins Wasser.", "Drei Männer arbeiten auf einer Baustelle.",
    "Eine Gruppe von Menschen steht vor einem großen Gebäude.", "Ein kleines Mädchen isst ein Eis.",
    "Ein Hund rennt über eine grüne Wiese.", "Zwei Frauen unterhalten sich in einem Café.",
    "Ein Mann in einem blauen Hemd spielt Gitarre auf der Straße.", "Die Katze schläft auf dem Sofa.",
]


PREFIXES = ["", "Heute: ", "Hier: ", "Dort: ", "Gestern: ", "Morgen: "]


def new_sentence(k: int) -> str:
    """The k-th sentence, different from every other one (so no cache has its run): 72 of them."""
    return PREFIXES[k // len(SENTENCES) % len(PREFIXES)] + SENTENCES[k % len(SENTENCES)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--sentences", type=int, default=6, help="new sentences timed per step")
    args = parser.parse_args()
    os.environ["TRANSFORMER_VIZ_CHECKPOINTS"] = str(args.checkpoints)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params["s"] = "Komm her bitte."
    at.run()
    at.switch_page("app_pages/rnn.py")
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    labels = [tab.label for tab in at.tabs]
    results, used = {}, 0
    for label in labels:
        at.session_state["rnn_step"] = label
        at.run()  # this step's figures for the current sentence
        times = []
        for _ in range(args.sentences):
            at.text_area(key="sentence").set_value(new_sentence(used))
            used += 1
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
            if at.exception:
                raise SystemExit(at.exception[0].value)
        results[label] = {"median_ms": round(1000 * statistics.median(times)), "max_ms": round(1000 * max(times))}
    print(json.dumps({"first_open_s": round(first, 2), "new_sentence_per_step": results}, indent=1,
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
