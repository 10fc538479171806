"""Training the decoder-only model (models/gpt/) on one language's side of the shipped corpora.

Every distinct sentence of Multi30k's training captions and of the Tatoeba training split, in one
language, is a sequence <s> w_1 … w_n </s>; the model learns to predict each next token
(cross-entropy, no label smoothing, so that exp(loss) is the perplexity). A BPE vocabulary of that
language alone is trained first. Held out, never trained on: Multi30k val and test_2016_flickr and
the Tatoeba dev split (the translation models' dev split, so no sentence of it is trained on by any
shipped model); any training sentence equal to a held-out one is dropped.

AdamW (β 0.9/0.95, weight decay 0.1 on matrices), a linear warm-up, then a cosine decay to a tenth
of the peak over the wall-clock budget: the learning rate follows the fraction of ``max_minutes``
spent, so a run of any speed ends its schedule when its time is up. After every epoch the state is
saved (a restart resumes there) and, when the mean held-out loss improved, the weights are exported
to ``--out``.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_viz.checkpoints import save_checkpoint
from transformer_viz.models.gpt.config import GPTConfig
from transformer_viz.models.gpt.model import GPT
from transformer_viz.training.common import TrainState, autocast, load_train_state, save_train_state

HELD_OUT = ("multi30k_val", "tatoeba_dev")  # choose between epochs; test_2016 is only reported
REPORTED = ("multi30k_val", "tatoeba_dev", "multi30k_test_2016")


@dataclass
class GPTTrainConfig:
    lang: str = "en"
    model: dict = field(default_factory=lambda: {"d_model": 256, "d_ff": 1024, "h": 8, "N": 4,
                                                 "max_len": 128, "dropout": 0.1})
    vocab_size: int = 8000
    batch_tokens: int = 4096  # tokens per batch, padding included
    epochs: int = 100
    max_minutes: float = 100.0  # wall-clock budget; the learning-rate schedule spans it
    lr: float = 1e-3
    min_lr_fraction: float = 0.1
    warmup: int = 300
    weight_decay: float = 0.1
    clip: float = 1.0
    seed: int = 1234
    amp: str = "bf16"
    threads: int = 1
    train_limit: int = 0  # first n sentences of each corpus (quick experiments, tests)


@dataclass
class Sentences:
    train: list[str]
    held_out: dict[str, list[str]]
    sizes: dict[str, int]


def read_sentences(lang: str, data_dir=None, tatoeba_dir=None, pairs: dict | None = None,
                   limit: int = 0) -> Sentences:
    """One language's sentences: distinct training sentences and the held-out sets. ``pairs`` (the
    splits as (German, English) pairs: train, val, test_2016_flickr, tatoeba_train, tatoeba_dev)
    replaces the files."""
    from transformer_viz.text.corpora import read_split, read_tatoeba

    if pairs is None:
        pairs = {s: read_split(data_dir, s, "de", "en")
                 for s in ("train", "val", "test_2016_flickr")}
        for split in ("tatoeba_train", "tatoeba_dev"):
            pairs[split] = read_tatoeba(tatoeba_dir, split, "de", "en", data_dir=data_dir)
    side = 0 if lang == "de" else 1

    def texts(split: str) -> list[str]:
        return list(dict.fromkeys(p[side] for p in pairs.get(split, [])))

    held_out = {"multi30k_val": texts("val"), "tatoeba_dev": texts("tatoeba_dev"),
                "multi30k_test_2016": texts("test_2016_flickr")}
    unseen = {s for group in held_out.values() for s in group}
    multi30k, tatoeba = texts("train")[:limit or None], texts("tatoeba_train")[:limit or None]
    train = [s for s in dict.fromkeys(multi30k + tatoeba) if s not in unseen]
    sizes = {"multi30k_train": len(multi30k), "tatoeba_train": len(tatoeba), "train": len(train),
             **{k: len(v) for k, v in held_out.items()}}
    return Sentences(train, held_out, sizes)


def encode(tokenizer, sentences: list[str], cfg: GPTConfig) -> list[list[int]]:
    """<s> ids </s> per sentence, cut to the model's max_len."""
    ids = tokenizer(sentences, add_special_tokens=False)["input_ids"]
    return [([cfg.bos_id] + row + [cfg.eos_id])[: cfg.max_len] for row in ids]


def batches(examples: list[list[int]], max_tokens: int, seed: int | None) -> list[list[int]]:
    """Indices grouped by similar length, at most ``max_tokens`` padded tokens each; shuffled when
    seeded."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]))
    out, current, longest = [], [], 0
    for i in order:
        longest_if = max(longest, len(examples[i]))
        if current and longest_if * (len(current) + 1) > max_tokens:
            out.append(current)
            current, longest_if = [], len(examples[i])
        current.append(i)
        longest = longest_if
    if current:
        out.append(current)
    if seed is not None:
        random.Random(seed).shuffle(out)
    return out


def make_tensor(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    T = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (T - len(r)) for r in rows])  # (B, T)


def next_token_loss(model: GPT, tokens: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of every next token: logits at t predict tokens[t + 1]; padding is not
    counted."""
    logits = model(tokens[:, :-1])  # (B, T−1, V)
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1),
                           ignore_index=model.cfg.pad_id, reduction=reduction)


