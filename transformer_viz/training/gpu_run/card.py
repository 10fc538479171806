"""The checkpoint directory a joined direction becomes: the weights as sent (float16, bit for bit),
the metadata its model card is written from (checkpoints.save_checkpoint and checkpoints.cards), and
the language statistics of the prepared training IDs."""

from __future__ import annotations

from pathlib import Path

import torch

from transformer_viz.training.gpu_run.data import LANGS, TRAIN_SPLITS, Prepared


def _shape_and_place(manifest: dict) -> tuple[str, str, bool]:
    """("the paper's base model" or the preset, where it was trained, whether on a GPU)."""
    preset, on_gpu = manifest["run"]["preset"], manifest["device"] != "cpu"
    shape = "the paper's base model" if preset == "base" else f"the {preset} preset"
    where = (f"{manifest['device']}, a borrowed GPU (15 minutes of it in all)" if on_gpu
             else "the CPU (a dry run of the GPU script)")
    return shape, where, on_gpu


def _data(manifest: dict, prepared: Prepared) -> dict:
    from transformer_viz.text.corpora import MULTI30K_CREDIT, TATOEBA_CREDIT

    run, pairs = manifest["run"], prepared.manifest["pairs"]
    return {"Multi30k": f"{MULTI30K_CREDIT}; {pairs['multi30k_train']:,} training pairs × "
                        f"{run['multi30k_copies']} per epoch",
            "Tatoeba": f"{TATOEBA_CREDIT}; {pairs['tatoeba_train']:,} training pairs × "
                       f"{run['tatoeba_copies']} per epoch, {pairs['tatoeba_dev']:,} held out as "
                       "the dev split"}


def _training(manifest: dict, cfg, commands: list[str]) -> dict:
    run = manifest["run"]
    return {"recipe": f"the paper's base model: Adam (0.9, 0.98, 1e-9), lr = {run['lr_factor']} · "
                      f"d_model^-0.5 · min(step^-0.5, step · {run['warmup']}^-1.5), label "
                      f"smoothing {run['label_smoothing']}, dropout {cfg.dropout}, {run['amp']} "
                      "autocast, fused attention (scaled_dot_product_attention)",
            "batch_tokens": manifest["batch_tokens_used"], "minutes": run["minutes"],
            "steps": manifest["steps"], "whole_epochs": manifest["epochs"],
            "selected_weights": "the last (no selection: one fixed budget)",
            "weights_sent": "int8 per row with power-of-two scales, vectors float16 (exact in "
                            "float16)",
            "gpu_command": manifest["command"], "commands": "; ".join(commands)}


def _hardware(manifest: dict, where: str) -> dict:
    return {"GPU": f"{where}, shared by two processes (one per direction)",
            "wall_clock_minutes": round(manifest["train_seconds"] / 60, 1),
            "target_tokens_per_s": manifest["tokens_per_s"], "steps": manifest["steps"],
            "peak_memory_gib": manifest["peak_memory_gib"], "torch": manifest["torch"],
            "seconds": manifest["seconds"]}


def _history_note(manifest: dict) -> str:
    run = manifest["run"]
    every = (f"every {run['eval_every']} steps and at the end" if run["eval_every"]
             else "after each epoch")
    return (f"Greedy BLEU on the first {run['eval_limit']} sentences of each dev set, {every}; "
            "the weights sent are the last (no selection), scored on more sentences above.")


def card_metadata(cfg, prepared: Prepared, manifest: dict, cpu: dict, agreement: dict,
                  commands: list[str]) -> dict:
    """metadata.json of a joined direction: what the model card shows, the scores measured here
    (``cpu``, dev_scores' rows) and the GPU check (``agreement``, the shards, the data's hashes)."""
    src, tgt = manifest["src_lang"], manifest["tgt_lang"]
    minutes = manifest["train_seconds"] / 60
    shape, where, on_gpu = _shape_and_place(manifest)
    scores = [{"split": name, "decoding": "greedy", "sentences": row["sentences"],
               **{k: row[k] for k in ("bleu", "chrf", "bleu_lower_tok", "repetition_rate")}}
              for name, row in cpu.items()]
    return {"name": f"Multi30k + Tatoeba {src}→{tgt}, {shape}, {minutes:.1f} minutes on "
                    f"{'a GPU' if on_gpu else 'the CPU'}",
            "description": f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N} "
                           f"({shape}), trained for {minutes:.1f} minutes on {where}; both "
                           "directions at once.",
            "src_lang": src, "tgt_lang": tgt, "history": manifest["history"],
            "history_note": _history_note(manifest),
            "data": _data(manifest, prepared), "training": _training(manifest, cfg, commands),
            "hardware": _hardware(manifest, where), "scores": scores,
            "gpu_check": {"dev_bleu_agreement": agreement, "shards": manifest["files"],
                          "prepared_data": prepared.manifest["sha256"]}}


def write_checkpoint(directory: Path, model, prepared: Prepared, manifest: dict, cpu: dict,
                     agreement: dict, commands: list[str]) -> None:
    """A complete checkpoint directory: float16 weights (exactly the weights as sent), config,
    tokenizer, decoding defaults (greedy), language statistics, metadata and the model card."""
    from transformer_viz.checkpoints import load_checkpoint, save_checkpoint, state_dict_for_saving
    from transformer_viz.text.decoding_defaults import GenerationDefaults
    from transformer_viz.text.language_stats import build_language_stats, save_language_stats

    meta = card_metadata(model.cfg, prepared, manifest, cpu, agreement, commands)
    save_checkpoint(directory, model, prepared.tokenizer, meta, half=True,
                    generation=GenerationDefaults(num_beams=1))
    ids = {lang: [ids for split in TRAIN_SPLITS for ids in prepared.ids[split][lang]]
           for lang in LANGS}
    save_language_stats(directory, build_language_stats(ids, ["multi30k", "tatoeba"]))
    written = load_checkpoint(directory).model.state_dict()
    for name, tensor in state_dict_for_saving(model).items():
        if not torch.equal(written[name], tensor):
            raise ValueError(f"{directory}: {name} changed when written as float16")
