"""Training on sentence pairs with the paper's recipe, at small scale.

Adam (β1 0.9, β2 0.98, ε 1e-9); learning rate = factor · d_model^-0.5 · min(step^-0.5, step ·
warmup^-1.5); label smoothing; dropout; batches by token count, bucketed by length; shared
embeddings. Each epoch logs training loss, validation loss and validation BLEU; the best epoch by
validation BLEU is kept, and training stops early when it stops improving. Everything needed to
resume is saved after every epoch, as safetensors + JSON (no pickle). CUDA with mixed precision is
used when present; several processes through ``torchrun`` (DistributedDataParallel) when launched
that way.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from transformer_viz.checkpoints import save_checkpoint, state_dict_for_saving
from transformer_viz.models.losses import label_smoothed_loss
from transformer_viz.models.transformer.config import ModelConfig, preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.corpora import Batch, encode_pairs, make_batch, read_split, token_batches
from transformer_viz.training.common import (Distributed, TrainState, attention_kernel, autocast,
                                             average_weights, load_train_state, save_train_state,
                                             validation_bleu, validation_loss)
from transformer_viz.training.schedule import DEFAULT_WARMUP, learning_rate
from transformer_viz.training.warm_start import continue_from_checkpoint, warm_start


@dataclass
class TrainConfig:
    src_lang: str = "de"
    tgt_lang: str = "en"
    config: str = "small"  # model preset
    model_overrides: dict = field(default_factory=dict)
    vocab_size: int = 8000
    batch_tokens: int = 4096  # padded source + target tokens per batch
    epochs: int = 100
    # stop (after the current epoch) when this much wall-clock has passed; 0 = no limit
    max_minutes: float = 0.0
    # also save the resumable state this often within an epoch (0: only after one)
    save_every_minutes: float = 10.0
    warmup: int = DEFAULT_WARMUP
    lr_factor: float = 1.0
    label_smoothing: float = 0.1
    patience: int = 8  # epochs without a better validation score before stopping
    # validate BLEU on the first n sentences of each validation set (0 = all)
    val_bleu_limit: int = 0
    seed: int = 1234
    average_last: int = 5  # average the weights of the last n epochs at the end (0 = off)
    # "auto": fp16 on CUDA, fp32 on CPU; "bf16": bfloat16 autocast (CPU or CUDA); "off"
    amp: str = "auto"
    threads: int = 0  # torch CPU threads (0 = torch's default)
    # use only the first n training pairs of each corpus (for quick experiments)
    train_limit: int = 0
    multi30k_copies: int = 1  # times Multi30k's training pairs appear in an epoch
    tatoeba_copies: int = 0  # times Tatoeba's training pairs appear in an epoch (0 = Multi30k only)
    # warm start: a checkpoint directory whose weights (and embeddings, by token) seed the model
    init_from: str = ""
    # go on from an exported checkpoint (weights, tokenizer, step, history) when no state exists
    continue_from: str = ""
    # after --continue-from: steps over which the learning rate ramps up again (Adam starts at zero)
    rewarmup: int = 100
    # a cool-down: from this step on the learning rate falls linearly to zero over cooldown_steps
    # (0: the schedule's 1/√step decay throughout)
    cooldown_start: int = 0
    cooldown_steps: int = 0
    num_beams: int = 1  # decoding defaults written into the checkpoint's generation_config.json
    length_penalty: float = 0.6


# --- resumable state: safetensors for tensors, JSON for the rest ----------------------------------


# --- the loop -------------------------------------------------------------------------------------


# --- the parts of a run ---------------------------------------------------------------------------


@dataclass
class Corpora:
    """Training pairs (already mixed) and the validation sets that choose between epochs."""

    train: list[tuple[str, str]]
    # name -> pairs; the first one also gives validation loss
    validation: dict[str, list[tuple[str, str]]]
    sizes: dict[str, int] = field(default_factory=dict)  # pairs per corpus before mixing


def load_corpora(tc: TrainConfig, data_dir=None, tatoeba_dir=None,
                 pairs: dict[str, list[tuple[str, str]]] | None = None) -> Corpora:
    """Multi30k train/val, plus Tatoeba train/dev when ``tc.tatoeba_copies`` > 0, mixed as
    configured.

    ``pairs`` ({"train": [...], "val": [...]}, optionally "tatoeba_train", "tatoeba_dev") replaces
    reading files (tests use it).
    """
    from transformer_viz.text.corpora import Mix, read_tatoeba

    if pairs is None:
        pairs = {split: read_split(data_dir, split, tc.src_lang, tc.tgt_lang)
                 for split in ("train", "val")}
        if tc.tatoeba_copies:
            for split in ("tatoeba_train", "tatoeba_dev"):
                pairs[split] = read_tatoeba(tatoeba_dir, split, tc.src_lang, tc.tgt_lang,
                                            data_dir=data_dir)
    limit = tc.train_limit or None
    multi30k, tatoeba = pairs["train"][:limit], pairs.get("tatoeba_train", [])[:limit]
    mix = Mix(tc.multi30k_copies, tc.tatoeba_copies if tatoeba else 0)
    validation = {"val": pairs["val"]}
    if mix.tatoeba and pairs.get("tatoeba_dev"):
        validation["tatoeba_dev"] = pairs["tatoeba_dev"]
    return Corpora(mix.combine(multi30k, tatoeba), validation,
                   {"multi30k_train": len(multi30k),
                    "tatoeba_train": len(tatoeba) if mix.tatoeba else 0})


def build_tokenizer(tc: TrainConfig, run_dir: Path, corpora: Corpora, dist: Distributed):
    """The run's joint BPE vocabulary: trained once on the distinct training sentences, then reused
    on resume."""
    from transformer_viz.text.tokenizer import load_tokenizer, train_tokenizer

    tok_dir = run_dir / "tokenizer"
    if not (tok_dir / "tokenizer.json").is_file():
        # A joint vocabulary over both languages lets source, target and output share one embedding.
        # Each distinct sentence counts once, so upsampling a corpus does not skew the merges.
        if dist.main:
            texts = list(dict.fromkeys([s for s, _ in corpora.train]
                                       + [t for _, t in corpora.train]))
            train_tokenizer(texts, tc.vocab_size).save_pretrained(str(tok_dir))
        dist.barrier()
    return load_tokenizer(tok_dir)


def run_epoch(model, train_model, optimizer, scaler, batches: list[list[int]], examples,
              tc: TrainConfig, state: TrainState, device, show_progress: bool, world: int,
              deadline: float = 0.0, after_step=None,
              cooldown_seconds: float = 0.0) -> tuple[torch.Tensor, int, float]:
    """One pass over this process's batches with the paper's schedule. Returns (loss sum, tokens,
    seconds); the loss sum (the batches' mean losses weighted by their target tokens) is a 0-dim
    tensor on ``device``.

    ``deadline`` (a time.time() value, 0: none) ends the pass before the first step that would
    start after it, so a wall-clock budget holds to within one step; over its last
    ``cooldown_seconds`` the learning rate falls linearly to zero. ``after_step(state, loss,
    n_tokens)`` runs after every update (periodic validation, for example); it may return True to
    end the pass there. Its ``loss`` is the batch's mean loss as a 0-dim tensor on ``device``.

    Nothing is read back from the device but for the progress bar: on a GPU a read makes the host
    wait until the update has run, and the GPU then idles while the host pads the next batch."""
    cfg = model.cfg
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(batches), desc=f"epoch {state.epoch + 1}", unit="batch", leave=False,
                   mininterval=2.0)
    loss_sum, token_sum, t_epoch = torch.zeros((), device=device), 0, time.time()
    for idx in batches:
        if deadline and time.time() >= deadline:
            break
        batch = make_batch([examples[i] for i in idx], cfg.pad_id, cfg.bos_id,
                           cfg.eos_id).to(device)
        state.step += 1
        lr = step_learning_rate(tc, state, cfg.d_model,
                                deadline - time.time() if deadline else None, cooldown_seconds)
        for group in optimizer.param_groups:
            group["lr"] = lr
        with autocast(device, tc.amp), attention_kernel(device):
            logits = train_model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = label_smoothed_loss(logits, batch.tgt_out, tc.label_smoothing, cfg.pad_id)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        loss = loss.detach()
        loss_sum += loss * batch.n_tokens
        token_sum += batch.n_tokens
        if bar:
            rate = token_sum / max(time.time() - t_epoch, 1e-9)
            bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.2e}", tok_s=f"{rate * world:.0f}")
            bar.update(1)
        if after_step and after_step(state, loss, batch.n_tokens):
            break
    if bar:
        bar.close()
    return loss_sum, token_sum, time.time() - t_epoch


def step_learning_rate(tc: TrainConfig, state: TrainState, d_model: int,
                       seconds_left: float | None = None, cooldown_seconds: float = 0.0) -> float:
    """The learning rate of step ``state.step``: the paper's schedule, ramped up again after
    continuing and brought down by the cool-down (by step, or over the last ``cooldown_seconds``
    before a deadline ``seconds_left`` away)."""
    return (learning_rate(state.step, d_model, tc.warmup, tc.lr_factor)
            * rewarmup_factor(tc, state) * cooldown_factor(tc, state.step)
            * deadline_cooldown_factor(seconds_left, cooldown_seconds))


def rewarmup_factor(tc: TrainConfig, state: TrainState) -> float:
    """After going on from an exported checkpoint Adam's moment estimates start from zero, so its
    first updates are about lr · sign(gradient) for every weight; ramp the learning rate up again
    over ``tc.rewarmup`` steps, as the paper's warm-up does for a fresh run."""
    if state.restart_step < 0 or tc.rewarmup <= 0:
        return 1.0
    return min(1.0, (state.step - state.restart_step) / tc.rewarmup)


def cooldown_factor(tc: TrainConfig, step: int) -> float:
    """1 until ``tc.cooldown_start``, then falling linearly to 0 over ``tc.cooldown_steps``.

    Why: the 1/√step decay leaves the weights moving at a sizeable rate, so a single epoch's
    weights are noisy; a last stretch whose rate falls to zero settles them (the role the average
    of the last epochs plays without it)."""
    if tc.cooldown_start <= 0 or tc.cooldown_steps <= 0 or step <= tc.cooldown_start:
        return 1.0
    return max(0.0, 1.0 - (step - tc.cooldown_start) / tc.cooldown_steps)


def deadline_cooldown_factor(seconds_left: float | None, cooldown_seconds: float) -> float:
    """1 until the last ``cooldown_seconds`` before a deadline, then falling linearly to 0 at it.

    Why seconds, not steps: a run cut off by a wall-clock budget does not know in advance how many
    steps it will make (that depends on the GPU, on compiling, on the other process beside it), so
    its last stretch is measured in the one unit it does know."""
    if cooldown_seconds <= 0 or seconds_left is None:
        return 1.0
    return min(1.0, max(0.0, seconds_left / cooldown_seconds))


def save_epoch_weights(run_dir: Path, model: Transformer, epoch: int, keep: int) -> None:
    """Write this epoch's weights and delete the ones that fell out of the averaging window."""
    from safetensors.torch import save_file

    save_file(state_dict_for_saving(model), str(run_dir / f"epoch{epoch:03d}.safetensors"))
    stale = run_dir / f"epoch{epoch - max(keep, 1):03d}.safetensors"
    if stale.exists():
        stale.unlink()


def stop_reason(tc: TrainConfig, state: TrainState, epoch_s: float) -> str | None:
    """Why to stop after this epoch (patience or the time budget), or None to go on."""
    if state.epoch - state.best_epoch >= tc.patience:
        return f"no better validation BLEU for {tc.patience} epochs"
    if tc.max_minutes and state.elapsed_s + epoch_s * 1.1 > tc.max_minutes * 60:
        return f"time budget of {tc.max_minutes} minutes reached"
    return None


def select_weights(model, tokenizer, run_dir: Path, tc: TrainConfig, validation, state: TrainState,
                   summary: dict, log=print) -> str:
    """Load the best epoch, or the average of the last epochs when validation says it is better."""
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(run_dir / "best.safetensors")), strict=False)
    epochs = sorted(run_dir.glob("epoch*.safetensors"))
    last = epochs[-tc.average_last:] if tc.average_last > 1 else []
    if len(last) < 2:
        return "best"
    best_state = {k: v.clone() for k, v in state_dict_for_saving(model).items()}
    model.load_state_dict(average_weights(last), strict=False)
    scores = validation_bleu(model, tokenizer, validation, tc.val_bleu_limit)
    avg_bleu = sum(scores.values()) / len(scores)
    log(f"average of the last {len(last)} epochs: validation BLEU {avg_bleu:.2f} {scores}")
    summary["averaged_val_bleu"] = avg_bleu
    if avg_bleu > state.best_bleu:
        return f"average of epochs {', '.join(p.stem[5:] for p in last)}"
    model.load_state_dict(best_state, strict=False)
    return "best"


