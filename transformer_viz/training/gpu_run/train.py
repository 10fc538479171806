"""One direction, one process, a fixed wall-clock budget (on the GPU): the trainer's own loop
(training.translation.run_epoch) with a deadline checked before every step, greedy dev BLEU as it
goes, then the weights quantised (checkpoints.compact), put back, scored and written as int8 shards
with a manifest of their SHA-256 hashes and of those scores."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from transformer_viz.training.gpu_run.compiling import SCOPES, compile_forward, eager
from transformer_viz.training.gpu_run.data import (DIRECTIONS, MANIFEST_SUFFIX, TRAIN_SPLITS,
                                                   Prepared, dev_scores, loss_batches)
from transformer_viz.training.gpu_run.probe import fitting_batch_tokens
from transformer_viz.training.gpu_run.resume import (InitRefused, check_compatible, init_record,
                                                     load_init, sessions, steps_total,
                                                     train_seconds_total)
from transformer_viz.training.gpu_run.rollback import Lowest


@dataclass
class GpuRunConfig:
    """What a budgeted run adds to the trainer's TrainConfig (whose fields it fills from these)."""

    direction: str = "de-en"
    preset: str = "base"
    minutes: float = 8.0  # training wall-clock, checked before every step (evaluations included)
    batch_tokens: int = 25_000  # padded source + target tokens per batch; halved until it fits
    # The paper's schedule with its peak kept: factor · d_model^-0.5 · warmup^-0.5 = 7.0e-4 for
    # warmup 800, factor 0.447 (the paper: warmup 4000, factor 1), because a budget of minutes
    # gives a few thousand steps, not the paper's 100,000.
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
    # A returned direction's shards and manifest to go on from: the schedule goes on from their
    # step count, but Adam's moments start at zero, so the learning rate ramps up again over
    # rewarmup steps to the schedule's value (training.translation.rewarmup_factor).
    init_from: str = ""
    rewarmup: int = 200
    seed: int = 1234
    threads: int = 0  # CPU threads (0: torch's default)
    # From this fraction of the budget on, the weights at every evaluation (and the last) join a
    # running average; at the end the average and the last weights are both scored and the one
    # with the higher mean dev BLEU is sent, as the paper averaged its last checkpoints (0: off).
    average_from: float = 0.0
    # From this fraction of the budget on, the learning rate falls linearly to zero at its end
    # (run_epoch's cooldown_seconds), so that the weights sent have settled (0: off).
    cooldown_from: float = 0.0
    # From this fraction of the budget on (late_dropout_from), every dropout of the model is
    # late_dropout instead of the preset's (0: off): "late dropout". Dropout 0.1 lets the Post-LN
    # base model leave its first plateau (0.3 from scratch diverged on the GPU, 2026-11-28); a
    # higher rate later keeps it from memorising Multi30k (at 0.1 going on did, run A; at 0.3 the
    # val loss held, run B). With --compile the layers compile again once, at the switch.
    late_dropout: float = 0.0
    late_dropout_from: float = 0.25
    # torch.compile the training passes (dynamic shapes: one graph for every batch shape), so
    # that the host launches fewer, fused kernels per update. Compiled inside the budget on one
    # training batch; where compiling or a compiled update fails, the run goes on uncompiled and
    # says so. The evaluations run the model uncompiled.
    compile: bool = False
    # What one compiled graph covers (compiling.SCOPES): "layers", one graph per stack that its N
    # layers share, compiles the base model in about 40 % of the time of "model", the whole
    # forward.
    compile_scope: str = "layers"
    # At an evaluation whose Multi30k val loss exceeds the lowest so far by more than this, the
    # weights and Adam's state of that lowest evaluation are put back and the learning rate is
    # halved for the rest of the run (0: off). A run that diverges (dropout 0.3 from scratch did,
    # on 2026-11-28) would otherwise spend the rest of its budget, and of a GPU session, on nothing.
    rollback_above: float = 0.0
    model_overrides: dict = field(default_factory=dict)

    def train_config(self):
        from transformer_viz.training.translation import TrainConfig

        src, tgt = DIRECTIONS[self.direction]
        return TrainConfig(src_lang=src, tgt_lang=tgt, config=self.preset,
                           batch_tokens=self.batch_tokens, warmup=self.warmup,
                           lr_factor=self.lr_factor, label_smoothing=self.label_smoothing,
                           multi30k_copies=self.multi30k_copies,
                           tatoeba_copies=self.tatoeba_copies, amp=self.amp, seed=self.seed,
                           threads=self.threads, model_overrides=self.model_overrides,
                           rewarmup=self.rewarmup)

    def __post_init__(self) -> None:
        if self.compile_scope not in SCOPES:
            raise ValueError(f"--compile-scope {self.compile_scope!r}: choose one of "
                             f"{', '.join(SCOPES)}")
        if not 0 <= self.late_dropout < 1:
            raise ValueError(f"--late-dropout is a dropout rate, at least 0 (0: off) and below 1, "
                             f"not {self.late_dropout}")
        if self.rollback_above < 0:
            raise ValueError(f"--rollback-above is a rise in val loss, at least 0 (0: off), "
                             f"not {self.rollback_above}")

    @property
    def cooldown_seconds(self) -> float:
        """The cool-down's length: the budget's last (1 - cooldown_from) part (0: none)."""
        return (1 - self.cooldown_from) * self.minutes * 60 if self.cooldown_from else 0.0


