"""The paper's base model trained on a borrowed GPU (one H100, 15 minutes), prepared and checked
here.

Three stages, one command each (``python -m transformer_viz.training.gpu_run STAGE``):

``prepare`` (here, on the CPU): the joint BPE and the corpora encoded once, into a folder of a few
MB that
    travels with the GPU command, so the GPU does no tokenizer work but decoding its dev
    translations.
``train`` (on the GPU, one process per direction): the trainer's own loop
(training.translation.run_epoch)
    for a wall-clock budget checked before every step, bf16 autocast, the paper's schedule and label
    smoothing; greedy dev BLEU as it goes; at the end the weights are quantised
    (checkpoints.compact), put
    back into the model, scored on the dev sets, and written as int8 shards with a manifest of their
    SHA-256 hashes and of those scores: the scores of the weights exactly as sent.
``join`` (here): checks the hashes, restores the weights, scores them again on this CPU and writes
    complete checkpoint directories.

Only torch, tokenizers, safetensors, sacrebleu, tqdm and numpy are imported: the GPU machine has no
Streamlit, plotly or transformers.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

DATA_FILE, DEV_FILE, DATA_MANIFEST = "corpora.safetensors", "dev.json", "manifest.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
LANGS = ("de", "en")  # the order in which every prepared split stores its two sides
TRAIN_SPLITS = ("multi30k_train", "tatoeba_train")
DEV_SETS = ("val", "tatoeba_dev")  # Multi30k val and the Tatoeba dev split; never a test set
DIRECTIONS = {"de-en": ("de", "en"), "en-de": ("en", "de")}
MANIFEST_SUFFIX = ".manifest.json"


# --- prepare: the BPE and the encoded corpora
# ---------------------------------------------------------


def _encode(tokenizer, texts: list[str], chunk: int = 20_000) -> list[list[int]]:
    ids: list[list[int]] = []
    for start in range(0, len(texts), chunk):
        ids += tokenizer(texts[start : start + chunk], add_special_tokens=False)["input_ids"]
    return ids


def _flat(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """ID lists -> (all IDs in int16, offsets in int32: row i is ids[offsets[i]:offsets[i + 1]])."""
    lengths = torch.tensor([0] + [len(r) for r in rows], dtype=torch.int64)
    flat = torch.tensor([i for r in rows for i in r], dtype=torch.int16)  # (total tokens,)
    return flat, torch.cumsum(lengths, 0).to(torch.int32)  # (total tokens,), (rows + 1,)


def _rows(flat: torch.Tensor, offsets: torch.Tensor) -> list[list[int]]:
    ids, ends = flat.tolist(), offsets.tolist()
    return [ids[a:b] for a, b in zip(ends[:-1], ends[1:])]


def prepare(
    out: str | Path,
    data_dir=None,
    tatoeba_dir=None,
    tokenizer_dir: str | Path | None = None,
    vocab_size: int = 8000,
    pairs: dict | None = None,
    log=print,
) -> dict:
    """Encode Multi30k train + Tatoeba train and the two dev sets into ``out``; returns its
    manifest.

    The corpora come through training.translation.load_corpora, so the Tatoeba dev split is carved
    exactly as the trainer carves it. ``tokenizer_dir``: reuse that tokenizer (the shipped
    checkpoints');
    without it a joint BPE of ``vocab_size`` is learned as the trainer learns it (build_tokenizer).
    ``pairs`` replaces reading files, as in load_corpora (tests).
    """
    from safetensors.torch import save_file

    from transformer_viz.checkpoints.compact import sha256
    from transformer_viz.text.tokenizer import load_tokenizer
    from transformer_viz.training.common import Distributed
    from transformer_viz.training.translation import TrainConfig, build_tokenizer, load_corpora

    t0 = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tc = TrainConfig(
        src_lang=LANGS[0],
        tgt_lang=LANGS[1],
        multi30k_copies=1,
        tatoeba_copies=1,
        vocab_size=vocab_size,
    )
    corpora = load_corpora(tc, data_dir, tatoeba_dir, pairs)
    n_multi30k = corpora.sizes["multi30k_train"]
    splits = {
        "multi30k_train": corpora.train[:n_multi30k],
        "tatoeba_train": corpora.train[n_multi30k:],
        **corpora.validation,
    }
    if set(splits) != set(TRAIN_SPLITS + DEV_SETS):
        raise ValueError(f"expected the splits {TRAIN_SPLITS + DEV_SETS}, got {sorted(splits)}")
    if tokenizer_dir:
        (out / "tokenizer").mkdir(exist_ok=True)
        for name in TOKENIZER_FILES:
            shutil.copyfile(Path(tokenizer_dir) / name, out / "tokenizer" / name)
        tokenizer = load_tokenizer(out / "tokenizer")
    else:
        shutil.rmtree(out / "tokenizer", ignore_errors=True)
        tokenizer = build_tokenizer(tc, out, corpora, Distributed())
    if len(tokenizer) > 2**15:
        raise ValueError(f"a vocabulary of {len(tokenizer)} does not fit int16 IDs")
    tensors, counts = {}, {}
    for split, split_pairs in splits.items():
        counts[split] = len(split_pairs)
        for side, lang in enumerate(LANGS):
            rows = _encode(tokenizer, [pair[side] for pair in split_pairs])
            tensors[f"{split}.{lang}.ids"], tensors[f"{split}.{lang}.offsets"] = _flat(rows)
    save_file(tensors, str(out / DATA_FILE))
    dev = {
        name: [list(p) for p in splits[name]] for name in DEV_SETS
    }  # references stay text for BLEU
    (out / DEV_FILE).write_text(json.dumps(dev, ensure_ascii=False), encoding="utf-8")
    files = [DATA_FILE, DEV_FILE, "tokenizer/tokenizer.json"]
    manifest = {
        "pairs": counts,
        "languages": list(LANGS),
        "vocab_size": len(tokenizer),
        "tokenizer": str(tokenizer_dir)
        if tokenizer_dir
        else f"joint BPE of {vocab_size} learned here",
        "tokens": {k: int(v.numel()) for k, v in tensors.items() if k.endswith(".ids")},
        "sha256": {name: sha256(out / name) for name in files},
        "bytes": sum((out / name).stat().st_size for name in files),
        "seconds": round(time.time() - t0, 1),
    }
    (out / DATA_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"wrote {out}: {manifest['bytes'] / 2**20:.1f} MiB, {counts} in {manifest['seconds']} s")
    return manifest


@dataclass
class Prepared:
    """The prepared folder, read back: the tokenizer (for decoding), every split's IDs and the dev
    texts."""

    directory: Path
    tokenizer: object
    ids: dict[str, dict[str, list[list[int]]]]  # split -> language -> ID lists (no special tokens)
    dev: dict[str, list[tuple[str, str]]]  # dev set -> (de, en) text pairs
    manifest: dict

    @classmethod
    def load(cls, directory: str | Path) -> "Prepared":
        from safetensors.torch import load_file

        from transformer_viz.text.tokenizer import load_tokenizer

        directory = Path(directory)
        tensors = load_file(str(directory / DATA_FILE))
        ids: dict[str, dict[str, list[list[int]]]] = {}
        for key in tensors:
            if key.endswith(".ids"):
                split, lang, _ = key.split(".")
                ids.setdefault(split, {})[lang] = _rows(
                    tensors[key], tensors[f"{split}.{lang}.offsets"]
                )
        dev_text = json.loads((directory / DEV_FILE).read_text(encoding="utf-8"))
        dev = {name: [tuple(p) for p in pairs] for name, pairs in dev_text.items()}
        manifest = json.loads((directory / DATA_MANIFEST).read_text())
        return cls(directory, load_tokenizer(directory / "tokenizer"), ids, dev, manifest)

    def examples(
        self, split: str, src: str, tgt: str, max_len: int
    ) -> list[tuple[list[int], list[int]]]:
        """What text.corpora.encode_pairs gives for the split's pairs: sources cut and ended by
        </s>,
        targets cut to max_len - 1."""
        eos = self.tokenizer.eos_token_id
        return [
            (s[: max_len - 1] + [eos], t[: max_len - 1])
            for s, t in zip(self.ids[split][src], self.ids[split][tgt])
        ]

    def dev_set(self, name: str, src: str, tgt: str, max_len: int, limit: int = 0):
        """(encoded sources, reference texts) of the first ``limit`` pairs (0: all) of a dev set."""
        examples = self.examples(name, src, tgt, max_len)[: limit or None]
        references = [pair[LANGS.index(tgt)] for pair in self.dev[name]][: limit or None]
        return [s for s, _ in examples], references


def dev_scores(
    model, prepared: Prepared, src: str, tgt: str, limit: int, batch_tokens: int = 2000
) -> dict[str, dict]:
    """Greedy translations of each dev set's first ``limit`` sentences, scored with sacreBLEU and
    chrF."""
    from transformer_viz.text.evaluation import repetition_rate, score, translate_encoded

    out = {}
    for name in DEV_SETS:
        sources, references = prepared.dev_set(name, src, tgt, model.cfg.max_len, limit)
        hyps = translate_encoded(model, prepared.tokenizer, sources, batch_tokens=batch_tokens)
        out[name] = {
            "sentences": len(hyps),
            **score(hyps, references).as_dict(),
            "repetition_rate": repetition_rate(prepared.tokenizer, hyps),
            "hypotheses": hyps,
        }
    return out


# --- train: one direction, one process, a fixed wall-clock budget
# -------------------------------------


@dataclass
class GpuRunConfig:
    """What a budgeted run adds to the trainer's TrainConfig (whose fields it fills from these)."""

    direction: str = "de-en"
    preset: str = "base"
    minutes: float = 8.0  # training wall-clock, checked before every step (evaluations included)
    batch_tokens: int = 25_000  # padded source + target tokens per batch; halved until it fits
    # The paper's schedule with its peak kept: factor · d_model^-0.5 · warmup^-0.5 = 7.0e-4 for
    # warmup 800, factor 0.447 (the paper: warmup 4000, factor 1), because a budget of minutes gives
    # a
    # few thousand steps, not the paper's 100,000.
    warmup: int = 800
    lr_factor: float = 0.447
    label_smoothing: float = 0.1
    multi30k_copies: int = 1
    tatoeba_copies: int = 1
    amp: str = "bf16"
    eval_every: int = 500  # steps between dev BLEU lines (0: after every epoch only)
    eval_limit: int = 300  # sentences of each dev set scored as training goes
    final_limit: int = 1000  # sentences of each dev set scored with the weights as sent
    memory_fraction: float = 0.45  # of the GPU, per process (two share one)
    seed: int = 1234
    threads: int = 0  # CPU threads (0: torch's default)
    model_overrides: dict = field(default_factory=dict)

    def train_config(self):
        from transformer_viz.training.translation import TrainConfig

        src, tgt = DIRECTIONS[self.direction]
        return TrainConfig(
            src_lang=src,
            tgt_lang=tgt,
            config=self.preset,
            batch_tokens=self.batch_tokens,
            warmup=self.warmup,
            lr_factor=self.lr_factor,
            label_smoothing=self.label_smoothing,
            multi30k_copies=self.multi30k_copies,
            tatoeba_copies=self.tatoeba_copies,
            amp=self.amp,
            seed=self.seed,
            threads=self.threads,
            model_overrides=self.model_overrides,
        )


def _fused_attention_runs(model, batch, amp: str) -> bool:
    """Whether the model's forward pass runs with only the fused attention kernels allowed (flash,
    memory-efficient, cuDNN; no math fallback), padding and causal masks included."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from transformer_viz.training.common import autocast

    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    try:
        with torch.no_grad(), autocast(batch.src.device, amp), sdpa_kernel(fused):
            model(batch.src[:8], batch.tgt_in[:8])
        return True
    except RuntimeError as exc:
        if isinstance(exc, torch.OutOfMemoryError):
            raise
        return False


def fitting_batch_tokens(model, examples, batch_tokens: int, device, amp: str, log=print) -> int:
    """The largest of batch_tokens, batch_tokens / 2, … for which the batch with the most padded
    positions passes forward and backward on ``device`` (CUDA only; the CPU keeps batch_tokens)."""
    from transformer_viz.models.losses import label_smoothed_loss
    from transformer_viz.text.corpora import make_batch, token_batches
    from transformer_viz.training.common import attention_kernel, autocast

    if device.type != "cuda":
        return batch_tokens
    cfg = model.cfg
    while batch_tokens >= 1000:
        batches = token_batches(examples, batch_tokens, shuffle=False)
        worst = max(
            batches,
            key=lambda idx: (
                len(idx) * max(max(len(examples[i][0]), len(examples[i][1]) + 1) for i in idx)
            ),
        )
        batch = make_batch([examples[i] for i in worst], cfg.pad_id, cfg.bos_id, cfg.eos_id).to(
            device
        )
        try:
            fused = _fused_attention_runs(model, batch, amp)
            with autocast(device, amp), attention_kernel(device):
                logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            label_smoothed_loss(logits, batch.tgt_out, 0.1, cfg.pad_id).backward()
            model.zero_grad(set_to_none=True)
            log(
                f"batch of {batch_tokens} tokens fits: peak "
                f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} "
                f"GiB for the worst batch {tuple(batch.src.shape)} + {tuple(batch.tgt_in.shape)}; "
                + (
                    "fused attention kernels take the masked attention"
                    if fused
                    else "NO fused attention kernel takes it: PyTorch falls back to the math kernel"
                )
            )
            return batch_tokens
        except torch.OutOfMemoryError:
            model.zero_grad(set_to_none=True)
            del batch
            torch.cuda.empty_cache()
            log(f"batch of {batch_tokens} tokens does not fit; halving")
            batch_tokens //= 2
    raise RuntimeError("not even a batch of 1,000 tokens fits")


def train_direction(
    rc: GpuRunConfig, data: str | Path, out: str | Path, log=print, command: str = ""
) -> dict:
    """Train one direction for ``rc.minutes``, then quantise, score and write it; returns the
    manifest.
    ``command``: the command line, recorded in the manifest for the model card."""
    from transformer_viz.checkpoints import state_dict_for_saving
    from transformer_viz.checkpoints.compact import (
        dequantise,
        quantise,
        write_manifest,
        write_shards,
    )
    from transformer_viz.models.config import preset
    from transformer_viz.models.transformer import Transformer
    from transformer_viz.text.corpora import make_batch, token_batches
    from transformer_viz.training.common import TrainState, validation_loss
    from transformer_viz.training.translation import run_epoch

    t_start = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tc = rc.train_config()
    src, tgt = DIRECTIONS[rc.direction]
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if rc.threads:
        torch.set_num_threads(rc.threads)
    if device.type == "cuda":
        torch.cuda.set_per_process_memory_fraction(rc.memory_fraction)
        # TF32 for the float32 parts of training; the final scoring switches it off again.
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(rc.seed)

    prepared = Prepared.load(data)
    cfg = preset(rc.preset, vocab_size=len(prepared.tokenizer), **rc.model_overrides)
    examples = []
    for split, copies in zip(TRAIN_SPLITS, (rc.multi30k_copies, rc.tatoeba_copies)):
        examples += prepared.examples(split, src, tgt, cfg.max_len) * copies
    val_examples = prepared.examples("val", src, tgt, cfg.max_len)
    val_batches = [
        make_batch([val_examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
        for idx in token_batches(val_examples, 8000, shuffle=False)
    ]
    model = Transformer(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda" and rc.amp == "auto")
    tc.batch_tokens = fitting_batch_tokens(model, examples, rc.batch_tokens, device, rc.amp, log)
    log(
        f"{rc.direction}: {model.num_parameters():,} parameters (d_model {cfg.d_model}, d_ff "
        f"{cfg.d_ff}, "
        f"h {cfg.h}, N {cfg.N}, {'Pre' if cfg.pre_ln else 'Post'}-LN), {len(examples):,} "
        f"training pairs, "
        f"batches of {tc.batch_tokens} tokens, device {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
    )

    state, history = TrainState(), []
    t_train = time.time()
    deadline = t_train + rc.minutes * 60
    window = {"loss": 0.0, "steps": 0}

    tokens_seen = [0]

    def evaluate() -> None:
        scores = dev_scores(model, prepared, src, tgt, rc.eval_limit)
        elapsed = time.time() - t_train
        row = {
            "epoch": state.epoch,
            "step": state.step,
            "train_loss": window["loss"] / max(window["steps"], 1),
            "val_loss": validation_loss(model, val_batches, device, rc.label_smoothing),
            "val_bleu": scores["val"]["bleu"],
            "tatoeba_dev_bleu": scores["tatoeba_dev"]["bleu"],
            "tokens_per_s": tokens_seen[0] / max(elapsed, 1e-9),
            "elapsed_s": elapsed,
            "dev_sentences": rc.eval_limit,
        }
        history.append(row)
        window.update(loss=0.0, steps=0)
        rounded = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
        log(json.dumps({"direction": rc.direction, **rounded}))

    def after_step(st, loss: float, n_tokens: int) -> bool:
        window["loss"] += loss
        window["steps"] += 1
        tokens_seen[0] += n_tokens
        if rc.eval_every and st.step % rc.eval_every == 0:
            evaluate()
        return False

    model.train()
    while time.time() < deadline:
        batches = token_batches(
            examples, tc.batch_tokens, shuffle=True, seed=tc.seed + state.epoch + 1
        )
        run_epoch(
            model,
            model,
            optimizer,
            scaler,
            batches,
            examples,
            tc,
            state,
            device,
            False,
            1,
            deadline=deadline,
            after_step=after_step,
        )
        if (
            time.time() < deadline
        ):  # a whole epoch: its end is a natural point to look at the dev sets
            state.epoch += 1
            if not rc.eval_every:
                evaluate()
    train_s = time.time() - t_train
    if device.type == "cuda":
        torch.cuda.synchronize()
    if not history or history[-1]["step"] != state.step:
        evaluate()
    log(
        f"{rc.direction}: {state.step} steps, {state.epoch} whole epochs, {tokens_seen[0]:,} "
        f"target tokens in "
        f"{train_s:.0f} s ({tokens_seen[0] / max(train_s, 1e-9):,.0f} tokens/s)"
    )

    # The weights as sent: quantised, put back, scored in float32 (no TF32, as the CPU computes).
    t_final = time.time()
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    compact = quantise(state_dict_for_saving(model))
    model.load_state_dict(dequantise(compact), strict=False)
    model.eval()
    final = dev_scores(model, prepared, src, tgt, rc.final_limit)
    files = write_shards(compact, out, rc.direction)
    manifest = {
        "direction": rc.direction,
        "src_lang": src,
        "tgt_lang": tgt,
        "config": cfg.to_dict(),
        "run": asdict(rc),
        "batch_tokens_used": tc.batch_tokens,
        "steps": state.step,
        "epochs": state.epoch,
        "target_tokens": tokens_seen[0],
        "train_seconds": round(train_s, 1),
        "tokens_per_s": round(tokens_seen[0] / max(train_s, 1e-9)),
        "history": history,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "peak_memory_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        if device.type == "cuda"
        else None,
        "torch": torch.__version__,
        "data": prepared.manifest["sha256"],
        "dev_scores_as_sent": final,
        "files": files,
        "command": command,
        "seconds": {
            "start": round(t_train - t_start, 1),
            "train": round(train_s, 1),
            "quantise_score_write": round(time.time() - t_final, 1),
            "total": round(time.time() - t_start, 1),
        },
    }
    write_manifest(out / f"{rc.direction}{MANIFEST_SUFFIX}", manifest)
    log(
        f"{rc.direction}: as sent, greedy dev BLEU "
        + ", ".join(f"{k} {v['bleu']:.2f} ({v['sentences']} sentences)" for k, v in final.items())
        + f"; {len(files)} files of {sum(f['bytes'] for f in files) / 2**20:.1f} MiB; "
        f"{manifest['seconds']['total']:.0f} s in all"
    )
    return manifest


# --- join: back on the CPU
# ----------------------------------------------------------------------------

BLEU_TOLERANCE = (
    0.5  # GPU and CPU float32 kernels round differently; a near tie can flip a greedy token
)


def join(
    returned: str | Path,
    data: str | Path,
    out_root: str | Path,
    commands: list[str] | None = None,
    tolerance: float = BLEU_TOLERANCE,
    name_prefix: str = "base-",
    log=print,
) -> dict[str, dict]:
    """For every manifest in ``returned`` whose shards came back: check the hashes, restore the
    weights,
    score them again here, compare with the GPU's scores and write ``out_root/<prefix><direction>``.
    Returns direction -> report (a direction whose shards are missing is reported, not written)."""
    from transformer_viz.checkpoints.compact import HashMismatch, dequantise, read_shards
    from transformer_viz.models.config import ModelConfig
    from transformer_viz.models.transformer import Transformer

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
        cfg = ModelConfig.from_dict(manifest["config"])
        model = Transformer(cfg)
        model.load_state_dict(dequantise(compact), strict=False)
        model.eval()
        t0 = time.time()
        limit = manifest["run"]["final_limit"]
        cpu = dev_scores(model, prepared, manifest["src_lang"], manifest["tgt_lang"], limit)
        agreement = {}
        for name, row in cpu.items():
            gpu_row = manifest["dev_scores_as_sent"][name]
            differ = sum(a != b for a, b in zip(row["hypotheses"], gpu_row["hypotheses"]))
            agreement[name] = {
                "gpu_bleu": gpu_row["bleu"],
                "cpu_bleu": row["bleu"],
                "difference": row["bleu"] - gpu_row["bleu"],
                "sentences": row["sentences"],
                "different_translations": differ,
            }
        log(
            f"{direction}: dev BLEU here vs on the GPU ({time.time() - t0:.0f} s): "
            + json.dumps(agreement)
        )
        worst = max(abs(a["difference"]) for a in agreement.values())
        if worst > tolerance:
            raise ValueError(
                f"{direction}: dev BLEU here differs from the GPU's by {worst:.2f} "
                f"(tolerance {tolerance}): these are not the weights that were scored"
            )
        directory = Path(out_root) / f"{name_prefix}{direction}"
        write_checkpoint(directory, model, prepared, manifest, cpu, agreement, commands or [])
        reports[direction] = {"written": True, "directory": str(directory), "agreement": agreement}
    return reports


def write_checkpoint(
    directory: Path,
    model,
    prepared: Prepared,
    manifest: dict,
    cpu: dict,
    agreement: dict,
    commands: list[str],
) -> None:
    """A complete checkpoint directory: float16 weights (exactly the weights as sent), config,
    tokenizer,
    decoding defaults, language statistics, metadata and the model card."""
    from transformer_viz.checkpoints import load_checkpoint, save_checkpoint, state_dict_for_saving
    from transformer_viz.text.corpora import MULTI30K_CREDIT, TATOEBA_CREDIT
    from transformer_viz.text.decoding_defaults import GenerationDefaults
    from transformer_viz.text.language_stats import build_language_stats, save_language_stats

    run, pairs = manifest["run"], prepared.manifest["pairs"]
    src, tgt, cfg = manifest["src_lang"], manifest["tgt_lang"], model.cfg
    minutes = manifest["train_seconds"] / 60
    data = {
        "Multi30k": f"{MULTI30K_CREDIT}; {pairs['multi30k_train']:,} training pairs × "
        f"{run['multi30k_copies']} per epoch",
        "Tatoeba": f"{TATOEBA_CREDIT}; {pairs['tatoeba_train']:,} training pairs × "
        f"{run['tatoeba_copies']} "
        f"per epoch, {pairs['tatoeba_dev']:,} held out as the dev split",
    }
    on_gpu = manifest["device"] != "cpu"
    shape = (
        "the paper's base model"
        if manifest["run"]["preset"] == "base"
        else f"the {manifest['run']['preset']} preset"
    )
    where = (
        f"{manifest['device']}, a borrowed GPU (one H100, 15 minutes)"
        if on_gpu
        else "the CPU (a dry run of the GPU script)"
    )
    hardware = {
        "GPU": f"{where}, shared by two processes (one per direction)",
        "wall_clock_minutes": round(minutes, 1),
        "target_tokens_per_s": manifest["tokens_per_s"],
        "steps": manifest["steps"],
        "peak_memory_gib": manifest["peak_memory_gib"],
        "torch": manifest["torch"],
        "seconds": manifest["seconds"],
    }
    training = {
        "recipe": f"the paper's base model: Adam (0.9, 0.98, 1e-9), lr = {run['lr_factor']} · "
        f"d_model^-0.5 · min(step^-0.5, step · {run['warmup']}^-1.5), label smoothing "
        f"{run['label_smoothing']}, dropout {cfg.dropout}, {run['amp']} autocast, fused "
        f"attention (scaled_dot_product_attention)",
        "batch_tokens": manifest["batch_tokens_used"],
        "minutes": run["minutes"],
        "steps": manifest["steps"],
        "whole_epochs": manifest["epochs"],
        "selected_weights": "the last (no selection: one fixed budget)",
        "weights_sent": "int8 per row with power-of-two scales, vectors float16 (exact in float16)",
        "gpu_command": manifest["command"],
        "commands": "; ".join(commands),
    }
    scores = [
        {
            "split": name,
            "decoding": "greedy",
            "sentences": row["sentences"],
            **{k: row[k] for k in ("bleu", "chrf", "bleu_lower_tok", "repetition_rate")},
        }
        for name, row in cpu.items()
    ]
    meta = {
        "name": f"Multi30k + Tatoeba {src}→{tgt}, {shape}, {minutes:.1f} minutes on "
        f"{'a GPU' if on_gpu else 'the CPU'}",
        "description": f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N} ({shape}), "
        "trained for "
        f"{minutes:.1f} minutes on {where}; both directions at once.",
        "src_lang": src,
        "tgt_lang": tgt,
        "history": manifest["history"],
        "data": data,
        "training": training,
        "hardware": hardware,
        "scores": scores,
        "gpu_check": {
            "dev_bleu_agreement": agreement,
            "shards": manifest["files"],
            "prepared_data": prepared.manifest["sha256"],
        },
    }
    save_checkpoint(
        directory,
        model,
        prepared.tokenizer,
        meta,
        half=True,
        generation=GenerationDefaults(num_beams=1),
    )
    stats = build_language_stats(
        {
            lang: [ids for split in TRAIN_SPLITS for ids in prepared.ids[split][lang]]
            for lang in LANGS
        },
        ["multi30k", "tatoeba"],
    )
    save_language_stats(directory, stats)
    written = load_checkpoint(directory).model.state_dict()
    for name, tensor in state_dict_for_saving(model).items():
        if not torch.equal(written[name], tensor):
            raise ValueError(f"{directory}: {name} changed when written as float16")


# --- the command line
# -----------------------------------------------------------------------------------


def _config_flags(p: argparse.ArgumentParser) -> None:
    for f in GpuRunConfig.__dataclass_fields__.values():
        default = f.default_factory() if callable(f.default_factory) else f.default
        kind = json.loads if isinstance(default, dict) else type(default)
        p.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=kind,
            default=default,
            help=f"(default: {default!r})",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_viz.training.gpu_run",
        description="prepare, train (on a GPU) and join the base model",
    )
    sub = parser.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("prepare", help="encode the corpora with the joint BPE into a folder")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--tatoeba-dir", required=True)
    p.add_argument(
        "--tokenizer",
        default="checkpoints/de-en/tokenizer",
        help="reuse this tokenizer directory ('' learns a joint BPE of --vocab-size)",
    )
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--out", default="gpu-data")
    p = sub.add_parser(
        "train", help="train one direction for a wall-clock budget; write its shards"
    )
    p.add_argument("--data", default="gpu-data")
    p.add_argument("--out", default="gpu-out")
    _config_flags(p)
    p = sub.add_parser("join", help="check the returned shards, score them here, write checkpoints")
    p.add_argument(
        "--returned", required=True, help="the folder holding the files the GPU sent back"
    )
    p.add_argument("--data", default="gpu-data")
    p.add_argument("--out", default="checkpoints")
    p.add_argument(
        "--prefix", default="base-", help="checkpoint directory name: PREFIX + direction"
    )
    p.add_argument("--tolerance", type=float, default=BLEU_TOLERANCE)
    p.add_argument(
        "--command", action="append", default=[], help="a command to record in the model card"
    )
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, flush=True)

    if args.stage == "prepare":
        prepare(
            args.out,
            args.data_dir,
            args.tatoeba_dir,
            args.tokenizer or None,
            args.vocab_size,
            log=log,
        )
    elif args.stage == "train":
        rc = GpuRunConfig(
            **{name: getattr(args, name) for name in GpuRunConfig.__dataclass_fields__}
        )
        command = " ".join(
            ["python -m transformer_viz.training.gpu_run"]
            + [shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)]
        )
        train_direction(rc, args.data, args.out, log=log, command=command)
    else:
        reports = join(
            args.returned, args.data, args.out, args.command, args.tolerance, args.prefix, log=log
        )
        print(json.dumps(reports, indent=1))
        if not any(r["written"] for r in reports.values()):
            return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "32")
    raise SystemExit(main())
