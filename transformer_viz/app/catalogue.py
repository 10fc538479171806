"""Finding checkpoints on disk: the roots the app looks in, and the checkpoint directories of each
model family found there, by name. Pages choose a checkpoint by name, never by a typed path.

Reads config.json only (no torch, no Streamlit). A listing is reused for a few seconds while no root
changes (:data:`LISTING_TTL_S`): every script run asks for it, often several times.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from transformer_viz.checkpoints import CONFIG, TOKENIZER_DIR, WEIGHTS, checkpoint_arch
from transformer_viz.core.paths import CHECKPOINTS_DIR
from transformer_viz.models.registry import DEFAULT_ARCH, architecture

# checkpoint roots set by the operator (os.pathsep-separated)
CHECKPOINTS_ENV = "TRANSFORMER_VIZ_CHECKPOINTS"
# A listing reads every candidate's config.json and resolves a dozen paths per directory: far more
# than a script run's own work when the sidebar, the page and its notes each ask. A directory added
# to or removed from a root changes the root's modification time and shows at once; a change inside
# a checkpoint directory shows within this many seconds.
LISTING_TTL_S = 10.0

# A transformers Marian directory keeps its tokenizer files beside the weights
# (checkpoints/marian.py).
MARIAN_FILES = ("source.spm", "target.spm", "vocab.json", "tokenizer.json", "tokenizer_config.json")


def checkpoint_roots() -> list[Path]:
    """The shipped checkpoints (the repository's checkpoints/, or where the wheel installed them:
    core.paths), or instead the directories the operator names in the environment."""
    configured = os.environ.get(CHECKPOINTS_ENV, "")
    if configured:
        return [Path(p) for p in configured.split(os.pathsep) if p]
    return [CHECKPOINTS_DIR]


def _inside(path: Path, real_root: Path) -> bool:
    real = path.resolve()
    return real == real_root or real_root in real.parents


def _safe_name(name: str) -> bool:
    # Hidden directories and anything path-like are never offered (names also reach the URL).
    return bool(name) and not name.startswith(".") and ".." not in name and name.isprintable()


def _listed(path: Path, real_root: Path, arches: set[str]) -> bool:
    """Whether a candidate directory is a checkpoint of one of ``arches`` whose files all stay
    inside the root."""
    parts = [path / CONFIG, path / WEIGHTS, path / TOKENIZER_DIR] + [path / name
                                                                     for name in MARIAN_FILES]
    return (path / CONFIG).is_file() and all(not p.exists() or _inside(p, real_root)
                                             for p in parts) \
        and checkpoint_arch(path) in arches


# (model family, roots) -> (time.monotonic() when listed, the roots' modification times then, the
# listing)
_LISTINGS: dict[tuple[str, tuple[Path, ...]], tuple[float, tuple, dict[str, Path]]] = {}


def list_checkpoints(arch: str = DEFAULT_ARCH) -> dict[str, Path]:
    """Checkpoint name -> directory, for one model family (a key of models.registry.ARCHITECTURES):
    by default the Transformers (the sidebar's models, which every page but a few assumes; a
    transformers Marian directory is one), else the models that one page loads itself ("rnn", "vit",
    "detr"); config.json says which (see :func:`~transformer_viz.checkpoints.checkpoint_arch`). Only
    directories inside the configured roots; a symlink that leads outside its root (the directory
    itself, or its config, weights or tokenizer) is ignored, as are hidden names and names with
    "..". An unreadable config.json counts as the default family, so that the sidebar lists it and
    loading it says what is wrong.

    The listing is read again when a root's modification time changed (a directory added, removed or
    renamed) or when it is :data:`LISTING_TTL_S` seconds old; until then the same listing is
    returned.
    """
    roots = tuple(checkpoint_roots())
    stamp, now = _roots_stamp(roots), time.monotonic()
    kept = _LISTINGS.get((arch, roots))
    if kept is None or kept[1] != stamp or now - kept[0] >= LISTING_TTL_S:
        kept = (now, stamp, _scan(arch, roots))
        _LISTINGS[(arch, roots)] = kept
    return dict(kept[2])  # a copy: a caller may change its own


def _roots_stamp(roots: tuple[Path, ...]) -> tuple:
    """The roots' modification times (None for one that cannot be read): a new or removed entry
    changes it."""
    stamp = []
    for root in roots:
        try:
            stamp.append(root.stat().st_mtime_ns)
        except OSError:
            stamp.append(None)
    return tuple(stamp)


def _scan(arch: str, roots: tuple[Path, ...]) -> dict[str, Path]:
    """The listing itself, read from disk (see :func:`list_checkpoints`)."""
    arches = {architecture(arch).name} | ({""} if arch == DEFAULT_ARCH else set())
    found: dict[str, Path] = {}
    for root in roots:
        try:
            if not root.is_dir():
                continue
            real_root = root.resolve()
            if (root / CONFIG).is_file():
                candidates = [root]
            else:
                candidates = sorted(p for p in root.iterdir() if p.is_dir())
            for path in candidates:
                if path.name not in found and _safe_name(path.name) and _inside(path, real_root) \
                        and _listed(path, real_root, arches):
                    found[path.name] = path.resolve()
        except OSError:  # an unreadable root or a symlink loop: skip it, the others still count
            continue
    return found


def checkpoint_names(arch: str) -> list[str]:
    """The names of one family's checkpoints, sorted."""
    return sorted(list_checkpoints(arch))
