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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from page_steps import time_new_inputs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--digits", type=int, default=8, help="new digits timed per step")
    args = parser.parse_args()
    os.environ["TRANSFORMER_VIZ_CHECKPOINTS"] = str(args.checkpoints)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    timed = time_new_inputs(at, "app_pages/vit.py", "vit_step",
                            lambda at, k: at.number_input(key="vit_digit").set_value(k + 1), args.digits)
    print(json.dumps({"first_open_s": timed["first_open_s"], "new_digit_per_step": timed["per_step"]}, indent=1,
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
