"""Training on sentence pairs with the paper's recipe, at small scale.

Adam (β1 0.9, β2 0.98, ε 1e-9); learning rate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5);
label smoothing; dropout; batches by token count, bucketed by length; shared embeddings. Each epoch
logs training loss, validation loss and validation BLEU; the best epoch by validation BLEU is kept,
and training stops early when it stops improving. Everything needed to resume is saved after every
epoch, as safetensors + JSON (no pickle). CUDA with mixed precision is used when present;
several processes through ``torchrun`` (DistributedDataParallel) when launched that way.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from .checkpoint import save_checkpoint, state_dict_for_saving
from .config import ModelConfig, preset
from .data import Batch, encode_pairs, make_batch, read_split, token_batches
from .model import Transformer


@dataclass
class TrainConfig:
    src_lang: str = "de"
    tgt_lang: str = "en"
    config: str = "small"  # model preset
    model_overrides: dict = field(default_factory=dict)
    vocab_size: int = 8000
    batch_tokens: int = 4096  # padded source + target tokens per batch
    epochs: int = 100
    max_minutes: float = 0.0  # stop (after the current epoch) when this much wall-clock has passed; 0 = no limit
    warmup: int = 4000
    lr_factor: float = 1.0
    label_smoothing: float = 0.1
    patience: int = 8  # epochs without a better validation BLEU before stopping
    val_bleu_limit: int = 0  # validate BLEU on the first n val sentences (0 = all)
    seed: int = 1234
    average_last: int = 5  # average the weights of the last n epochs at the end (0 = off)
    amp: str = "auto"  # "auto": fp16 on CUDA, fp32 on CPU; "bf16": bfloat16 autocast (CPU or CUDA); "off"
    threads: int = 0  # torch CPU threads (0 = torch's default)
    train_limit: int = 0  # use only the first n training pairs (for quick experiments)


def learning_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's schedule: linear warm-up for ``warmup`` steps, then decay with 1/√step."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def label_smoothed_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float, pad_id: int) -> torch.Tensor:
    """Mean cross-entropy per real target token, with label smoothing. logits (B, T, V), target (B, T)."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                           ignore_index=pad_id, label_smoothing=smoothing)


class Distributed:
    """Process group details when launched by torchrun; a single process otherwise."""

    def __init__(self) -> None:
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.enabled = self.world > 1
        if self.enabled and not torch.distributed.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            torch.distributed.init_process_group(backend)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            torch.distributed.barrier()

    def all_sum(self, *values: float) -> list[float]:
        if not self.enabled:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64)
        torch.distributed.all_reduce(t)
        return t.tolist()

    def close(self) -> None:
        if self.enabled and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


# --- resumable state: safetensors for tensors, JSON for the rest -------------------------------------

STATE_TENSORS, STATE_JSON = "train_state.safetensors", "train_state.json"


def save_train_state(run_dir: Path, model: Transformer, optimizer: torch.optim.Optimizer, info: dict) -> None:
    from safetensors.torch import save_file

    tensors = {f"model.{k}": v for k, v in state_dict_for_saving(model).items()}
    opt_state = optimizer.state_dict()
    for idx, state in opt_state["state"].items():
        for key, value in state.items():
            tensors[f"opt.{idx}.{key}"] = value.detach().cpu().contiguous() if torch.is_tensor(value) \
                else torch.tensor(value)
    tensors["rng.torch"] = torch.get_rng_state()
    tmp = run_dir / (STATE_TENSORS + ".tmp")
    save_file(tensors, str(tmp))
    (run_dir / (STATE_JSON + ".tmp")).write_text(json.dumps(info, indent=1))
    # Rename last, so an interrupted save leaves the previous complete state in place.
    os.replace(tmp, run_dir / STATE_TENSORS)
    os.replace(run_dir / (STATE_JSON + ".tmp"), run_dir / STATE_JSON)


def load_train_state(run_dir: Path, model: Transformer, optimizer: torch.optim.Optimizer) -> dict | None:
    from safetensors.torch import load_file

    if not (run_dir / STATE_TENSORS).is_file():
        return None
    tensors = load_file(str(run_dir / STATE_TENSORS))
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=False)
    opt_state = optimizer.state_dict()
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("opt."):
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value
    opt_state["state"] = state
    optimizer.load_state_dict(opt_state)
    torch.set_rng_state(tensors["rng.torch"])
    return json.loads((run_dir / STATE_JSON).read_text())


# --- the loop ---------------------------------------------------------------------------------------

def _autocast(device: torch.device, amp: str):
    if amp == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if amp == "auto" and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.float16)
    return torch.autocast(device.type, enabled=False)


def _attention_kernel(device: torch.device):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # On the CPU, for sentence-length sequences, the plain math kernel trains up to twice as fast as the
    # fused flash kernel (whose backward is slow in bfloat16); on CUDA let PyTorch choose.
    if device.type == "cpu":
        return sdpa_kernel([SDPBackend.MATH])
    return contextlib.nullcontext()


