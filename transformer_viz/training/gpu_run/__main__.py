"""``python -m transformer_viz.training.gpu_run STAGE``: see the package's docstring."""

import os

from transformer_viz.training.gpu_run.cli import main

if __name__ == "__main__":
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "32")
    raise SystemExit(main())