def export_checkpoint(out_dir, model, tokenizer, tc: TrainConfig, corpora: Corpora,
                      state: TrainState, chosen: str, reason: str) -> None:
    from transformer_viz.generation.decoding_defaults import GenerationDefaults
    from transformer_viz.text.corpora import MULTI30K_CREDIT, TATOEBA_CREDIT

    data = {"Multi30k": f"{MULTI30K_CREDIT}; {corpora.sizes.get('multi30k_train', 0):,} "
                        "training pairs"
                        + (f" × {tc.multi30k_copies} per epoch" if tc.multi30k_copies != 1 else "")}
    names = ["Multi30k"]
    if corpora.sizes.get("tatoeba_train"):
        data["Tatoeba"] = (f"{TATOEBA_CREDIT}; {corpora.sizes['tatoeba_train']:,} training pairs"
                           + (f" × {tc.tatoeba_copies} per epoch"
                              if tc.tatoeba_copies != 1 else "")
                           + f", {len(corpora.validation.get('tatoeba_dev', [])):,} held out as "
                             "the dev split")
        names.append("Tatoeba")
    meta = {"name": f"{' + '.join(names)} {tc.src_lang}→{tc.tgt_lang}", "src_lang": tc.src_lang,
            "tgt_lang": tc.tgt_lang, "history": state.history, "data": data,
            "training": {**{k: v for k, v in asdict(tc).items() if k != "model_overrides"},
                         "selected_weights": chosen, "stop_reason": reason,
                         "wall_clock_minutes": round(state.elapsed_s / 60, 1), "steps": state.step}}
    generation = GenerationDefaults(num_beams=tc.num_beams, length_penalty=tc.length_penalty)
    save_checkpoint(out_dir, model, tokenizer, meta, half=True, generation=generation)