@torch.no_grad()
def validation_loss(model: Transformer, batches: list[Batch], device, smoothing: float) -> float:
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        batch = batch.to(device)
        logits = model(batch.src, batch.tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), batch.tgt_out.reshape(-1),
                               ignore_index=model.cfg.pad_id, label_smoothing=smoothing, reduction="sum")
        total += loss.item()
        count += batch.n_tokens
    model.train()
    return total / max(count, 1)


def average_weights(paths: list[Path]) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    avg: dict[str, torch.Tensor] = {}
    for path in paths:
        for k, v in load_file(str(path)).items():
            avg[k] = avg.get(k, 0) + v.double() / len(paths)
    return {k: v.float() for k, v in avg.items()}


def train(tc: TrainConfig, run_dir: str | Path, data_dir: str | Path | None = None,
          pairs: dict[str, list[tuple[str, str]]] | None = None, tokenizer=None, out_dir: str | Path | None = None,
          progress: bool = True, log=print) -> dict:
    """Train (or resume) in ``run_dir``; write the best model as a checkpoint directory to ``out_dir``.

    ``pairs`` ({"train": [...], "val": [...]}) replaces reading Multi30k from ``data_dir`` (tests use it).
    Returns the training summary (history, best epoch, timings).
    """
    from safetensors.torch import load_file, save_file

    from .evaluate import score, translate_texts
    from .tokenizer import load_tokenizer, train_tokenizer

    dist = Distributed()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if tc.threads:
        torch.set_num_threads(tc.threads)
    device = torch.device(f"cuda:{dist.local_rank}" if torch.cuda.is_available() else "cpu")
    random.seed(tc.seed)
    torch.manual_seed(tc.seed)

    if pairs is None:
        pairs = {split: read_split(data_dir, split, tc.src_lang, tc.tgt_lang) for split in ("train", "val")}
    train_pairs = pairs["train"][: tc.train_limit or None]
    val_pairs = pairs["val"]

    tok_dir = run_dir / "tokenizer"
    if tokenizer is None:
        if (tok_dir / "tokenizer.json").is_file():
            tokenizer = load_tokenizer(tok_dir)
        else:
            # A joint vocabulary over both languages lets source, target and output share one embedding.
            if dist.main:
                texts = [s for s, _ in train_pairs] + [t for _, t in train_pairs]
                train_tokenizer(texts, tc.vocab_size).save_pretrained(str(tok_dir))
            dist.barrier()
            tokenizer = load_tokenizer(tok_dir)

    cfg: ModelConfig = preset(tc.config, vocab_size=len(tokenizer), **tc.model_overrides)
    (run_dir / "train_config.json").write_text(json.dumps(asdict(tc), indent=2))
    model = Transformer(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    info = load_train_state(run_dir, model, optimizer) or {}
    step, start_epoch = info.get("step", 0), info.get("epoch", 0)
    history: list[dict] = info.get("history", [])
    best_bleu, best_epoch = info.get("best_bleu", -1.0), info.get("best_epoch", 0)
    elapsed_before = info.get("elapsed_s", 0.0)
    if info and dist.main:
        log(f"resuming from epoch {start_epoch}, step {step} (lr {learning_rate(step, cfg.d_model, tc.warmup, tc.lr_factor):.2e})")

    train_model = model
    if dist.enabled:
        train_model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dist.local_rank] if device.type == "cuda" else None)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda" and tc.amp == "auto")

    train_examples = encode_pairs(tokenizer, train_pairs, cfg.max_len)
    val_examples = encode_pairs(tokenizer, val_pairs, cfg.max_len)
    val_batches = [make_batch([val_examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
                   for idx in token_batches(val_examples, tc.batch_tokens, shuffle=False)]
    bleu_pairs = val_pairs[: tc.val_bleu_limit or None]
    if dist.main:
        log(f"model: {model.num_parameters():,} parameters, d_model {cfg.d_model}, N {cfg.N}, h {cfg.h}, "
            f"vocabulary {cfg.vocab_size}; {len(train_examples)} training pairs; device {device}")

    t_start = time.time()
    stop_reason = "epochs done"
    model.train()
    for epoch in range(start_epoch + 1, tc.epochs + 1):
        batches = token_batches(train_examples, tc.batch_tokens, shuffle=True, seed=tc.seed + epoch)
        batches = batches[dist.rank::dist.world]  # each process takes its own share
        if dist.enabled:  # equal counts, so no process waits on a missing all-reduce
            n = int(dist.all_sum(len(batches))[0] // dist.world)
            batches = batches[:n]
        bar = None
        if progress and dist.main:
            from tqdm import tqdm

            bar = tqdm(total=len(batches), desc=f"epoch {epoch}", unit="batch", leave=False, mininterval=2.0)
        loss_sum, token_sum, t_epoch = 0.0, 0, time.time()
        for idx in batches:
            batch = make_batch([train_examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id).to(device)
            step += 1
            lr = learning_rate(step, cfg.d_model, tc.warmup, tc.lr_factor)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with _autocast(device, tc.amp), _attention_kernel(device):
                logits = train_model(batch.src, batch.tgt_in)  # (B, T, V)
            loss = label_smoothed_loss(logits, batch.tgt_out, tc.label_smoothing, cfg.pad_id)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            loss_sum += loss.item() * batch.n_tokens
            token_sum += batch.n_tokens
            if bar:
                rate = token_sum / max(time.time() - t_epoch, 1e-9)
                bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.2e}", tok_s=f"{rate * dist.world:.0f}")
                bar.update(1)
        if bar:
            bar.close()
        loss_total, tokens_total = dist.all_sum(loss_sum, token_sum)
        train_loss = loss_total / max(tokens_total, 1)
        epoch_s = time.time() - t_epoch

        if dist.main:
            val_loss = validation_loss(model, val_batches, device, tc.label_smoothing)
            hyps = translate_texts(model, tokenizer, [s for s, _ in bleu_pairs], beam_size=1)
            val_bleu = score(hyps, [t for _, t in bleu_pairs]).bleu
            elapsed = elapsed_before + time.time() - t_start
            row = {"epoch": epoch, "step": step, "train_loss": train_loss, "val_loss": val_loss,
                   "val_bleu": val_bleu, "lr": lr, "tokens_per_s": tokens_total / max(epoch_s, 1e-9),
                   "epoch_s": epoch_s, "elapsed_s": elapsed}
            history.append(row)
            log(json.dumps(row))
            save_file(state_dict_for_saving(model), str(run_dir / f"epoch{epoch:03d}.safetensors"))
            stale = run_dir / f"epoch{epoch - max(tc.average_last, 1):03d}.safetensors"
            if stale.exists():
                stale.unlink()
            if val_bleu > best_bleu:
                best_bleu, best_epoch = val_bleu, epoch
                save_file(state_dict_for_saving(model), str(run_dir / "best.safetensors"))
            save_train_state(run_dir, model, optimizer, {
                "step": step, "epoch": epoch, "history": history, "best_bleu": best_bleu,
                "best_epoch": best_epoch, "elapsed_s": elapsed})
        flags = [0.0, 0.0]
        if dist.main:
            elapsed = elapsed_before + time.time() - t_start
            if epoch - best_epoch >= tc.patience:
                stop_reason, flags[0] = f"no better validation BLEU for {tc.patience} epochs", 1.0
            elif tc.max_minutes and elapsed + epoch_s * 1.1 > tc.max_minutes * 60:
                stop_reason, flags[0] = f"time budget of {tc.max_minutes} minutes reached", 1.0
        if dist.all_sum(*flags)[0] > 0:
            break

    summary = {"history": history, "best_epoch": best_epoch, "best_val_bleu": best_bleu,
               "stop_reason": stop_reason, "steps": step,
               "elapsed_s": elapsed_before + time.time() - t_start, "parameters": model.num_parameters()}
    if dist.main:
        log(f"stopped: {stop_reason}; best validation BLEU {best_bleu:.2f} at epoch {best_epoch}")
        chosen = "best"
        model.load_state_dict(load_file(str(run_dir / "best.safetensors")), strict=False)
        if tc.average_last > 1:
            # Averaging the last epochs' weights usually beats any single one; keep it only if validation agrees.
            last = sorted(run_dir.glob("epoch*.safetensors"))[-tc.average_last:]
            if len(last) > 1:
                best_state = {k: v.clone() for k, v in state_dict_for_saving(model).items()}
                model.load_state_dict(average_weights(last), strict=False)
                hyps = translate_texts(model, tokenizer, [s for s, _ in bleu_pairs], beam_size=1)
                avg_bleu = score(hyps, [t for _, t in bleu_pairs]).bleu
                log(f"average of the last {len(last)} epochs: validation BLEU {avg_bleu:.2f}")
                summary["averaged_val_bleu"] = avg_bleu
                if avg_bleu > best_bleu:
                    chosen = f"average of epochs {', '.join(p.stem[5:] for p in last)}"
                else:
                    model.load_state_dict(best_state, strict=False)
        summary["selected"] = chosen
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        if out_dir:
            meta = {"name": f"Multi30k {tc.src_lang}→{tc.tgt_lang}", "src_lang": tc.src_lang,
                    "tgt_lang": tc.tgt_lang, "history": history,
                    "training": {**{k: v for k, v in asdict(tc).items() if k != "model_overrides"},
                                 "selected_weights": chosen, "stop_reason": stop_reason,
                                 "wall_clock_minutes": round(summary["elapsed_s"] / 60, 1), "steps": step}}
            save_checkpoint(out_dir, model, tokenizer, meta, half=True)
    dist.close()
    return summary
