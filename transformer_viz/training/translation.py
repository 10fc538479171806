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
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_viz.checkpoints.load import save_checkpoint, state_dict_for_saving
from transformer_viz.models.config import ModelConfig, preset
from transformer_viz.text.corpora import Batch, encode_pairs, make_batch, read_split, token_batches
from transformer_viz.models.transformer import Transformer
from transformer_viz.training.schedule import DEFAULT_WARMUP, learning_rate


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
    warmup: int = DEFAULT_WARMUP
    lr_factor: float = 1.0
    label_smoothing: float = 0.1
    patience: int = 8  # epochs without a better validation score before stopping
    val_bleu_limit: int = 0  # validate BLEU on the first n sentences of each validation set (0 = all)
    seed: int = 1234
    average_last: int = 5  # average the weights of the last n epochs at the end (0 = off)
    amp: str = "auto"  # "auto": fp16 on CUDA, fp32 on CPU; "bf16": bfloat16 autocast (CPU or CUDA); "off"
    threads: int = 0  # torch CPU threads (0 = torch's default)
    train_limit: int = 0  # use only the first n training pairs of each corpus (for quick experiments)
    multi30k_copies: int = 1  # times Multi30k's training pairs appear in an epoch
    tatoeba_copies: int = 0  # times Tatoeba's training pairs appear in an epoch (0 = Multi30k only)
    init_from: str = ""  # warm start: a checkpoint directory whose weights (and embeddings, by token) seed the model
    continue_from: str = ""  # go on from an exported checkpoint (weights, tokenizer, step, history) when no state exists
    rewarmup: int = 100  # after --continue-from: steps over which the learning rate ramps up again (Adam starts at zero)
    num_beams: int = 1  # decoding defaults written into the checkpoint's generation_config.json
    length_penalty: float = 0.6


def label_smoothed_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float, pad_id: int,
                        reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy per real target token ("mean") or summed ("sum"), with label smoothing.
    logits (B, T, V), target (B, T); <pad> targets do not count."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1),
                           ignore_index=pad_id, label_smoothing=smoothing, reduction=reduction)


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
        total += label_smoothed_loss(logits, batch.tgt_out, smoothing, model.cfg.pad_id, reduction="sum").item()
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


# --- the parts of a run -----------------------------------------------------------------------------

@dataclass
class TrainState:
    """What a run has done so far; saved as JSON after every epoch so that a restart resumes here."""

    step: int = 0
    epoch: int = 0
    history: list[dict] = field(default_factory=list)
    best_bleu: float = -1.0  # the selection score: validation BLEU (mean over the validation sets)
    best_epoch: int = 0
    elapsed_s: float = 0.0
    restart_step: int = -1  # the step at which training went on from an exported checkpoint (-1: never)

    @classmethod
    def from_dict(cls, info: dict | None) -> "TrainState":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in (info or {}).items() if k in known})


@dataclass
class Corpora:
    """Training pairs (already mixed) and the validation sets that choose between epochs."""

    train: list[tuple[str, str]]
    validation: dict[str, list[tuple[str, str]]]  # name -> pairs; the first one also gives validation loss
    sizes: dict[str, int] = field(default_factory=dict)  # pairs per corpus before mixing


def load_corpora(tc: TrainConfig, data_dir=None, tatoeba_dir=None,
                 pairs: dict[str, list[tuple[str, str]]] | None = None) -> Corpora:
    """Multi30k train/val, plus Tatoeba train/dev when ``tc.tatoeba_copies`` > 0, mixed as configured.

    ``pairs`` ({"train": [...], "val": [...]}, optionally "tatoeba_train", "tatoeba_dev") replaces reading
    files (tests use it).
    """
    from transformer_viz.text.corpora import Mix, read_tatoeba

    if pairs is None:
        pairs = {split: read_split(data_dir, split, tc.src_lang, tc.tgt_lang) for split in ("train", "val")}
        if tc.tatoeba_copies:
            for split in ("tatoeba_train", "tatoeba_dev"):
                pairs[split] = read_tatoeba(tatoeba_dir, split, tc.src_lang, tc.tgt_lang, data_dir=data_dir)
    limit = tc.train_limit or None
    multi30k, tatoeba = pairs["train"][:limit], pairs.get("tatoeba_train", [])[:limit]
    mix = Mix(tc.multi30k_copies, tc.tatoeba_copies if tatoeba else 0)
    validation = {"val": pairs["val"]}
    if mix.tatoeba and pairs.get("tatoeba_dev"):
        validation["tatoeba_dev"] = pairs["tatoeba_dev"]
    return Corpora(mix.combine(multi30k, tatoeba), validation,
                   {"multi30k_train": len(multi30k), "tatoeba_train": len(tatoeba) if mix.tatoeba else 0})