@dataclass
class Run:
    """Everything one training run works with, built once by :func:`start_run`."""

    tc: TrainConfig
    run_dir: Path
    dist: Distributed
    device: torch.device
    corpora: Corpora
    tokenizer: object
    model: Transformer
    train_model: torch.nn.Module  # the model, or its DistributedDataParallel wrapper
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    state: TrainState
    train_examples: list
    val_batches: list[Batch]
    log: object = print


def start_run(tc: TrainConfig, run_dir: Path, data_dir=None, tatoeba_dir=None, pairs=None,
              tokenizer=None, log=print) -> Run:
    """Read the corpora, build (or reload) the tokenizer and the model, resume or warm-start."""
    dist = Distributed()
    run_dir.mkdir(parents=True, exist_ok=True)
    # oneDNN compiles and caches a kernel for every new (batch, length) shape of a bfloat16 product;
    # its default cache (1,024 kernels) grew a CPU run past 4 GB. 32 costs no measurable speed (set
    # before the first product, where oneDNN reads it).
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "32")
    if tc.threads:
        torch.set_num_threads(tc.threads)
    device = torch.device(f"cuda:{dist.local_rank}" if torch.cuda.is_available() else "cpu")
    random.seed(tc.seed)
    torch.manual_seed(tc.seed)
    quiet = log if dist.main else (lambda *_: None)

    corpora = load_corpora(tc, data_dir, tatoeba_dir, pairs)
    if tc.continue_from and not (run_dir / "tokenizer" / "tokenizer.json").is_file() and dist.main:
        import shutil

        shutil.copytree(Path(tc.continue_from) / "tokenizer", run_dir / "tokenizer",
                        dirs_exist_ok=True)
    dist.barrier()
    tokenizer = tokenizer or build_tokenizer(tc, run_dir, corpora, dist)
    cfg: ModelConfig = preset(tc.config, vocab_size=len(tokenizer), **tc.model_overrides)
    (run_dir / "train_config.json").write_text(json.dumps(asdict(tc), indent=2))
    model = Transformer(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    saved = load_train_state(run_dir, model, optimizer)
    state = TrainState.from_dict(saved)
    if saved:
        quiet(f"resuming from epoch {state.epoch}, step {state.step} "
              f"(lr {step_learning_rate(tc, state, cfg.d_model):.2e})")
    elif tc.continue_from:
        state = continue_from_checkpoint(model, run_dir, tc.continue_from, log=quiet)
    elif tc.init_from:
        warm_start(model, tokenizer, tc.init_from, log=quiet)
    train_model = model
    if dist.enabled:
        train_model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dist.local_rank] if device.type == "cuda" else None)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda" and tc.amp == "auto")

    train_examples = encode_pairs(tokenizer, corpora.train, cfg.max_len)
    # Multi30k val gives the loss
    val_examples = encode_pairs(tokenizer, corpora.validation["val"], cfg.max_len)
    val_batches = [make_batch([val_examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
                   for idx in token_batches(val_examples, tc.batch_tokens, shuffle=False)]
    quiet(f"model: {model.num_parameters():,} parameters, d_model {cfg.d_model}, N {cfg.N}, h "
          f"{cfg.h}, vocabulary {cfg.vocab_size}; {len(train_examples)} training pairs per epoch "
          f"{corpora.sizes}; device {device}")
    return Run(tc, run_dir, dist, device, corpora, tokenizer, model, train_model, optimizer, scaler,
               state, train_examples, val_batches, log)


def end_epoch(run: Run, loss_total: float, tokens_total: float, epoch_s: float,
              elapsed_s: float) -> str | None:
    """Validate, record the epoch, save what a resume and the final selection need; say why to stop,
    if so."""
    from safetensors.torch import save_file

    tc, state, model = run.tc, run.state, run.model
    scores = validation_bleu(model, run.tokenizer, run.corpora.validation, tc.val_bleu_limit)
    # the mean over the validation sets chooses the weights
    selection = sum(scores.values()) / len(scores)
    # "val_bleu" is Multi30k val's BLEU; every other set adds "<name>_bleu" (e.g. tatoeba_dev_bleu).
    row = {"epoch": state.epoch, "step": state.step,
           "train_loss": loss_total / max(tokens_total, 1),
           "val_loss": validation_loss(model, run.val_batches, run.device, tc.label_smoothing),
           "val_bleu": scores["val"],
           "lr": step_learning_rate(tc, state, model.cfg.d_model),
           "tokens_per_s": tokens_total / max(epoch_s, 1e-9), "epoch_s": epoch_s,
           "elapsed_s": elapsed_s,
           **{f"{name}_bleu": value for name, value in scores.items() if name != "val"}}
    state.history.append(row)
    state.elapsed_s = elapsed_s
    run.log(json.dumps(row))
    save_epoch_weights(run.run_dir, model, state.epoch, tc.average_last)
    if selection > state.best_bleu:
        state.best_bleu, state.best_epoch = selection, state.epoch
        save_file(state_dict_for_saving(model), str(run.run_dir / "best.safetensors"))
    save_train_state(run.run_dir, model, run.optimizer, asdict(state))
    return stop_reason(tc, state, epoch_s)


class MidEpochSaver:
    """run_epoch's ``after_step``: saves the resumable state every ``tc.save_every_minutes`` within
    an epoch, with the batches trained so far, so that a run stopped at any moment loses minutes,
    not an epoch (a small model's epoch takes half an hour on two CPU cores). One process only: a
    distributed run saves after each epoch."""

    def __init__(self, run: Run, elapsed_before: float, t_start: float) -> None:
        self.run, self.elapsed_before, self.t_start = run, elapsed_before, t_start
        state = run.state
        self.done, self.loss, self.tokens = state.batches_done, state.epoch_loss, state.epoch_tokens
        self.epoch_s0, self.t_epoch = state.epoch_s, time.time()
        self.last_save = time.time()

    def __call__(self, state: TrainState, loss: torch.Tensor, n_tokens: int) -> bool:
        self.done += 1
        self.loss += loss * n_tokens  # a tensor from here on, read when saved
        self.tokens += n_tokens
        every = self.run.tc.save_every_minutes * 60
        if every and time.time() - self.last_save >= every:
            state.batches_done, state.epoch_loss = self.done, float(self.loss)
            state.epoch_tokens = self.tokens
            state.epoch_s = self.epoch_s0 + time.time() - self.t_epoch
            state.elapsed_s = self.elapsed_before + time.time() - self.t_start
            save_train_state(self.run.run_dir, self.run.model, self.run.optimizer, asdict(state))
            self.run.log(f"saved mid-epoch: epoch {state.epoch + 1}, {self.done} batches, step "
                         f"{state.step}")
            self.last_save = time.time()
        return False


def train(tc: TrainConfig, run_dir: str | Path, data_dir: str | Path | None = None,
          pairs: dict[str, list[tuple[str, str]]] | None = None, tokenizer=None,
          out_dir: str | Path | None = None, progress: bool = True, log=print,
          tatoeba_dir: str | Path | None = None) -> dict:
    """Train (or resume) in ``run_dir``; write the selected model as a checkpoint directory to
    ``out_dir``.

    ``pairs`` replaces reading the corpora from ``data_dir`` / ``tatoeba_dir`` (tests use it; see
    :func:`load_corpora`). Returns the training summary (history, best epoch, timings).
    """
    run = start_run(tc, Path(run_dir), data_dir, tatoeba_dir, pairs, tokenizer, log)
    dist, state, model = run.dist, run.state, run.model
    elapsed_before, t_start = state.elapsed_s, time.time()
    reason = "epochs done"
    model.train()
    while state.epoch < tc.epochs:
        batches = token_batches(run.train_examples, tc.batch_tokens, shuffle=True,
                                seed=tc.seed + state.epoch + 1)
        batches = batches[dist.rank::dist.world]  # each process takes its own share
        if dist.enabled:  # equal counts, so no process waits on a missing all-reduce
            batches = batches[: int(dist.all_sum(len(batches))[0] // dist.world)]
        saver = None if dist.enabled else MidEpochSaver(run, elapsed_before, t_start)
        # batches trained before a restart
        carried = (state.epoch_loss, state.epoch_tokens, state.epoch_s)
        loss_sum, token_sum, epoch_s = run_epoch(model, run.train_model, run.optimizer, run.scaler,
                                                 batches[state.batches_done:], run.train_examples,
                                                 tc, state, run.device, progress and dist.main,
                                                 dist.world, after_step=saver)
        loss_sum, token_sum = float(loss_sum) + carried[0], token_sum + carried[1]
        epoch_s += carried[2]
        state.batches_done, state.epoch_loss, state.epoch_tokens, state.epoch_s = 0, 0.0, 0, 0.0
        state.epoch += 1
        loss_total, tokens_total = dist.all_sum(loss_sum, token_sum)
        elapsed_s = elapsed_before + time.time() - t_start
        why = end_epoch(run, loss_total, tokens_total, epoch_s, elapsed_s) if dist.main else None
        if dist.all_sum(1.0 if why else 0.0)[0] > 0:
            reason = why or "stopped by the main process"
            break

    summary = {"history": state.history, "best_epoch": state.best_epoch,
               "best_val_bleu": state.best_bleu, "stop_reason": reason, "steps": state.step,
               "elapsed_s": state.elapsed_s, "parameters": model.num_parameters()}
    if dist.main:
        log(f"stopped: {reason}; best validation BLEU {state.best_bleu:.2f} at epoch "
            f"{state.best_epoch}")
        summary["selected"] = select_weights(model, run.tokenizer, run.run_dir, tc,
                                             run.corpora.validation, state, summary, log)
        (run.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        if out_dir:
            export_checkpoint(out_dir, model, run.tokenizer, tc, run.corpora, state,
                              summary["selected"], reason)
    dist.close()
    return summary
