"""Starting a translation run from a trained checkpoint: a warm start into another vocabulary (the
embedding rows carried over by token), or going on from an exported checkpoint whose training state
is gone."""

from __future__ import annotations

from pathlib import Path

import torch

from transformer_viz.checkpoints import state_dict_for_saving
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.training.common import TrainState


@torch.no_grad()
def continue_from_checkpoint(model: Transformer, run_dir: Path,
                             checkpoint_dir: str | Path, log=print) -> TrainState:
    """Seed a run from an exported checkpoint whose training state is gone: its weights, its epoch
    and step count (so the learning-rate schedule goes on where it stopped) and its history. A
    checkpoint holds no optimizer state, so Adam's moment estimates start again from zero. The
    tokenizer must be the checkpoint's own; :func:`start_run` copies it into the run directory
    before the model is built.
    """
    from transformer_viz.checkpoints import load_checkpoint

    old = load_checkpoint(checkpoint_dir)
    model.load_state_dict(old.model.state_dict())
    training, history = old.metadata.get("training", {}), old.metadata.get("history", [])
    last = history[-1] if history else {}
    scores = [value for key, value in last.items() if key.endswith("_bleu")]
    step = int(training.get("steps", last.get("step", 0)))
    state = TrainState(step=step, epoch=int(last.get("epoch", 0)), history=list(history),
                       elapsed_s=float(last.get("elapsed_s", 0.0)), restart_step=step,
                       best_bleu=sum(scores) / len(scores) if scores else -1.0,
                       best_epoch=int(last.get("epoch", 0)))
    # The checkpoint stays the one to beat: a later epoch replaces it only with a better validation
    # score.
    from safetensors.torch import save_file

    save_file(state_dict_for_saving(model), str(run_dir / "best.safetensors"))
    # ... and one of the epochs the final weight averaging may take in.
    save_file(state_dict_for_saving(model), str(run_dir / f"epoch{state.epoch:03d}.safetensors"))
    log(f"continuing from {checkpoint_dir}: epoch {state.epoch}, step {state.step}; Adam's moments "
        "start at zero")
    return state


@torch.no_grad()
def warm_start(model: Transformer, tokenizer, checkpoint_dir: str | Path, log=print) -> None:
    """Seed ``model`` from a trained checkpoint that may have another vocabulary.

    Every weight whose shape matches is copied. Each embedding row of the new vocabulary is the old
    row of the same token when the old vocabulary has it; otherwise the mean of the old rows that
    the old tokenizer splits the token's text into (so "▁Tom" starts near "▁T" + "om"). The
    embedding is tied to the output projection, so the output layer is carried over the same way.
    """
    from transformer_viz.checkpoints import load_checkpoint

    old = load_checkpoint(checkpoint_dir)
    old_vocab, old_tok = old.tokenizer.get_vocab(), old.tokenizer
    old_embed = old.model.src_embed.weight.float()  # (V_old, d_model)
    new_state = model.state_dict()
    copied = 0
    for name, tensor in old.model.state_dict().items():
        if name in new_state and new_state[name].shape == tensor.shape and "embed" not in name:
            new_state[name].copy_(tensor)
            copied += 1
    rows, exact = [], 0
    for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1]):
        if token in old_vocab:
            rows.append(old_embed[old_vocab[token]])
            exact += 1
            continue
        text = token.replace("▁", " ")
        ids = old_tok(text, add_special_tokens=False)["input_ids"] or [old.config.unk_id]
        rows.append(old_embed[ids].mean(dim=0))
    # tied: tgt_embed and the output projection share it
    model.src_embed.weight.copy_(torch.stack(rows))
    log(f"warm start from {checkpoint_dir}: {copied} tensors copied; {exact} of {len(rows)} "
        f"embedding rows taken as they were, the rest averaged from their old subwords")