def build_tokenizer(tc: TrainConfig, run_dir: Path, corpora: Corpora, dist: Distributed):
    """The run's joint BPE vocabulary: trained once on the distinct training sentences, then reused on resume."""
    from transformer_viz.text.tokenizer import load_tokenizer, train_tokenizer

    tok_dir = run_dir / "tokenizer"
    if not (tok_dir / "tokenizer.json").is_file():
        # A joint vocabulary over both languages lets source, target and output share one embedding.
        # Each distinct sentence counts once, so upsampling a corpus does not skew the merges.
        if dist.main:
            texts = list(dict.fromkeys([s for s, _ in corpora.train] + [t for _, t in corpora.train]))
            train_tokenizer(texts, tc.vocab_size).save_pretrained(str(tok_dir))
        dist.barrier()
    return load_tokenizer(tok_dir)


@torch.no_grad()
def continue_from_checkpoint(model: Transformer, run_dir: Path, checkpoint_dir: str | Path, log=print) -> TrainState:
    """Seed a run from an exported checkpoint whose training state is gone: its weights, its epoch and step
    count (so the learning-rate schedule goes on where it stopped) and its history. A checkpoint holds no
    optimizer state, so Adam's moment estimates start again from zero. The tokenizer must be the checkpoint's
    own; :func:`start_run` copies it into the run directory before the model is built.
    """
    from transformer_viz.checkpoints.load import load_checkpoint

    old = load_checkpoint(checkpoint_dir)
    model.load_state_dict(old.model.state_dict())
    training, history = old.metadata.get("training", {}), old.metadata.get("history", [])
    last = history[-1] if history else {}
    scores = [value for key, value in last.items() if key.endswith("_bleu")]
    step = int(training.get("steps", last.get("step", 0)))
    state = TrainState(step=step, epoch=int(last.get("epoch", 0)), history=list(history),
                       elapsed_s=float(last.get("elapsed_s", 0.0)), restart_step=step,
                       best_bleu=sum(scores) / len(scores) if scores else -1.0, best_epoch=int(last.get("epoch", 0)))
    # The checkpoint stays the one to beat: a later epoch replaces it only with a better validation score.
    from safetensors.torch import save_file

    save_file(state_dict_for_saving(model), str(run_dir / "best.safetensors"))
    # ... and one of the epochs the final weight averaging may take in.
    save_file(state_dict_for_saving(model), str(run_dir / f"epoch{state.epoch:03d}.safetensors"))
    log(f"continuing from {checkpoint_dir}: epoch {state.epoch}, step {state.step}; Adam's moments start at zero")
    return state


@torch.no_grad()
def warm_start(model: Transformer, tokenizer, checkpoint_dir: str | Path, log=print) -> None:
    """Seed ``model`` from a trained checkpoint that may have another vocabulary.

    Every weight whose shape matches is copied. Each embedding row of the new vocabulary is the old row
    of the same token when the old vocabulary has it; otherwise the mean of the old rows that the old
    tokenizer splits the token's text into (so "▁Tom" starts near "▁T" + "om"). The embedding is tied
    to the output projection, so the output layer is carried over the same way.
    """
    from transformer_viz.checkpoints.load import load_checkpoint

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
    model.src_embed.weight.copy_(torch.stack(rows))  # tied: tgt_embed and the output projection share it
    log(f"warm start from {checkpoint_dir}: {copied} tensors copied; {exact} of {len(rows)} embedding rows "
        f"taken as they were, the rest averaged from their old subwords")


