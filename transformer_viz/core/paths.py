"""Where the repository's own files are: the shipped checkpoints live beside the package, not inside it."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # transformer_viz/core/paths.py -> the repository
CHECKPOINTS_DIR = PROJECT_ROOT / "checkpoints"