@torch.no_grad()
def held_out_loss(model: GPT, examples: list[list[int]], batch_tokens: int = 8192) -> float:
    """Mean next-token cross-entropy (nats per token, </s> included) over the sentences; exp() is
    the perplexity."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for idx in batches(examples, batch_tokens, seed=None):
        tokens = make_tensor([examples[i] for i in idx], model.cfg.pad_id)
        total += next_token_loss(model, tokens, reduction="sum").item()
        count += int((tokens[:, 1:] != model.cfg.pad_id).sum())
    model.train(was_training)
    return total / max(count, 1)


def learning_rate(tc: GPTTrainConfig, step: int, fraction: float) -> float:
    """Linear warm-up over ``tc.warmup`` steps, then cosine from tc.lr down to tc.min_lr_fraction ·
    tc.lr as the spent fraction of the time budget goes from 0 to 1."""
    warm = min(1.0, (step + 1) / tc.warmup)
    cosine = 0.5 * (1 + math.cos(math.pi * min(max(fraction, 0.0), 1.0)))
    return tc.lr * warm * (tc.min_lr_fraction + (1 - tc.min_lr_fraction) * cosine)


def _optimizer(model: GPT, tc: GPTTrainConfig) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    return torch.optim.AdamW([{"params": decay, "weight_decay": tc.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=tc.lr,
                             betas=(0.9, 0.95))


def _tokenizer(tc: GPTTrainConfig, run_dir: Path, sentences: Sentences):
    from transformer_viz.text.tokenizer import load_tokenizer, train_tokenizer

    tok_dir = run_dir / "tokenizer"
    if not (tok_dir / "tokenizer.json").is_file():
        train_tokenizer(sentences.train, tc.vocab_size).save_pretrained(str(tok_dir))
    return load_tokenizer(tok_dir)


def export(out_dir, model: GPT, tokenizer, tc: GPTTrainConfig, sentences: Sentences,
           state: TrainState, reason: str) -> None:
    from transformer_viz.checkpoints.cards import gpt_card
    from transformer_viz.text.corpora import MULTI30K_CREDIT, TATOEBA_CREDIT

    language = {"en": "English", "de": "German"}[tc.lang]
    best = next((h for h in state.history if h["epoch"] == state.best_epoch), {})
    meta = {"name": f"GPT {language}, Multi30k + Tatoeba", "arch": "gpt", "lang": tc.lang,
            "description": f"A small decoder-only Transformer that completes {language} sentences, "
                           f"trained on the {language} side of the translation models' corpora.",
            "data": {"Multi30k": f"{MULTI30K_CREDIT}; {sentences.sizes['multi30k_train']:,} "
                                 f"distinct {language} training captions",
                     "Tatoeba": f"{TATOEBA_CREDIT}; {sentences.sizes['tatoeba_train']:,} distinct "
                                f"{language} sentences of the training split",
                     "training sentences": f"{sentences.sizes['train']:,} (distinct; none equal to "
                                           "a held-out one)"},
            "held_out": {k: {"sentences": sentences.sizes[k], "loss": best.get(f"{k}_loss"),
                             "perplexity": best.get(f"{k}_ppl")} for k in REPORTED},
            "history": state.history,
            "training": {**asdict(tc),
                         "selected_weights": f"epoch {state.best_epoch}, lowest mean held-out loss "
                                             f"on {' and '.join(HELD_OUT)}",
                         "stop_reason": reason,
                         "wall_clock_minutes": round(state.elapsed_s / 60, 1), "steps": state.step}}
    save_checkpoint(out_dir, model, tokenizer, meta, half=True, card=gpt_card)


def _epoch(model, optimizer, examples, tc: GPTTrainConfig, state: TrainState, elapsed,
           budget: float, log) -> tuple[float, int, bool]:
    """One pass (cut short when the budget is spent). Returns (loss sum, tokens, finished)."""
    loss_sum, token_sum, t0 = 0.0, 0, time.time()
    order = batches(examples, tc.batch_tokens, seed=tc.seed + state.epoch + 1)
    for n, idx in enumerate(order):
        if elapsed() > budget:
            return loss_sum, token_sum, False
        lr = learning_rate(tc, state.step, elapsed() / budget)
        for group in optimizer.param_groups:
            group["lr"] = lr
        tokens = make_tensor([examples[i] for i in idx], model.cfg.pad_id)
        with autocast(torch.device("cpu"), tc.amp):
            loss = next_token_loss(model, tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
        optimizer.step()
        state.step += 1
        n_tokens = int((tokens[:, 1:] != model.cfg.pad_id).sum())
        loss_sum += loss.item() * n_tokens
        token_sum += n_tokens
        if n % 200 == 0:
            log(f"epoch {state.epoch + 1} batch {n}/{len(order)} loss {loss.item():.3f} lr "
                f"{lr:.2e} {token_sum / max(time.time() - t0, 1e-9):.0f} tok/s")
    return loss_sum, token_sum, True


def _end_epoch(row: dict, model: GPT, held: dict, state: TrainState, elapsed_s: float,
               run_dir: Path, log) -> bool:
    """Score the held-out sets into the epoch's row and append it; keep the weights
    (best.safetensors) when the mean held-out loss is the lowest so far, and say so."""
    from safetensors.torch import save_file

    from transformer_viz.checkpoints import state_dict_for_saving

    for name, rows in held.items():
        row[f"{name}_loss"] = held_out_loss(model, rows)
        row[f"{name}_ppl"] = math.exp(row[f"{name}_loss"])
    scored = [row[f"{k}_loss"] for k in HELD_OUT if k in held]
    score = sum(scored) / max(1, len(scored))
    row["elapsed_s"] = elapsed_s
    state.history.append(row)
    state.elapsed_s = elapsed_s
    log(json.dumps(row))
    if score >= state.best_bleu:
        return False
    state.best_bleu, state.best_epoch = score, state.epoch
    save_file(state_dict_for_saving(model), str(run_dir / "best.safetensors"))
    return True


def train_gpt(tc: GPTTrainConfig, run_dir, data_dir=None, tatoeba_dir=None, out_dir=None,
              pairs: dict | None = None, log=print) -> dict:
    """Train (or resume) in ``run_dir``; export the best epoch by mean held-out loss to
    ``out_dir``."""
    run_dir, t_start = Path(run_dir), time.time()
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(tc.threads) if tc.threads else None
    random.seed(tc.seed)
    torch.manual_seed(tc.seed)
    sentences = read_sentences(tc.lang, data_dir, tatoeba_dir, pairs, tc.train_limit)
    tokenizer = _tokenizer(tc, run_dir, sentences)
    model = GPT(GPTConfig(vocab_size=len(tokenizer), **tc.model))
    optimizer = _optimizer(model, tc)
    (run_dir / "train_config.json").write_text(json.dumps(asdict(tc), indent=2))
    state = TrainState.from_dict(load_train_state(run_dir, model, optimizer))
    # here: the best mean held-out loss
    state.best_bleu = state.best_bleu if state.history else float("inf")
    examples = encode(tokenizer, sentences.train, model.cfg)
    held = {k: encode(tokenizer, v, model.cfg) for k, v in sentences.held_out.items() if v}
    log(f"model: {model.cfg.name}, {model.num_parameters():,} parameters; sentences "
        f"{sentences.sizes}; {sum(map(len, examples)):,} training tokens; budget "
        f"{tc.max_minutes} min" + (f"; resuming after epoch {state.epoch}" if state.epoch else ""))
    budget, elapsed_before = tc.max_minutes * 60 or float("inf"), state.elapsed_s
    reason = "epochs done"

    def elapsed() -> float:
        return elapsed_before + time.time() - t_start

    model.train()
    while state.epoch < tc.epochs:
        t_epoch = time.time()
        loss_sum, token_sum, finished = _epoch(model, optimizer, examples, tc, state,
                                               elapsed, budget, log)
        if not finished:
            reason = f"time budget of {tc.max_minutes} minutes reached"
            if token_sum == 0:
                break
        state.epoch += 1
        row = {"epoch": state.epoch, "step": state.step, "train_loss": loss_sum / max(token_sum, 1),
               "tokens_per_s": token_sum / max(time.time() - t_epoch, 1e-9), "complete": finished}
        if _end_epoch(row, model, held, state, elapsed(), run_dir, log) and out_dir:
            export(out_dir, model, tokenizer, tc, sentences, state, "still training")
        save_train_state(run_dir, model, optimizer, asdict(state))
        if not finished:
            break
    return _finish(run_dir, out_dir, model, tokenizer, tc, sentences, state, reason, log)


def _finish(run_dir: Path, out_dir, model: GPT, tokenizer, tc: GPTTrainConfig, sentences: Sentences,
            state: TrainState, reason: str, log) -> dict:
    """Export the best epoch's weights (when ``out_dir``) and write the run's summary.json."""
    from safetensors.torch import load_file

    if (run_dir / "best.safetensors").is_file():
        model.load_state_dict(load_file(str(run_dir / "best.safetensors")))
        if out_dir:
            export(out_dir, model, tokenizer, tc, sentences, state, reason)
    log(f"stopped: {reason}; best epoch {state.best_epoch}")
    summary = {"history": state.history, "best_epoch": state.best_epoch, "stop_reason": reason,
               "steps": state.step, "elapsed_s": state.elapsed_s,
               "parameters": model.num_parameters()}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
