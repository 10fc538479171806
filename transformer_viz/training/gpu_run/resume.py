"""Going on from a direction's returned weights in a later GPU session (``train --init-from``): the
previous manifest and its shards read back and checked, and the record that runs across sessions
(the whole history, one row of facts per session) that the new manifest and the model card keep.

Imported by the GPU process: json, pathlib and checkpoints.compact only."""

from __future__ import annotations

import json
from pathlib import Path

from transformer_viz.training.gpu_run.data import MANIFEST_SUFFIX

SESSION_KEYS = ("command", "device", "torch", "steps", "steps_total", "train_seconds",
                "tokens_per_s", "batch_tokens_used", "peak_memory_gib", "seconds")


class InitRefused(ValueError):
    """The folder given to --init-from cannot be continued from; the message is one line."""


def steps_total(manifest: dict) -> int:
    """Updates since the weights were initialised at random (a first run's manifest has only
    ``steps``)."""
    return int(manifest.get("steps_total", manifest["steps"]))


def train_seconds_total(manifest: dict) -> float:
    return float(manifest.get("train_seconds_total", manifest["train_seconds"]))


def whole_history(manifest: dict) -> list[dict]:
    """Every history row since the first session, in step order."""
    return list(manifest.get("init_from", {}).get("history", [])) + list(manifest["history"])


def sessions(manifest: dict) -> list[dict]:
    """One row per GPU session that trained these weights, the first first."""
    if "sessions" in manifest:
        return list(manifest["sessions"])
    # A first run's manifest predates the list: its one session is its top-level facts.
    return [{k: manifest[k] for k in SESSION_KEYS if k in manifest}
            | {"steps_total": steps_total(manifest)}]


def load_init(directory: str | Path, direction: str) -> tuple[dict, dict]:
    """(previous manifest, its compact tensors) from ``directory``, every shard checked against its
    SHA-256 before anything is loaded. Raises InitRefused with a one-line reason."""
    from transformer_viz.checkpoints.compact import HashMismatch, read_shards

    directory = Path(directory)
    path = directory / f"{direction}{MANIFEST_SUFFIX}"
    if not path.is_file():
        raise InitRefused(f"--init-from {directory}: no {path.name} there")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("direction") != direction:
        raise InitRefused(f"{path} is {manifest.get('direction')}, not {direction}")
    try:
        compact = read_shards(directory, manifest["files"])
    except HashMismatch as exc:
        raise InitRefused(f"--init-from refused: {exc}") from None
    return manifest, compact


# Regularisation only: no weight depends on them, so going on may change them (the base model
# overfitted at 0.1: tools/gpu/README.md, the run of 2026-11-28).
MAY_CHANGE = ("dropout", "attn_dropout")


def check_compatible(previous: dict, config: dict, data_sha256: dict) -> None:
    """Refuse to go on with another model shape or other prepared data (other token IDs)."""
    config = json.loads(json.dumps(config))  # tuples read back from JSON are lists
    keys = set(config) | set(previous["config"])
    changed = sorted(k for k in keys - set(MAY_CHANGE)
                     if previous["config"].get(k) != config.get(k))
    if changed:
        raise InitRefused(f"--init-from: the model config differs in {changed}")
    if previous["data"] != data_sha256:
        raise InitRefused("--init-from: those weights were trained on other prepared data")


def init_record(directory: str | Path, previous: dict) -> dict:
    """What the new manifest keeps of the run it went on from."""
    from transformer_viz.checkpoints.compact import sha256

    path = Path(directory) / f"{previous['direction']}{MANIFEST_SUFFIX}"
    return {"directory": str(directory), "manifest_sha256": sha256(path),
            "steps": steps_total(previous), "epochs": previous["epochs"],
            "train_seconds": train_seconds_total(previous), "history": whole_history(previous),
            "files": previous["files"], "dev_scores_as_sent": {
                name: {k: v for k, v in row.items() if k != "hypotheses"}
                for name, row in previous["dev_scores_as_sent"].items()},
            "sessions": sessions(previous)}
