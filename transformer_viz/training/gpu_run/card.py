"""The checkpoint directory a joined direction becomes: the weights as sent (float16, bit for bit),
the metadata its model card is written from (checkpoints.save_checkpoint and checkpoints.cards), and
the language statistics of the prepared training IDs."""

from __future__ import annotations

from pathlib import Path

import torch

from transformer_viz.training.gpu_run.compiling import SCOPES
from transformer_viz.training.gpu_run.data import LANGS, TRAIN_SPLITS, Prepared
from transformer_viz.training.gpu_run.resume import (sessions, steps_total, train_seconds_total,
                                                     whole_history)


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
    run, init = manifest["run"], manifest.get("init_from")
    recipe = (f"the paper's base model: Adam (0.9, 0.98, 1e-9), lr = {run['lr_factor']} · "
              f"d_model^-0.5 · min(step^-0.5, step · {run['warmup']}^-1.5), label "
              f"smoothing {run['label_smoothing']}, dropout {cfg.dropout}, {run['amp']} "
              "autocast, fused attention (scaled_dot_product_attention)")
    if run.get("cooldown_from"):  # manifests written before the cool-down have no such key
        recipe += (f"; from {run['cooldown_from']:.0%} of the {run['minutes']}-minute budget on, "
                   "the learning rate falling linearly to zero at its end")
    late = manifest.get("late_dropout")  # None where off; no key in older manifests
    if late:
        recipe += (f"; dropout {late['rate']} from step {late['from_step']} on "
                   f"({run['late_dropout_from']:.0%} of the budget)")
    if run.get("rollback_above"):
        back = [f"at step {row['step']} to step {row['rolled_back_to']}"
                for row in manifest["history"] if "rolled_back_to" in row]
        recipe += (f"; at an evaluation whose Multi30k val loss exceeded the lowest so far by "
                   f"more than {run['rollback_above']}, the weights and Adam's state of that "
                   "evaluation put back and the learning rate halved ("
                   + ("; ".join(back) if back else "never needed") + ")")
    if init:
        recipe += (f"; going on from the weights returned at step {init['steps']} (int8, as sent), "
                   f"the schedule going on from that step, Adam's moments from zero and the "
                   f"learning rate ramped up again over {run['rewarmup']} steps")
    return {"recipe": recipe,
            "batch_tokens": manifest["batch_tokens_used"], "minutes": run["minutes"],
            "steps": manifest["steps"], "steps_total": steps_total(manifest),
            "whole_epochs": manifest["epochs"],
            "selected_weights": _selected_weights(manifest),
            "weights_sent": "int8 per row with power-of-two scales, vectors float16 (exact in "
                            "float16)",
            "gpu_command": manifest["command"], "commands": "; ".join(commands)}


def _averaged(manifest: dict) -> bool:
    """Whether an average was scored beside the last weights (and so a choice made)."""
    return len((manifest.get("selection") or {}).get("mean_dev_bleu", {})) > 1


def _selected_weights(manifest: dict) -> str:
    """Which weights were sent: the last, or the average of those at the last evaluations where
    it scored better on the dev sets (gpu_run train --average-from)."""
    selection = manifest.get("selection") or {}
    bleu = selection.get("mean_dev_bleu", {})
    if not _averaged(manifest):
        return "the last (no selection: one fixed budget)"
    steps = ", ".join(str(step) for step in selection["average_steps"])
    sent = f"the average of the weights at steps {steps}" if (
        selection["sent"] == "average") else "the last"
    return (f"{sent}: of the last weights (mean greedy dev BLEU {bleu['last']:.2f}) and the "
            f"average of those at steps {steps} ({bleu['average']:.2f}), both int8 as sent and "
            f"scored on the first {manifest['run']['final_limit']} sentences of each dev set, "
            "the higher")