def _device(rc: GpuRunConfig) -> torch.device:
    """The CUDA device when there is one (its memory share and TF32 set), else the CPU; seeded."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if rc.threads:
        torch.set_num_threads(rc.threads)
    if device.type == "cuda":
        torch.cuda.set_per_process_memory_fraction(rc.memory_fraction)
        # TF32 for the float32 parts of training; the final scoring switches it off again.
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(rc.seed)
    return device


def adam(model, device: torch.device) -> torch.optim.Adam:
    """The paper's Adam (β 0.9, 0.98, ε 1e-9). Fused where PyTorch has a fused kernel for the
    device: one call updates every weight, where the multi-tensor way makes a handful of calls per
    step and reads each weight's step count back one by one (tests/unit/test_gpu_step.py shows
    both give the same weights)."""
    from torch.autograd.graph import increment_version

    fused = device.type in ("cuda", "cpu")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9,
                                 fused=fused or None)
    if fused:
        # The fused kernel writes the weights without counting the write in their version
        # counters, which is how models/products.py knows that a weight changed and its layout
        # for gradient-free products (the evaluations as training goes) must be built again.
        weights = [p for group in optimizer.param_groups for p in group["params"]]
        optimizer.register_step_post_hook(lambda *_: increment_version(weights))
    return optimizer


class BudgetedRun:
    """One direction's run: its prepared data, model and optimiser, and what the loop has seen."""

    def __init__(self, rc: GpuRunConfig, data: str | Path, log=print,
                 init: tuple[dict, dict] | None = None) -> None:
        from transformer_viz.models.transformer.config import preset
        from transformer_viz.models.transformer.model import Transformer
        from transformer_viz.training.common import TrainState

        self.rc, self.log, self.tc = rc, log, rc.train_config()
        self.src, self.tgt = src, tgt = DIRECTIONS[rc.direction]
        self.device = device = _device(rc)
        self.prepared = prepared = Prepared.load(data)
        cfg = preset(rc.preset, vocab_size=len(prepared.tokenizer), **rc.model_overrides)
        self.examples = []
        for split, copies in zip(TRAIN_SPLITS, (rc.multi30k_copies, rc.tatoeba_copies)):
            self.examples += prepared.examples(split, src, tgt, cfg.max_len) * copies
        self.val_batches = loss_batches(prepared.examples("val", src, tgt, cfg.max_len), cfg)
        self.model = model = Transformer(cfg).to(device)
        self.train_model = model  # what the updates call: the model, or the model compiled
        self.uncompile = None  # while the updates run compiled: the function that undoes it
        # for the manifest, with rc.compile
        self.compile_record: dict = {"compiled": False, "scope": rc.compile_scope}
        self.optimizer = adam(model, device)
        self.scaler = torch.amp.GradScaler("cuda",
                                           enabled=device.type == "cuda" and rc.amp == "auto")
        self.tc.batch_tokens = fitting_batch_tokens(model, self.examples, rc.batch_tokens, device,
                                                    rc.amp, log)
        log(f"{rc.direction}: {model.num_parameters():,} parameters (d_model {cfg.d_model}, "
            f"d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N}, {'Pre' if cfg.pre_ln else 'Post'}-LN), "
            f"{len(self.examples):,} training pairs, batches of {self.tc.batch_tokens} tokens, "
            f"device {device}"
            + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""))
        self.state, self.history, self.previous = TrainState(), [], None
        # The loss summed on the device since the last evaluation, read there (not at every step),
        # the updates since then and when the first of them started.
        self.window = {"loss": torch.zeros((), device=device), "steps": 0, "start": time.time()}
        self.average: dict[str, torch.Tensor] = {}  # running sum of the averaged weights
        self.average_steps: list[int] = []
        self.lowest = Lowest(rc.rollback_above)  # used with rc.rollback_above
        # with rc.late_dropout: when (time.time()) the dropout changes, and then the record of it
        self.late_dropout_at: float | None = None
        self.late_dropout_record: dict | None = None
        self.tokens_seen, self.t_train, self.seconds_before = 0, time.time(), 0.0
        if init:
            self.go_on_from(*init)

    def go_on_from(self, previous: dict, compact: dict) -> None:
        """The returned weights put back, exactly; the step and epoch counts go on from theirs."""
        from transformer_viz.checkpoints import unique_state_dict
        from transformer_viz.checkpoints.compact import dequantise
        from transformer_viz.training.common import TrainState

        model = self.model
        check_compatible(previous, model.cfg.to_dict(), self.prepared.manifest["sha256"])
        missing, unexpected = model.load_state_dict(dequantise(compact), strict=False)
        tied = set(model.state_dict()) - set(unique_state_dict(model))
        if unexpected or set(missing) - tied:
            raise InitRefused(f"--init-from: the shards do not fit the model ({unexpected} "
                              f"unexpected, {sorted(set(missing) - tied)} missing)")
        start = steps_total(previous)
        self.state = TrainState(step=start, epoch=previous["epochs"], restart_step=start)
        self.previous, self.seconds_before = previous, train_seconds_total(previous)
        self.log(f"{self.rc.direction}: going on from {self.rc.init_from} at step {start}, the "
                 f"learning rate ramped up again over {self.rc.rewarmup} steps")

    def evaluate(self) -> None:
        """Greedy dev BLEU and Multi30k val loss now: a history row and a JSON line in the log.
        Minutes count from the first session, so that the rows of several read as one run."""
        from transformer_viz.training.common import validation_loss

        rc, state, window = self.rc, self.state, self.window
        if self.device.type == "cuda":  # the window's updates end when the GPU has run them
            torch.cuda.synchronize()
        window_s = time.time() - window["start"]
        with eager():  # compiled layers (compile_scope "layers") run uncompiled here
            scores = dev_scores(self.model, self.prepared, self.src, self.tgt, rc.eval_limit)
            val_loss = validation_loss(self.model, self.val_batches, self.device,
                                       rc.label_smoothing)
        elapsed = time.time() - self.t_train
        row = {"epoch": state.epoch, "step": state.step,
               "train_loss": float(window["loss"]) / max(window["steps"], 1),
               "lr": self.optimizer.param_groups[0]["lr"], "val_loss": val_loss,
               "val_bleu": scores["val"]["bleu"], "tatoeba_dev_bleu": scores["tatoeba_dev"]["bleu"],
               "tokens_per_s": self.tokens_seen / max(elapsed, 1e-9),
               "elapsed_s": self.seconds_before + elapsed, "dev_sentences": rc.eval_limit,
               # the loop's own pace since the last evaluation (no evaluating, no compiling)
               "updates_per_s": window["steps"] / max(window_s, 1e-9)}
        if not window["steps"]:  # the weights as loaded, before any update of this session
            del row["train_loss"], row["lr"], row["updates_per_s"]
            row["before_update"] = True
        else:
            if rc.rollback_above:
                self.roll_back_if_diverged(row)
            if rc.average_from and elapsed >= rc.average_from * rc.minutes * 60:
                self.add_to_average()
        self.history.append(row)
        window.update(loss=torch.zeros((), device=self.device), steps=0, start=time.time())
        rounded = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
        if "lr" in row:  # about 3e-4: three decimals would print 0.0
            rounded["lr"] = float(f"{row['lr']:.3g}")
        self.log(json.dumps({"direction": rc.direction, **rounded}))

    def roll_back_if_diverged(self, row: dict) -> None:
        """rc.rollback_above (rollback.Lowest): where the weights went back, the learning rate
        halves from here on and the running average goes (it holds what diverged). The step
        count goes on; the history row says so (``rolled_back_to``, ``lr_factor``)."""
        back = self.lowest.roll_back(self.model, self.optimizer, row["step"], row["val_loss"])
        if back is None:
            return
        self.tc.lr_factor /= 2
        self.average.clear()
        self.average_steps.clear()
        row.update(rolled_back_to=back["step"], lr_factor=self.tc.lr_factor)
        self.log(f"{self.rc.direction}: val loss {row['val_loss']:.3f} at step {row['step']}, "
                 f"above the lowest ({back['val_loss']:.3f}, step {back['step']}) by more than "
                 f"{self.rc.rollback_above}: the weights and Adam's state of step {back['step']} "
                 f"put back, the learning rate halved (factor {self.tc.lr_factor:.4g})")

    def add_to_average(self) -> None:
        """The weights now, added to the running sum (float32, on the training device)."""
        from transformer_viz.checkpoints import unique_state_dict

        for name, tensor in unique_state_dict(self.model).items():
            if name in self.average:
                self.average[name].add_(tensor.float())
            else:
                self.average[name] = tensor.float().clone()
        self.average_steps.append(self.state.step)

    def candidates(self) -> dict[str, dict[str, torch.Tensor]]:
        """The weights that may be sent: the last, and the average where it holds two points."""
        from transformer_viz.checkpoints import unique_state_dict

        last = unique_state_dict(self.model)
        out = {"last": {k: v.clone() for k, v in last.items()}}
        if len(self.average_steps) >= 2:
            n = len(self.average_steps)
            out["average"] = {k: v / n for k, v in self.average.items()}
        return out

    def compiled(self):
        """What the updates call, compiled at rc.compile_scope (compiling.py) by one forward and
        backward pass on a training batch whose B, S and T all differ (sizes equal by chance
        would be assumed equal, and the first batch where they are not compiled again); the
        model uncompiled where that fails."""
        from transformer_viz.models.losses import label_smoothed_loss
        from transformer_viz.text.corpora import make_batch, token_batches
        from transformer_viz.training.common import attention_kernel, autocast

        model, cfg, t_start = self.model, self.model.cfg, time.time()
        record = self.compile_record
        for idx in token_batches(self.examples, self.tc.batch_tokens, shuffle=True,
                                 seed=self.tc.seed):
            batch = make_batch([self.examples[i] for i in idx], cfg.pad_id, cfg.bos_id,
                               cfg.eos_id)
            sizes = (*batch.src.shape, batch.tgt_in.size(1))  # B, S, T
            if len(set(sizes)) == 3 and min(sizes) > 1:
                break
        batch = batch.to(self.device)
        try:
            compiled, self.uncompile = compile_forward(model, self.rc.compile_scope)
            with autocast(self.device, self.rc.amp), attention_kernel(self.device):
                logits = compiled(batch.src, batch.tgt_in)  # (B, T, V)
            label_smoothed_loss(logits, batch.tgt_out, self.rc.label_smoothing,
                                cfg.pad_id).backward()
        except Exception as exc:  # noqa: BLE001 (a compiler's failure: any exception)
            self.log(f"{self.rc.direction}: compiling failed ({_first_line(exc)}); training "
                     "uncompiled")
            record.update(failed=_first_line(exc), seconds=round(time.time() - t_start, 1))
            self.stop_compiling()
            return model
        finally:
            model.zero_grad(set_to_none=True)
        record.update(compiled=True, seconds=round(time.time() - t_start, 1))
        self.log(f"{self.rc.direction}: compiled in {time.time() - t_start:.1f} s (scope "
                 f"{self.rc.compile_scope}) on a batch {tuple(batch.src.shape)} + "
                 f"{tuple(batch.tgt_in.shape)}")
        return compiled

    def stop_compiling(self) -> None:
        """From here on every call of the model runs uncompiled."""
        if self.uncompile is not None:
            self.uncompile()
        self.uncompile, self.train_model = None, self.model

    def after_step(self, state, loss: torch.Tensor, n_tokens: int) -> bool:
        """run_epoch's hook: count the update; look at the dev sets every rc.eval_every steps.
        ``loss`` stays on the device: reading it here would make the host wait for the device at
        every update."""
        self.window["loss"] += loss
        self.window["steps"] += 1
        self.tokens_seen += n_tokens
        if self.late_dropout_at is not None and time.time() >= self.late_dropout_at:
            self.switch_dropout(state.step + 1)
        if self.rc.eval_every and state.step % self.rc.eval_every == 0:
            self.evaluate()
        return False

    def switch_dropout(self, from_step: int) -> None:
        """rc.late_dropout in every dropout of the model, from ``from_step`` on."""
        from transformer_viz.training.common import set_dropout

        rc = self.rc
        set_dropout(self.model, rc.late_dropout)
        self.late_dropout_at = None
        self.late_dropout_record = {"rate": rc.late_dropout, "from_step": from_step,
                                    "after_s": round(time.time() - self.t_train, 1)}
        self.log(f"{rc.direction}: dropout {rc.late_dropout} from step {from_step} on "
                 f"({rc.late_dropout_from:.0%} of the budget)")

    def train(self) -> float:
        """Epochs of run_epoch until rc.minutes have passed; returns the training seconds."""
        from transformer_viz.text.corpora import token_batches
        from transformer_viz.training.translation import run_epoch

        rc, tc, state, model = self.rc, self.tc, self.state, self.model
        self.t_train = time.time()
        deadline = self.t_train + rc.minutes * 60
        if rc.late_dropout:
            self.late_dropout_at = self.t_train + rc.late_dropout_from * rc.minutes * 60
        if self.previous:  # proof in the log that the returned weights score as they did there
            self.evaluate()
        model.train()
        if rc.compile:
            self.train_model = self.compiled()
        self.window["start"] = time.time()
        while time.time() < deadline:
            batches = token_batches(self.examples, tc.batch_tokens, shuffle=True,
                                    seed=tc.seed + state.epoch + 1)
            try:
                run_epoch(model, self.train_model, self.optimizer, self.scaler, batches,
                          self.examples, tc, state, self.device, False, 1, deadline=deadline,
                          after_step=self.after_step, cooldown_seconds=rc.cooldown_seconds)
            except Exception as exc:  # noqa: BLE001 (a compiler's failure: any exception)
                if self.uncompile is None:
                    raise
                self.stop_compiling()
                self.log(f"{rc.direction}: a compiled update failed at step {state.step} "
                         f"({_first_line(exc)}); going on uncompiled")
                self.compile_record["failed"] = _first_line(exc)
                state.step -= 1  # counted before the forward pass; no update was made
                continue
            if time.time() < deadline:  # a whole epoch: a natural point to look at the dev sets
                state.epoch += 1
                if not rc.eval_every:
                    self.evaluate()
        if self.device.type == "cuda":  # the host may have queued work the device has not done
            torch.cuda.synchronize()
        train_s = time.time() - self.t_train
        self.stop_compiling()  # what follows (the last evaluation, the sending) runs uncompiled
        if not self.history or self.history[-1]["step"] != state.step:
            self.evaluate()
        self.log(f"{rc.direction}: {state.step} steps, {state.epoch} whole epochs, "
                 f"{self.tokens_seen:,} target tokens in {train_s:.0f} s "
                 f"({self.tokens_seen / max(train_s, 1e-9):,.0f} tokens/s)")
        return train_s

    def send(self, out: Path, command: str, t_start: float, train_s: float) -> dict:
        """The weights as sent: quantised, put back, scored in float32 (no TF32, as the CPU
        computes) and written as shards with their manifest, which is returned. With an average
        (``rc.average_from``) both it and the last weights go through this, and the one with the
        higher mean dev BLEU is sent."""
        from transformer_viz.checkpoints.compact import (dequantise, quantise, write_manifest,
                                                         write_shards)

        rc, device = self.rc, self.device
        t_final = time.time()
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self.model.eval()
        scored = {}
        for name, weights in self.candidates().items():
            compact = quantise(weights)
            self.model.load_state_dict(dequantise(compact), strict=False)
            final = dev_scores(self.model, self.prepared, self.src, self.tgt, rc.final_limit)
            scored[name] = (compact, final, sum(v["bleu"] for v in final.values()) / len(final))
        # The last unless the average is better; the model is left holding the weights sent.
        chosen = max(scored, key=lambda name: (scored[name][2], name == "last"))
        compact, final, _ = scored[chosen]
        self.model.load_state_dict(dequantise(compact), strict=False)
        selection = {"sent": chosen, "average_steps": self.average_steps,
                     "mean_dev_bleu": {name: row[2] for name, row in scored.items()}}
        files = write_shards(compact, out, rc.direction)
        seconds = {"start": round(self.t_train - t_start, 1), "train": round(train_s, 1),
                   "quantise_score_write": round(time.time() - t_final, 1),
                   "total": round(time.time() - t_start, 1)}
        manifest = self.manifest(final, selection, files, command, train_s, seconds)
        write_manifest(out / f"{rc.direction}{MANIFEST_SUFFIX}", manifest)
        if len(selection["mean_dev_bleu"]) > 1:
            self.log(f"{rc.direction}: the {chosen} weights sent (mean greedy dev BLEU "
                     + ", ".join(f"{name} {bleu:.2f}"
                                 for name, bleu in selection["mean_dev_bleu"].items())
                     + f"; the average of the weights at steps {self.average_steps})")
        self.log(f"{rc.direction}: as sent, greedy dev BLEU "
                 + ", ".join(f"{k} {v['bleu']:.2f} ({v['sentences']} sentences)"
                             for k, v in final.items())
                 + f"; {len(files)} files of {sum(f['bytes'] for f in files) / 2**20:.1f} MiB; "
                 f"{manifest['seconds']['total']:.0f} s in all")
        return manifest

    def manifest(self, final: dict, selection: dict, files: list[dict], command: str,
                 train_s: float, seconds: dict) -> dict:
        """What the join and the model card read: the run, its history, the scores as sent.
        ``steps`` and ``history`` are this session's; ``steps_total``, ``init_from`` (the run
        gone on from) and ``sessions`` span all of them."""
        rc, state, device, cuda = self.rc, self.state, self.device, self.device.type == "cuda"
        start = steps_total(self.previous) if self.previous else 0
        out = {
            "direction": rc.direction, "src_lang": self.src, "tgt_lang": self.tgt,
            "config": self.model.cfg.to_dict(), "run": asdict(rc),
            "batch_tokens_used": self.tc.batch_tokens, "steps": state.step - start,
            "steps_total": state.step, "epochs": state.epoch,
            "target_tokens": self.tokens_seen, "train_seconds": round(train_s, 1),
            "train_seconds_total": round(self.seconds_before + train_s, 1),
            "tokens_per_s": round(self.tokens_seen / max(train_s, 1e-9)), "history": self.history,
            "device": torch.cuda.get_device_name(device) if cuda else "cpu",
            "peak_memory_gib": (round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
                                if cuda else None),
            "torch": torch.__version__, "data": self.prepared.manifest["sha256"],
            "dev_scores_as_sent": final, "selection": selection, "files": files,
            "compile": self.compile_record if rc.compile else None,
            "late_dropout": self.late_dropout_record,
            "command": command, "seconds": seconds}
        if self.previous:
            out["init_from"] = init_record(rc.init_from, self.previous)
        out["sessions"] = (sessions(self.previous) if self.previous else []) + sessions(
            {k: v for k, v in out.items() if k != "init_from"})
        return out


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def train_direction(rc: GpuRunConfig, data: str | Path, out: str | Path, log=print,
                    command: str = "") -> dict:
    """Train one direction for ``rc.minutes``, then quantise, score and write it; returns the
    manifest. ``command``: the command line, recorded in the manifest for the model card."""
    t_start = time.time()
    # The shards' hashes are checked before anything else costs time on the GPU.
    init = load_init(rc.init_from, rc.direction) if rc.init_from else None
    run = BudgetedRun(rc, data, log, init)  # a refused config writes nothing either
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    train_s = run.train()
    return run.send(out, command, t_start, train_s)
