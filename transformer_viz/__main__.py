"""``python -m transformer_viz``: the command line (transformer_viz.cli)."""

from transformer_viz.cli import main

raise SystemExit(main())