def _hardware(manifest: dict, where: str) -> dict:
    alone = manifest["run"]["memory_fraction"] > 0.5  # one direction had the GPU to itself
    return {"GPU": f"{where}, " + ("one process (one direction)" if alone else
                                   "shared by two processes (one per direction)"),
            "wall_clock_minutes": round(manifest["train_seconds"] / 60, 1),
            "target_tokens_per_s": manifest["tokens_per_s"], "steps": manifest["steps"],
            "peak_memory_gib": manifest["peak_memory_gib"], "torch": manifest["torch"],
            "compiled": _compiled(manifest), "seconds": manifest["seconds"],
            "sessions": _session_lines(manifest)}


def _compiled(manifest: dict) -> str:
    """Whether the updates ran compiled (gpu_run train --compile), and what became of it."""
    record = manifest.get("compile")
    if not record:
        return "no (eager PyTorch)"
    if not record["compiled"]:
        return f"compiling failed ({record.get('failed')}), so trained uncompiled"
    # manifests from before the scope was a choice compiled the whole forward
    what = SCOPES[record.get("scope", "model")]
    text = (f"torch.compile ({what}), dynamic shapes, compiled in {record['seconds']} s within "
            "the budget")
    if record.get("failed"):
        text += f"; a compiled update failed ({record['failed']}), uncompiled from there"
    return text


def _session_lines(manifest: dict) -> str:
    """Every GPU session that trained these weights: device, updates, minutes, command."""
    return " | ".join(
        f"session {i}: {row.get('device')}, {row.get('steps')} steps (to step "
        f"{row.get('steps_total')}), {row.get('train_seconds', 0) / 60:.1f} minutes, "
        f"{row.get('tokens_per_s')} target tokens/s, `{row.get('command')}`"
        for i, row in enumerate(sessions(manifest), start=1))


def _sessions_phrase(manifest: dict) -> str:
    n = len(sessions(manifest))
    return f" in {n} sessions, the last going on from the weights the one before returned" if (
        n > 1) else "; both directions at once" if manifest["run"]["memory_fraction"] <= 0.5 else ""


def _history_note(manifest: dict) -> str:
    run = manifest["run"]
    every = (f"every {run['eval_every']} steps and at the end" if run["eval_every"]
             else "after each epoch")
    sent = ("the weights sent are chosen as Training says (selected_weights)"
            if _averaged(manifest) else "the weights sent are the last (no selection)")
    note = (f"Greedy BLEU on the first {run['eval_limit']} sentences of each dev set, {every}; "
            f"{sent}, scored on more sentences above.")
    if manifest.get("init_from"):
        note += (" The rows of all sessions; a session going on from returned weights first "
                 "scores them as loaded (no training loss; minutes count from the first session).")
    return note


def card_metadata(cfg, prepared: Prepared, manifest: dict, cpu: dict, agreement: dict,
                  commands: list[str]) -> dict:
    """metadata.json of a joined direction: what the model card shows, the scores measured here
    (``cpu``, dev_scores' rows) and the GPU check (``agreement``, the shards, the data's hashes)."""
    src, tgt = manifest["src_lang"], manifest["tgt_lang"]
    minutes = train_seconds_total(manifest) / 60
    shape, where, on_gpu = _shape_and_place(manifest)
    scores = [{"split": name, "decoding": "greedy", "sentences": row["sentences"],
               **{k: row[k] for k in ("bleu", "chrf", "bleu_lower_tok", "repetition_rate")}}
              for name, row in cpu.items()]
    return {"name": f"Multi30k + Tatoeba {src}→{tgt}, {shape}, {minutes:.1f} minutes on "
                    f"{'a GPU' if on_gpu else 'the CPU'}",
            "description": f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N} "
                           f"({shape}), trained for {minutes:.1f} minutes on {where}"
                           f"{_sessions_phrase(manifest)}.",
            "src_lang": src, "tgt_lang": tgt, "history": whole_history(manifest),
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
    from transformer_viz.generation.decoding_defaults import GenerationDefaults
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