def run_epoch(model, train_model, optimizer, scaler, batches: list[list[int]], examples, tc: TrainConfig,
              state: TrainState, device, show_progress: bool, world: int) -> tuple[float, int, float]:
    """One pass over this process's batches with the paper's schedule. Returns (loss sum, tokens, seconds)."""
    cfg = model.cfg
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(batches), desc=f"epoch {state.epoch + 1}", unit="batch", leave=False, mininterval=2.0)
    loss_sum, token_sum, t_epoch = 0.0, 0, time.time()
    for idx in batches:
        batch = make_batch([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id).to(device)
        state.step += 1
        lr = learning_rate(state.step, cfg.d_model, tc.warmup, tc.lr_factor) * rewarmup_factor(tc, state)
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
            bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.2e}", tok_s=f"{rate * world:.0f}")
            bar.update(1)
    if bar:
        bar.close()
    return loss_sum, token_sum, time.time() - t_epoch


def validation_bleu(model, tokenizer, validation: dict[str, list[tuple[str, str]]], limit: int) -> dict[str, float]:
    """Greedy BLEU on each validation set (its first ``limit`` pairs when limit > 0)."""
    from transformer_viz.text.evaluation import score, translate_texts

    out = {}
    for name, val_pairs in validation.items():
        chosen = val_pairs[: limit or None]
        hyps = translate_texts(model, tokenizer, [s for s, _ in chosen], beam_size=1)
        out[name] = score(hyps, [t for _, t in chosen]).bleu
    return out


def rewarmup_factor(tc: TrainConfig, state: TrainState) -> float:
    """After going on from an exported checkpoint Adam's moment estimates start from zero, so its first
    updates are about lr · sign(gradient) for every weight; ramp the learning rate up again over
    ``tc.rewarmup`` steps, as the paper's warm-up does for a fresh run."""
    if state.restart_step < 0 or tc.rewarmup <= 0:
        return 1.0
    return min(1.0, (state.step - state.restart_step) / tc.rewarmup)


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
    last = sorted(run_dir.glob("epoch*.safetensors"))[-tc.average_last:] if tc.average_last > 1 else []
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


def export_checkpoint(out_dir, model, tokenizer, tc: TrainConfig, corpora: Corpora, state: TrainState,
                      chosen: str, reason: str) -> None:
    from transformer_viz.text.corpora import MULTI30K_CREDIT, TATOEBA_CREDIT
    from transformer_viz.text.decoding_defaults import GenerationDefaults

    data = {"Multi30k": f"{MULTI30K_CREDIT}; {corpora.sizes.get('multi30k_train', 0):,} training pairs"
                        + (f" × {tc.multi30k_copies} per epoch" if tc.multi30k_copies != 1 else "")}
    names = ["Multi30k"]
    if corpora.sizes.get("tatoeba_train"):
        data["Tatoeba"] = (f"{TATOEBA_CREDIT}; {corpora.sizes['tatoeba_train']:,} training pairs"
                           + (f" × {tc.tatoeba_copies} per epoch" if tc.tatoeba_copies != 1 else "")
                           + f", {len(corpora.validation.get('tatoeba_dev', [])):,} held out as the dev split")
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


