"""Server time of the "Beyond text: a Vision Transformer" page for a NEW held-out digit, model
cached.

Streamlit's AppTest runs the app in this process. The page is opened (loading the ViT and the
digits), then for each of its steps a series of held-out digits not shown before is chosen: each
rerun runs the ViT on the digit (one traced forward pass) and builds that step's figures. The median
and the maximum are reported per step. Target: <= 300 ms.

    .venv/bin/python bench/vit_page_speed.py                       # checkpoints/ of the project
    .venv/bin/python bench/vit_page_speed.py --checkpoints DIR --digits 8
"""

from page_steps import main

if __name__ == "__main__":
    main(__doc__, "transformer_viz/app/pages/vit.py", "vit_step", "digits", 8,
         lambda at, k: at.number_input(key="vit_digit").set_value(k + 1))
