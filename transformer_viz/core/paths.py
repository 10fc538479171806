"""Where the repository's own files are: the shipped checkpoints live beside the package, not inside
it.

From a clone (``pip install -e .`` or no install at all) they are the repository's ``checkpoints/``.
A wheel (``pip install .``) installs the same directories as data files under
``<prefix>/share/transformer-viz/checkpoints`` (pyproject.toml's ``[tool.setuptools.data-files]``);
:func:`find_checkpoints_dir` looks there when the package does not sit in a clone.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from pathlib import Path

# transformer_viz/core/paths.py -> the repository
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# relative to an install prefix
INSTALLED_CHECKPOINTS = Path("share") / "transformer-viz" / "checkpoints"


def checkpoint_dir_candidates() -> list[Path]:
    """Where the shipped checkpoints may be, in order: the repository's checkpoints/, then the data
    directory of each prefix a wheel may have been installed into (the environment's, the
    user's)."""
    prefixes = [sys.prefix, sysconfig.get_path("data"), getattr(site, "USER_BASE", None) or ""]
    return [PROJECT_ROOT / "checkpoints"] + [Path(p) / INSTALLED_CHECKPOINTS
                                             for p in dict.fromkeys(prefixes) if p]


def find_checkpoints_dir() -> Path:
    """The first candidate that exists; else the repository's path,
    so that a message names where they belong."""
    return next((p for p in checkpoint_dir_candidates() if p.is_dir()),
                PROJECT_ROOT / "checkpoints")


CHECKPOINTS_DIR = find_checkpoints_dir()
