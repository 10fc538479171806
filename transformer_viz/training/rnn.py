"""Training the recurrent encoder–decoders (models/rnn/) on the shipped Transformer's data and
tokenizer.

The pieces come from the translation trainer: the corpora and their mix
(:func:`~transformer_viz.training.translation.load_corpora`), batches by token count, the
label-smoothed loss, greedy validation BLEU, the resumable state in safetensors + JSON. What differs
is the recipe usual for recurrent models: Adam at a fixed learning rate (1e-3), halved after an
epoch without a better validation BLEU, and gradient-norm clipping.

The time budget is a hard wall-clock limit for the whole run, validation included: an epoch is cut
short when the next batch would leave too little time to validate, so a run of ``--max-minutes 55``
ends (and has exported its best epoch) within about 55 minutes of its start, however slow the
machine is. After every epoch the state is saved (a restart resumes there) and, when validation BLEU
improved, the weights are exported to ``--out`` as a checkpoint directory, so a killed run still
leaves its best model.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from transformer_viz.checkpoints import save_checkpoint, state_dict_for_saving
from transformer_viz.core.paths import PROJECT_ROOT
from transformer_viz.models.losses import label_smoothed_loss
from transformer_viz.models.rnn.config import preset
from transformer_viz.models.rnn.model import RNNSeq2Seq
from transformer_viz.text.corpora import encode_pairs, make_batch, token_batches
from transformer_viz.training.common import (TrainState, autocast, load_train_state,
                                             save_train_state, validation_bleu, validation_loss)
from transformer_viz.training.translation import TrainConfig, load_corpora

DEFAULT_TOKENIZER = "checkpoints/de-en/tokenizer"  # relative to the project root


@dataclass
class RNNTrainConfig:
    src_lang: str = "de"
    tgt_lang: str = "en"
    config: str = "rnn"  # RNN preset: rnn (no attention) or rnn-attn
    model_overrides: dict = field(default_factory=dict)
    tokenizer: str = DEFAULT_TOKENIZER  # the shipped Transformer's joint BPE vocabulary
    batch_tokens: int = 4096  # padded source + target tokens per batch
    epochs: int = 50
    # hard wall-clock budget for the whole run, validation included (0 = none)
    max_minutes: float = 55.0
    lr: float = 1e-3
    # the learning rate is multiplied by this after an epoch without a better score
    lr_decay: float = 0.5
    clip: float = 1.0  # gradient-norm clipping
    label_smoothing: float = 0.1
    patience: int = 4  # epochs without a better validation score before stopping
    val_bleu_limit: int = 0  # validate BLEU on the first n sentences of Multi30k val (0 = all)
    seed: int = 1234
    # "bf16": bfloat16 autocast (about 1.5x faster on a CPU with bfloat16 units); "off"
    amp: str = "bf16"
    threads: int = 1
    train_limit: int = 0
    multi30k_copies: int = 1
    tatoeba_copies: int = 1


def _corpora(tc: RNNTrainConfig, data_dir, tatoeba_dir, pairs):
    """The translation trainer's corpora and mix; validation on Multi30k val only (the Tatoeba dev
    split is scored at the end by ``evaluate``: greedy decoding of its 2,000 sentences after every
    epoch would cost minutes of the budget)."""
    shared = TrainConfig(src_lang=tc.src_lang, tgt_lang=tc.tgt_lang, train_limit=tc.train_limit,
                         multi30k_copies=tc.multi30k_copies, tatoeba_copies=tc.tatoeba_copies)
    corpora = load_corpora(shared, data_dir, tatoeba_dir, pairs)
    corpora.validation = {"val": corpora.validation["val"]}
    return corpora


def _export(out_dir, model, tokenizer, tc: RNNTrainConfig, corpora,
            state: TrainState, reason: str) -> None:
    from transformer_viz.text.corpora import MULTI30K_CREDIT, TATOEBA_CREDIT

    data = {"Multi30k": f"{MULTI30K_CREDIT}; {corpora.sizes.get('multi30k_train', 0):,} "
                        "training pairs"
                        + (f" × {tc.multi30k_copies} per epoch" if tc.multi30k_copies != 1 else "")}
    if corpora.sizes.get("tatoeba_train"):
        data["Tatoeba"] = (f"{TATOEBA_CREDIT}; {corpora.sizes['tatoeba_train']:,} training pairs"
                           + (f" × {tc.tatoeba_copies} per epoch"
                              if tc.tatoeba_copies != 1 else ""))
    rates = [h["tokens_per_s"] for h in state.history if h.get("tokens_per_s")]
    meta = {"name": f"{model.cfg.name}, Multi30k + Tatoeba {tc.src_lang}→{tc.tgt_lang}",
            "description": "A recurrent model for comparison with the Transformer: "
                           + ("additive attention over the encoder states (Bahdanau et al., 2015)."
                              if model.cfg.attention else
                              "the decoder sees the source only through the encoder's last state "
                              "(Cho et al., 2014)."),
            "src_lang": tc.src_lang, "tgt_lang": tc.tgt_lang, "history": state.history,
            "data": data,
            "training": {**asdict(tc),
                         "selected_weights": "best epoch by Multi30k val BLEU "
                                             f"({state.best_epoch})",
                         "stop_reason": reason,
                         "wall_clock_minutes": round(state.elapsed_s / 60, 1), "steps": state.step,
                         "target_tokens_per_s": round(sum(rates) / len(rates)) if rates else None}}
    save_checkpoint(out_dir, model, tokenizer, meta, half=True)


def _learning_rate(tc: RNNTrainConfig, state: TrainState) -> float:
    """tc.lr, halved (lr_decay) once for every epoch whose validation BLEU did not beat the best
    before it."""
    best, misses = -1.0, 0
    for row in state.history:
        if row["val_bleu"] > best:
            best = row["val_bleu"]
        else:
            misses += 1
    return tc.lr * tc.lr_decay**misses


def _train_epoch(model, optimizer, examples, batches: list[list[int]], tc: RNNTrainConfig,
                 state: TrainState, progress: bool, may_go_on) -> tuple[float, int, int]:
    """Teacher-forced updates over the batches while ``may_go_on()``. Returns (loss sum, target
    tokens, batches done)."""
    cfg = model.cfg
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(batches), desc=f"epoch {state.epoch + 1}", unit="batch", leave=False,
                   mininterval=10.0)
    loss_sum, token_sum, done, t_epoch = 0.0, 0, 0, time.time()
    for idx in batches:
        if not may_go_on():
            break
        batch = make_batch([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
        with autocast(torch.device("cpu"), tc.amp):
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = label_smoothed_loss(logits, batch.tgt_out, tc.label_smoothing, cfg.pad_id)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
        optimizer.step()
        state.step += 1
        done += 1
        loss_sum += loss.item() * batch.n_tokens
        token_sum += batch.n_tokens
        if bar:
            bar.set_postfix(loss=f"{loss.item():.3f}",
                            tok_s=f"{token_sum / (time.time() - t_epoch):.0f}")
            bar.update(1)
    if bar:
        bar.close()
    return loss_sum, token_sum, done


def _start(tc: RNNTrainConfig, run_dir: Path, data_dir, tatoeba_dir, pairs, tokenizer, log):
    """Tokenizer (the Transformer's, copied into the run), corpora, model, optimizer and the resumed
    state."""
    from transformer_viz.text.tokenizer import load_tokenizer

    run_dir.mkdir(parents=True, exist_ok=True)
    if tc.threads:
        torch.set_num_threads(tc.threads)
    random.seed(tc.seed)
    torch.manual_seed(tc.seed)
    if tokenizer is None:
        if not (run_dir / "tokenizer" / "tokenizer.json").is_file():
            shutil.copytree(PROJECT_ROOT / tc.tokenizer, run_dir / "tokenizer", dirs_exist_ok=True)
        tokenizer = load_tokenizer(run_dir / "tokenizer")
    corpora = _corpora(tc, data_dir, tatoeba_dir, pairs)
    model = RNNSeq2Seq(preset(tc.config, vocab_size=len(tokenizer), **tc.model_overrides))
    optimizer = torch.optim.Adam(model.parameters(), lr=tc.lr)
    (run_dir / "train_config.json").write_text(json.dumps(asdict(tc), indent=2))
    state = TrainState.from_dict(load_train_state(run_dir, model, optimizer))
    if state.epoch:
        log(f"resuming after epoch {state.epoch}, step {state.step}")
    return tokenizer, corpora, model, optimizer, state


def _validation_batches(tokenizer, corpora, cfg, batch_tokens: int) -> list:
    """Multi30k val in batches, for the validation loss."""
    examples = encode_pairs(tokenizer, corpora.validation["val"], cfg.max_len)
    return [make_batch([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
            for idx in token_batches(examples, batch_tokens, shuffle=False)]


def _record_epoch(row: dict, model, optimizer, tokenizer, tc: RNNTrainConfig, corpora,
                  state: TrainState, run_dir: Path, out_dir, log) -> None:
    """Append the epoch's row; keep (and export) the weights when validation BLEU improved; save the
    state."""
    from safetensors.torch import save_file

    state.history.append(row)
    state.elapsed_s = row["elapsed_s"]
    log(json.dumps(row))
    improved = row["val_bleu"] > state.best_bleu
    if improved:
        state.best_bleu, state.best_epoch = row["val_bleu"], state.epoch
        save_file(state_dict_for_saving(model), str(run_dir / "best.safetensors"))
    save_train_state(run_dir, model, optimizer, asdict(state))
    if improved and out_dir:
        _export(out_dir, model, tokenizer, tc, corpora, state, "still training")


def train_rnn(tc: RNNTrainConfig, run_dir: str | Path, data_dir=None, tatoeba_dir=None,
              out_dir=None, pairs: dict | None = None, tokenizer=None,
              progress: bool = True, log=print) -> dict:
    """Train (or resume) in ``run_dir``; export the best epoch (Multi30k val BLEU) to
    ``out_dir``."""
    run_dir, t_start = Path(run_dir), time.time()
    tokenizer, corpora, model, optimizer, state = _start(tc, run_dir, data_dir, tatoeba_dir,
                                                         pairs, tokenizer, log)
    cfg = model.cfg
    examples = encode_pairs(tokenizer, corpora.train, cfg.max_len)
    val_batches = _validation_batches(tokenizer, corpora, cfg, tc.batch_tokens)
    log(f"model: {cfg.name}, {model.num_parameters():,} parameters, d_emb {cfg.d_emb}, d_hidden "
        f"{cfg.d_hidden}; {len(examples)} training pairs per epoch {corpora.sizes}; budget "
        f"{tc.max_minutes} min")
    budget = tc.max_minutes * 60 if tc.max_minutes else float("inf")
    validate_s = float(state.history[-1].get("validate_s", 120.0)) if state.history else 120.0
    elapsed_before, reason = state.elapsed_s, "epochs done"

    def elapsed() -> float:
        return elapsed_before + time.time() - t_start

    model.train()
    while state.epoch < tc.epochs:
        lr = _learning_rate(tc, state)
        for group in optimizer.param_groups:
            group["lr"] = lr
        t_epoch = time.time()
        batches = token_batches(examples, tc.batch_tokens, shuffle=True,
                                seed=tc.seed + state.epoch + 1)
        # Stop taking batches when the next one would leave too little time to validate and save.
        loss_sum, token_sum, done = _train_epoch(
            model, optimizer, examples, batches, tc, state, progress,
            lambda: elapsed() + 1.3 * validate_s <= budget)
        epoch_s = time.time() - t_epoch
        if token_sum == 0:
            reason = f"time budget of {tc.max_minutes} minutes reached"
            break
        state.epoch += 1
        t_val = time.time()
        scores = validation_bleu(model, tokenizer, corpora.validation, tc.val_bleu_limit)
        row = {"epoch": state.epoch, "step": state.step, "train_loss": loss_sum / token_sum,
               "val_loss": validation_loss(model, val_batches, torch.device("cpu"),
                                           tc.label_smoothing),
               "val_bleu": scores["val"], "lr": lr, "tokens_per_s": token_sum / max(epoch_s, 1e-9),
               "epoch_s": epoch_s, "batches": done, "of_batches": len(batches)}
        validate_s = time.time() - t_val
        _record_epoch({**row, "validate_s": validate_s, "elapsed_s": elapsed()}, model, optimizer,
                      tokenizer, tc, corpora, state, run_dir, out_dir, log)
        if done < len(batches) or elapsed() + 1.3 * validate_s + 60 > budget:
            reason = f"time budget of {tc.max_minutes} minutes reached"
            break
        if state.epoch - state.best_epoch >= tc.patience:
            reason = f"no better validation BLEU for {tc.patience} epochs"
            break
    return _finish(run_dir, out_dir, model, tokenizer, tc, corpora, state, reason, log)


def _finish(run_dir: Path, out_dir, model, tokenizer, tc: RNNTrainConfig, corpora,
            state: TrainState, reason: str, log) -> dict:
    """Say why training stopped, export the best epoch's weights (when ``out_dir``) and write the
    run's summary.json."""
    from safetensors.torch import load_file

    log(f"stopped: {reason}; best validation BLEU {state.best_bleu:.2f} at epoch "
        f"{state.best_epoch}")
    if (run_dir / "best.safetensors").is_file():
        model.load_state_dict(load_file(str(run_dir / "best.safetensors")))
        if out_dir:
            _export(out_dir, model, tokenizer, tc, corpora, state, reason)
    summary = {"history": state.history, "best_epoch": state.best_epoch,
               "best_val_bleu": state.best_bleu, "stop_reason": reason, "steps": state.step,
               "elapsed_s": state.elapsed_s, "parameters": model.num_parameters()}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
