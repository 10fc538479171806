"""Server time of the "Beyond text: a Detection Transformer" page for a NEW canvas, model cached.

Streamlit's AppTest runs the app in this process. The page is opened (loading the DETR and the
digits), then for each of its steps a series of canvas seeds not shown before is chosen: each rerun
draws the canvas, runs the DETR on it (one traced forward pass) and builds that step's figures. The
median and the maximum are reported per step. Target: <= 300 ms.

    .venv/bin/python bench/detr_page_speed.py                      # checkpoints/ of the project
    .venv/bin/python bench/detr_page_speed.py --checkpoints DIR --canvases 8
"""

from page_steps import main

if __name__ == "__main__":
    main(__doc__, "transformer_viz/app/pages/detr.py", "detr_step", "canvases", 8,
         lambda at, k: at.number_input(key="detr_seed").set_value(1000 + k))