def start_run(tc: TrainConfig, run_dir: Path, data_dir=None, tatoeba_dir=None, pairs=None, tokenizer=None,
              log=print) -> Run:
    """Read the corpora, build (or reload) the tokenizer and the model, resume or warm-start."""
    dist = Distributed()
    run_dir.mkdir(parents=True, exist_ok=True)
    # oneDNN compiles and caches a kernel for every new (batch, length) shape of a bfloat16 product; its
    # default cache (1,024 kernels) grew a CPU run past 4 GB. 32 costs no measurable speed (set before the
    # first product, where oneDNN reads it).
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

        shutil.copytree(Path(tc.continue_from) / "tokenizer", run_dir / "tokenizer", dirs_exist_ok=True)
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
              f"(lr {learning_rate(state.step, cfg.d_model, tc.warmup, tc.lr_factor):.2e})")
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
    val_examples = encode_pairs(tokenizer, corpora.validation["val"], cfg.max_len)  # Multi30k val gives the loss
    val_batches = [make_batch([val_examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
                   for idx in token_batches(val_examples, tc.batch_tokens, shuffle=False)]
    quiet(f"model: {model.num_parameters():,} parameters, d_model {cfg.d_model}, N {cfg.N}, h {cfg.h}, "
          f"vocabulary {cfg.vocab_size}; {len(train_examples)} training pairs per epoch {corpora.sizes}; "
          f"device {device}")
    return Run(tc, run_dir, dist, device, corpora, tokenizer, model, train_model, optimizer, scaler, state,
               train_examples, val_batches, log)


def end_epoch(run: Run, loss_total: float, tokens_total: float, epoch_s: float, elapsed_s: float) -> str | None:
    """Validate, record the epoch, save what a resume and the final selection need; say why to stop, if so."""
    from safetensors.torch import save_file

    tc, state, model = run.tc, run.state, run.model
    scores = validation_bleu(model, run.tokenizer, run.corpora.validation, tc.val_bleu_limit)
    selection = sum(scores.values()) / len(scores)  # the mean over the validation sets chooses the weights
    # "val_bleu" is Multi30k val's BLEU; every other set adds "<name>_bleu" (e.g. tatoeba_dev_bleu).
    row = {"epoch": state.epoch, "step": state.step, "train_loss": loss_total / max(tokens_total, 1),
           "val_loss": validation_loss(model, run.val_batches, run.device, tc.label_smoothing),
           "val_bleu": scores["val"], "lr": learning_rate(state.step, model.cfg.d_model, tc.warmup, tc.lr_factor),
           "tokens_per_s": tokens_total / max(epoch_s, 1e-9), "epoch_s": epoch_s, "elapsed_s": elapsed_s,
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


def train(tc: TrainConfig, run_dir: str | Path, data_dir: str | Path | None = None,
          pairs: dict[str, list[tuple[str, str]]] | None = None, tokenizer=None, out_dir: str | Path | None = None,
          progress: bool = True, log=print, tatoeba_dir: str | Path | None = None) -> dict:
    """Train (or resume) in ``run_dir``; write the selected model as a checkpoint directory to ``out_dir``.

    ``pairs`` replaces reading the corpora from ``data_dir`` / ``tatoeba_dir`` (tests use it; see
    :func:`load_corpora`). Returns the training summary (history, best epoch, timings).
    """
    run = start_run(tc, Path(run_dir), data_dir, tatoeba_dir, pairs, tokenizer, log)
    dist, state, model = run.dist, run.state, run.model
    elapsed_before, t_start = state.elapsed_s, time.time()
    reason = "epochs done"
    model.train()
    while state.epoch < tc.epochs:
        batches = token_batches(run.train_examples, tc.batch_tokens, shuffle=True, seed=tc.seed + state.epoch + 1)
        batches = batches[dist.rank::dist.world]  # each process takes its own share
        if dist.enabled:  # equal counts, so no process waits on a missing all-reduce
            batches = batches[: int(dist.all_sum(len(batches))[0] // dist.world)]
        loss_sum, token_sum, epoch_s = run_epoch(model, run.train_model, run.optimizer, run.scaler, batches,
                                                 run.train_examples, tc, state, run.device, progress and dist.main,
                                                 dist.world)
        state.epoch += 1
        loss_total, tokens_total = dist.all_sum(loss_sum, token_sum)
        why = end_epoch(run, loss_total, tokens_total, epoch_s, elapsed_before + time.time() - t_start) \
            if dist.main else None
        if dist.all_sum(1.0 if why else 0.0)[0] > 0:
            reason = why or "stopped by the main process"
            break

    summary = {"history": state.history, "best_epoch": state.best_epoch, "best_val_bleu": state.best_bleu,
               "stop_reason": reason, "steps": state.step, "elapsed_s": state.elapsed_s,
               "parameters": model.num_parameters()}
    if dist.main:
        log(f"stopped: {reason}; best validation BLEU {state.best_bleu:.2f} at epoch {state.best_epoch}")
        summary["selected"] = select_weights(model, run.tokenizer, run.run_dir, tc, run.corpora.validation, state,
                                             summary, log)
        (run.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        if out_dir:
            export_checkpoint(out_dir, model, run.tokenizer, tc, run.corpora, state, summary["selected"], reason)
    dist.close()
    return summary
