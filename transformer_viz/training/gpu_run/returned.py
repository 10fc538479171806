"""Back on the CPU: the returned shards checked against their manifests' SHA-256 hashes, the weights
restored and scored again here, compared with the GPU's scores, and written as checkpoints."""

from __future__ import annotations

import json
import time
from pathlib import Path

from transformer_viz.training.gpu_run.card import write_checkpoint
from transformer_viz.training.gpu_run.data import MANIFEST_SUFFIX, Prepared, dev_scores

BLEU_TOLERANCE = 0.5  # GPU and CPU float32 kernels round differently; a near tie can flip a token


def agreement_with_gpu(cpu: dict, as_sent: dict) -> dict[str, dict]:
    """Dev set -> BLEU here and on the GPU, their difference and how many translations differ."""
    agreement = {}
    for name, row in cpu.items():
        gpu_row = as_sent[name]
        differ = sum(a != b for a, b in zip(row["hypotheses"], gpu_row["hypotheses"]))
        agreement[name] = {"gpu_bleu": gpu_row["bleu"], "cpu_bleu": row["bleu"],
                           "difference": row["bleu"] - gpu_row["bleu"],
                           "sentences": row["sentences"], "different_translations": differ}
    return agreement


def _restored(manifest: dict, compact: dict):
    """The model of the manifest's config with the compact weights put back, in eval mode."""
    from transformer_viz.checkpoints.compact import dequantise
    from transformer_viz.models.transformer.config import ModelConfig
    from transformer_viz.models.transformer.model import Transformer

    model = Transformer(ModelConfig.from_dict(manifest["config"]))
    model.load_state_dict(dequantise(compact), strict=False)
    model.eval()
    return model


def join(returned: str | Path, data: str | Path, out_root: str | Path,
         commands: list[str] | None = None, tolerance: float = BLEU_TOLERANCE,
         name_prefix: str = "base-", log=print) -> dict[str, dict]:
    """For every manifest in ``returned`` whose shards came back: check the hashes, restore the
    weights, score them again here, compare with the GPU's scores and write
    ``out_root/<prefix><direction>``. Returns direction -> report (a direction whose shards are
    missing is reported, not written)."""
    from transformer_viz.checkpoints.compact import HashMismatch, read_shards

    returned, prepared = Path(returned), Prepared.load(data)
    reports = {}
    for path in sorted(returned.glob(f"*{MANIFEST_SUFFIX}")):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        direction = manifest["direction"]
        if manifest["data"] != prepared.manifest["sha256"]:
            raise ValueError(f"{path} was trained on other prepared data than {prepared.directory}")
        try:
            compact = read_shards(returned, manifest["files"])
        except HashMismatch as exc:
            reports[direction] = {"written": False, "why": str(exc)}
            log(f"{direction}: not written: {exc}")
            continue
        model = _restored(manifest, compact)
        t0 = time.time()
        limit = manifest["run"]["final_limit"]
        cpu = dev_scores(model, prepared, manifest["src_lang"], manifest["tgt_lang"], limit)
        agreement = agreement_with_gpu(cpu, manifest["dev_scores_as_sent"])
        log(f"{direction}: dev BLEU here vs on the GPU ({time.time() - t0:.0f} s): "
            + json.dumps(agreement))
        worst = max(abs(a["difference"]) for a in agreement.values())
        if worst > tolerance:
            raise ValueError(f"{direction}: dev BLEU here differs from the GPU's by {worst:.2f} "
                             f"(tolerance {tolerance}): these are not the weights that were scored")
        directory = Path(out_root) / f"{name_prefix}{direction}"
        write_checkpoint(directory, model, prepared, manifest, cpu, agreement, commands or [])
        reports[direction] = {"written": True, "directory": str(directory), "agreement": agreement}
    return reports
