"""Greedy and beam-search decoding, batched, with cached keys/values and a per-step record.

The record is what the app draws step by step: at greedy step t the chosen token and the top-k
candidates with their probabilities; in beam search every beam with its score and its parent beam.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from transformer_viz.generation.decoding_defaults import GenerationDefaults
from transformer_viz.models.transformer.config import ModelConfig
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.tokenizer import output_ids


@dataclass
class GreedyStep:
    chosen: list[int]  # (B,) the token picked at this step
    chosen_prob: list[float]  # (B,)
    top_ids: list[list[int]]  # (B, k) the k most probable next tokens
    top_probs: list[list[float]]  # (B, k)


@dataclass
class BeamStep:
    tokens: list[list[int]]  # (B, K) the token each surviving beam appended at this step
    parents: list[list[int]]  # (B, K) which beam of the previous step it extends
    scores: list[list[float]]  # (B, K) cumulative log-probability of each beam
    finished: list[list[bool]]  # (B, K) beam has produced </s>


@dataclass
class DecodeResult:
    # (B, ·) output IDs per sentence, without <s>, cut after </s> (not included)
    tokens: list[list[int]]
    scores: list[float]  # sum of log-probabilities of each output (incl. </s>)
    steps: list = field(default_factory=list)  # GreedyStep or BeamStep per generated position
    method: str = "greedy"


def loop_bans(written: torch.Tensor, max_repeats: int, longest_unit: int = 3) -> torch.Tensor:
    """The tokens that would make a unit of 1 to ``longest_unit`` tokens occur ``max_repeats`` + 1
    times in a row ("Comomomom", "a dog a dog a dog a dog"), one per unit length, or -1 where none
    would.

    written (N, t) -> (N, longest_unit). A unit of u tokens repeats when the last
    (max_repeats + 1)·u − 1 tokens written are periodic with period u; the token u places back would
    then complete one more repeat. The optional repetition guard of beam and greedy search
    (``max_loop_repeats``) forbids these.
    """
    N, t = written.shape
    bans = torch.full((N, longest_unit), -1, dtype=torch.long, device=written.device)
    for u in range(1, longest_unit + 1):
        need = (max_repeats + 1) * u - 1
        if t < need:
            continue
        tail = written[:, t - need:]  # (N, need)
        periodic = ((tail[:, u:] == tail[:, :-u]).all(dim=1) if need > u
                    else torch.ones(N, dtype=torch.bool, device=written.device))
        bans[:, u - 1] = torch.where(periodic, written[:, t - u], bans[:, u - 1])
    return bans


def ban_loops(logp: torch.Tensor, written: torch.Tensor, max_repeats: int) -> torch.Tensor:
    """logp (N, V) with −∞ for every token :func:`loop_bans` forbids after ``written`` (N, t)."""
    bans = loop_bans(written, max_repeats)  # (N, 3)
    # (N, V)
    hit = torch.zeros_like(logp, dtype=torch.bool).scatter_(1, bans.clamp(min=0), bans >= 0)
    return logp.masked_fill(hit, float("-inf"))


def suppressed(logp: torch.Tensor, suppress: tuple[int, ...]) -> torch.Tensor:
    """logp (N, V) with −∞ for tokens that may never be written (transformers' single-token
    ``bad_words_ids``: a Marian model's <pad>), set after the log-softmax and not renormalised, as
    transformers does."""
    if not suppress:
        return logp
    return logp.index_fill(1, torch.tensor(list(suppress), device=logp.device), float("-inf"))


def max_output_length(cfg: ModelConfig, source_length: int) -> int:
    """How many tokens decoding may write for a source of ``source_length`` tokens: translations are
    rarely much longer than their source, and <s> + the output must fit the model's positions."""
    return min(cfg.max_len - 1, int(source_length * 1.5) + 10)


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, max_len: int | None = None, top_k: int = 5,
                  record: bool = True, max_loop_repeats: int = 0,
                  forced_prefix: list[int] | None = None, suppress: tuple[int, ...] = (),
                  shrink: bool | None = None, hooks=None) -> DecodeResult:
    """Pick the most probable token at every step. src (B, S) -> one output per row.

    ``max_loop_repeats`` > 0: the optional repetition guard (:func:`loop_bans`); 0 leaves the
    model's choices.
    ``suppress``: token IDs never written (:func:`suppressed`).
    ``forced_prefix``: tokens written first instead of the model's choices ("what if it had chosen
    another word?"), the same for every row; greedy decoding goes on from there. Its steps are
    recorded like the others, with the probability the model gave each forced token.
    ``shrink`` (default: when nothing is recorded, as the records keep one row per sentence): a
    sentence that has written </s> leaves the batch, so later steps compute only the rows still
    writing. Same outputs.
    ``hooks`` (core/hooks.py) act on every step's forward pass: e.g. heads switched off
    (interpret/ablation.py); a hook whose tensors have a row per sentence needs ``shrink=False``."""
    forced = list(forced_prefix or [])
    cfg = model.cfg
    max_len = max_len or max_output_length(cfg, src.size(1))
    shrink = not record if shrink is None else shrink
    B, device = src.size(0), src.device
    extra = {} if hooks is None else {"hooks": hooks}  # a recurrent model's steps take no hooks
    state = model.start_state(src, **extra)
    # the sentences still in the batch: all of them until one leaves, then their indices (N,)
    rows = slice(None)
    last = torch.full((B,), cfg.bos_id, dtype=torch.long, device=device)
    finished = torch.zeros(B, dtype=torch.bool, device=device)
    scores = torch.zeros(B, device=device)
    written = torch.full((B, max_len), cfg.pad_id, dtype=torch.long, device=device)  # (B, max_len)
    steps = []
    for t in range(max_len):
        logits = model.decode_step(last, state, **extra)  # (N, V)
        logp = suppressed(torch.log_softmax(logits.float(), dim=-1), suppress)  # (N, V)
        if max_loop_repeats and t:
            logp = ban_loops(logp, written[rows, :t], max_loop_repeats)
        best_logp, best = logp.max(dim=-1)  # (N,)
        if t < len(forced):
            best = torch.full_like(best, forced[t])  # (N,)
            best_logp = logp.gather(1, best[:, None])[:, 0]  # (N,)
        best = best.masked_fill(finished, cfg.pad_id)
        scores[rows] += best_logp.masked_fill(finished, 0.0)
        if record:
            top_logp, top_ids = logp.topk(top_k, dim=-1)  # (N, k)
            steps.append(GreedyStep(best.tolist(), best_logp.exp().tolist(), top_ids.tolist(),
                                    top_logp.exp().tolist()))
        written[rows, t] = best
        finished = finished | (best == cfg.eos_id)
        if bool(finished.all()):
            break
        last = best
        if shrink and bool(finished.any()):
            keep = (~finished).nonzero()[:, 0]  # (N',) rows still writing
            rows = keep if isinstance(rows, slice) else rows[keep]
            last, finished, state = last[keep], finished[keep], state.select(keep)
    tokens = written[:, :t + 1].tolist()  # (B, steps)
    return DecodeResult([output_ids(r, cfg.eos_id, cfg.pad_id) for r in tokens], scores.tolist(),
                        steps, "greedy")


def length_penalty(length: torch.Tensor, alpha: float) -> torch.Tensor:
    """GNMT length penalty ((5 + |Y|) / 6)^α (Wu et al., 2016); α = 0 ranks by raw
    log-probability."""
    return ((5.0 + length.float()) / 6.0) ** alpha


@dataclass
class _Beams:
    """The beams of the sentences still being searched: N sentences × K beams."""

    sentences: torch.Tensor  # (N,) which source sentence each group of K beams belongs to
    scores: torch.Tensor  # (N, K) cumulative log-probability
    history: torch.Tensor  # (N, K, t) tokens written
    finished: torch.Tensor  # (N, K) beam has produced </s>
    lengths: torch.Tensor  # (N, K) tokens written up to and including </s>

    def keep(self, index: torch.Tensor) -> "_Beams":
        return _Beams(*(x.index_select(0, index)
                        for x in (self.sentences, self.scores, self.history, self.finished,
                                  self.lengths)))


def _store(done: _Beams, history: torch.Tensor, scores: torch.Tensor,
           lengths: torch.Tensor) -> None:
    """Copy the beams of sentences whose search is over into the per-sentence results (B, K, ·)."""
    history[done.sentences, :, :done.history.size(2)] = done.history
    scores[done.sentences], lengths[done.sentences] = done.scores, done.lengths


def _first_beams(B: int, K: int, max_len: int, pad_id: int, device) -> tuple[_Beams, _Beams]:
    """The beams before step 1 (B sentences × K beams, nothing written yet) and the per-sentence
    results (B, K, max_len) that the beams of finished searches are copied into."""
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: let only the first one expand at step 1
    beams = _Beams(torch.arange(B, device=device), scores,
                   torch.full((B, K, 0), pad_id, dtype=torch.long, device=device),
                   torch.zeros(B, K, dtype=torch.bool, device=device),
                   torch.zeros(B, K, dtype=torch.long, device=device))
    out = _Beams(beams.sentences, scores.clone(),
                 torch.full((B, K, max_len), pad_id, dtype=torch.long, device=device),
                 beams.finished, beams.lengths.clone())
    return beams, out


def _next_logp(model: Transformer, last: torch.Tensor, state,
               suppress: tuple[int, ...]) -> torch.Tensor:
    """One decoding step of the beams' last tokens (N,) -> log-probabilities of their next token
    (N, V), −∞ for the tokens never written (:func:`suppressed`)."""
    return suppressed(torch.log_softmax(model.decode_step(last, state).float(), dim=-1), suppress)


BEAM_SCORINGS = ("gnmt", "hf")


@torch.no_grad()
def beam_search(model: Transformer, src: torch.Tensor, beam_size: int = 5,
                max_len: int | None = None, alpha: float = 0.6, record: bool = True,
                max_loop_repeats: int = 0, scoring: str = "gnmt",
                early_stopping: bool | str = False, suppress: tuple[int, ...] = (),
                shrink: bool | None = None) -> DecodeResult:
    """Keep the ``beam_size`` best partial translations at every step; rank finished ones by
    log-probability / length_penalty. src (B, S) -> the best output per row.

    ``max_loop_repeats`` > 0: the optional repetition guard (:func:`loop_bans`); 0 leaves the
    model's choices.
    ``shrink`` (default: when nothing is recorded): a sentence whose beams have all finished leaves
    the batch (its beams would only go on appending <pad> at no cost). Same outputs.
    ``scoring="hf"``: the beam search of transformers' ``generate(num_beams=…)`` instead (see
    :func:`beam_search_hf`, which also reads ``early_stopping``); "gnmt", the default, is ours.
    ``suppress``: token IDs never written (:func:`suppressed`)."""
    if scoring not in BEAM_SCORINGS:
        raise ValueError(f"beam scoring must be one of {', '.join(BEAM_SCORINGS)}, not {scoring!r}")
    if scoring == "hf":
        return beam_search_hf(model, src, beam_size, max_len, alpha, early_stopping, record,
                              max_loop_repeats, suppress)
    cfg = model.cfg
    max_len = max_len or max_output_length(cfg, src.size(1))
    shrink = not record if shrink is None else shrink
    B, K, device = src.size(0), beam_size, src.device
    state = model.start_state(src)
    # (B*K) rows, beam-major per source
    state = state.select(torch.arange(B, device=device).repeat_interleave(K))
    beams, out = _first_beams(B, K, max_len, cfg.pad_id, device)
    last = torch.full((B * K,), cfg.bos_id, dtype=torch.long, device=device)
    steps = []
    for _ in range(max_len):
        logp = _next_logp(model, last, state, suppress)  # (N*K, V)
        beams, parents = _beam_step(beams, logp, cfg, max_loop_repeats)
        if record:
            steps.append(BeamStep(beams.history[:, :, -1].tolist(), parents.tolist(),
                                  beams.scores.tolist(), beams.finished.tolist()))
        N = parents.size(0)
        rows = (torch.arange(N, device=device)[:, None] * K + parents).view(-1)  # (N*K,)
        state = state.select_beams(rows)
        last = beams.history[:, :, -1].reshape(-1)  # (N*K,)
        done = beams.finished.all(dim=1)  # (N,)
        if bool(done.all()):
            break
        if shrink and bool(done.any()):
            _store(beams.keep(done.nonzero()[:, 0]), out.history, out.scores, out.lengths)
            keep = (~done).nonzero()[:, 0]  # (N',) sentences still searching
            beams, last = beams.keep(keep), last.view(N, K).index_select(0, keep).view(-1)
            state = state.select((keep[:, None] * K + torch.arange(K, device=device)).view(-1))
    _store(beams, out.history, out.scores, out.lengths)
    ranked = out.scores / length_penalty(out.lengths.clamp(min=1), alpha)  # (B, K)
    best = ranked.argmax(dim=-1)  # (B,)
    chosen = out.history[torch.arange(B, device=device), best].tolist()
    best_scores = out.scores[torch.arange(B, device=device), best].tolist()
    return DecodeResult([output_ids(r, cfg.eos_id, cfg.pad_id) for r in chosen], best_scores,
                        steps, "beam")


def _beam_step(beams: _Beams, logp: torch.Tensor, cfg: ModelConfig,
               max_loop_repeats: int) -> tuple[_Beams, torch.Tensor]:
    """Extend every beam by every token and keep the K best per sentence. logp (N*K, V) -> the new
    beams and the parent (N, K) each extends."""
    N, K = beams.scores.shape
    V = logp.size(-1)
    if max_loop_repeats and beams.history.size(2):
        logp = ban_loops(logp, beams.history.view(N * K, -1), max_loop_repeats)
    logp = logp.view(N, K, V)
    if bool(beams.finished.any()):
        # A finished beam may only "continue" with <pad> at no cost, so it keeps its score and
        # place.
        done_row = torch.full((V,), float("-inf"), device=logp.device)
        done_row[cfg.pad_id] = 0.0
        logp = torch.where(beams.finished[:, :, None], done_row, logp)
    candidates = (beams.scores[:, :, None] + logp).view(N, K * V)  # (N, K*V)
    scores, flat = candidates.topk(K, dim=-1)  # (N, K)
    parents, tokens = flat // V, flat % V  # (N, K)
    history = torch.cat(
        [beams.history.gather(1, parents[:, :, None].expand(-1, -1, beams.history.size(2))),
         tokens[:, :, None]], dim=2)  # (N, K, t+1)
    was_finished = beams.finished.gather(1, parents)
    lengths = beams.lengths.gather(1, parents) + (~was_finished).long()
    finished = was_finished | (tokens == cfg.eos_id)
    return _Beams(beams.sentences, scores, history, finished, lengths), parents


# transformers' penalty for a candidate that may not be kept: added, not a hard mask
_DROPPED = -1.0e9


def _hf_finished(fin: tuple, cand_seqs: torch.Tensor, cand_scores: torch.Tensor,
                 hits: torch.Tensor, improvable: torch.Tensor, t: int, alpha: float,
                 early_stopping: bool | str, K: int) -> tuple:
    """transformers' ``_update_finished_beams``: the candidates among the first K of the 2K that
    just ended join the K finished hypotheses, scored sum log p / length^α (the length counts </s>),
    and the best K stay. fin = (sequences (B, K, L), scores (B, K), raw sums (B, K), finished flags
    (B, K))."""
    seqs, scores, raw, done = fin
    eligible = hits.clone()
    eligible[:, K:] = False  # the other K candidates exist only so that K beams can go on running
    normed = cand_scores / float(t + 1) ** alpha
    normed = normed + (done.all(dim=1, keepdim=True) & (early_stopping is True)).float() * _DROPPED
    normed = normed + (~improvable).float() * _DROPPED
    normed = normed + (~eligible).float() * _DROPPED
    merged = torch.cat([scores, normed], dim=1)  # (B, 3K)
    keep = merged.topk(K, dim=1).indices  # (B, K)

    def pick(x):
        return x.gather(1, keep if x.dim() == 2 else keep[:, :, None].expand(-1, -1, x.size(2)))

    padded = torch.nn.functional.pad(cand_seqs, (0, seqs.size(2) - cand_seqs.size(2)), value=-1)
    return (pick(torch.cat([seqs, padded], dim=1)), pick(merged),
            pick(torch.cat([raw, cand_scores], dim=1)), pick(torch.cat([done, eligible], dim=1)))


def _hf_improvable(improvable: torch.Tensor, fin: tuple, running: torch.Tensor, t: int,
                   max_len: int, alpha: float, early_stopping: bool | str) -> torch.Tensor:
    """transformers' ``_check_early_stop_heuristic``: whether each sentence's search (B, 1) may
    still improve, i.e. its best running beam, scored at its best-case length, beats the worst of
    the finished hypotheses (fin as in :func:`_hf_finished`)."""
    # transformers' best-case length
    length = max_len if early_stopping == "never" and alpha > 0 else t + 1
    worst = torch.where(fin[3], fin[1].min(dim=1, keepdim=True).values,
                        torch.tensor(_DROPPED, device=running.device))
    return improvable & (running[:, :1] / float(length) ** alpha > worst).any(dim=1, keepdim=True)


@torch.no_grad()
def beam_search_hf(model: Transformer, src: torch.Tensor, beam_size: int = 5,
                   max_len: int | None = None, alpha: float = 1.0,
                   early_stopping: bool | str = False, record: bool = True,
                   max_loop_repeats: int = 0, suppress: tuple[int, ...] = ()) -> DecodeResult:
    """Beam search as transformers' ``generate(num_beams=K, length_penalty=α, early_stopping=…)``
    runs it (transformers 5, ``GenerationMixin._beam_search``), step for step, so that a model
    exported with ``export-hf`` writes the same tokens there and here. It differs from
    :func:`beam_search`: each step keeps the 2K best continuations; those of the first K that end in
    </s> (or reach ``max_len``) become finished hypotheses scored sum log p / length^α, the others'
    best K run on; it stops when no running beam can beat the worst of K finished ones by
    transformers' heuristic (``early_stopping`` False: at the current length; "never": at
    ``max_len`` for α > 0; True: as soon as K are finished). The record holds the K running beams of
    each step (a finished hypothesis leaves the beam)."""
    cfg = model.cfg
    max_len = max_len or max_output_length(cfg, src.size(1))
    B, K, device = src.size(0), beam_size, src.device
    # (B*K) rows
    state = model.start_state(src).select(torch.arange(B, device=device).repeat_interleave(K))
    running = torch.zeros(B, K, device=device)
    running[:, 1:] = _DROPPED  # only the first beam expands at step 1
    seqs = torch.zeros(B, K, 0, dtype=torch.long, device=device)  # (B, K, t): running beams' tokens
    # finished: tokens (-1 after the end), scores, raw sums, and whether the slot holds one
    fin = (torch.full((B, K, max_len), -1, dtype=torch.long, device=device),
           torch.full((B, K), _DROPPED, device=device), torch.zeros(B, K, device=device),
           torch.zeros(B, K, dtype=torch.bool, device=device))
    improvable = torch.ones(B, 1, dtype=torch.bool, device=device)
    last, steps = torch.full((B * K,), cfg.bos_id, dtype=torch.long, device=device), []
    for t in range(max_len):
        logp = _next_logp(model, last, state, suppress)  # (B*K, V)
        V = logp.size(-1)
        if max_loop_repeats and t:
            logp = ban_loops(logp, seqs.view(B * K, -1), max_loop_repeats)
        cand_scores, flat = ((logp.view(B, K, V) + running[:, :, None]).view(B, K * V)
                             .topk(2 * K, dim=1))  # (B, 2K)
        parents, tokens = flat // V, flat % V
        cand_seqs = torch.cat([seqs.gather(1, parents[:, :, None].expand(-1, -1, t)),
                               tokens[:, :, None]], dim=2)
        hits = (tokens == cfg.eos_id) | (t + 1 >= max_len)  # (B, 2K): ended here
        keep = (cand_scores + hits.float() * _DROPPED).topk(K, dim=1).indices  # (B, K)
        running = (cand_scores + hits.float() * _DROPPED).gather(1, keep)
        seqs, beam_parents = (cand_seqs.gather(1, keep[:, :, None].expand(-1, -1, t + 1)),
                              parents.gather(1, keep))
        fin = _hf_finished(fin, cand_seqs, cand_scores, hits, improvable, t, alpha, early_stopping,
                           K)
        if record:
            steps.append(BeamStep(seqs[:, :, -1].tolist(), beam_parents.tolist(), running.tolist(),
                                  [[False] * K for _ in range(B)]))
        state = state.select((torch.arange(B, device=device)[:, None] * K + beam_parents).view(-1))
        last = seqs[:, :, -1].reshape(-1)
        improvable = _hf_improvable(improvable, fin, running, t, max_len, alpha, early_stopping)
        all_full = bool(fin[3].all()) and early_stopping is True
        if not bool(improvable.any()) or all_full or bool(hits.all()):
            break
    out = [[i for i in row if i >= 0] for row in fin[0][:, 0].tolist()]
    return DecodeResult([output_ids(r, cfg.eos_id, cfg.pad_id) for r in out], fin[2][:, 0].tolist(),
                        steps, "beam")


def generate(model: Transformer, src: torch.Tensor, config: GenerationDefaults,
             max_len: int | None = None, record: bool = True, top_k: int = 5,
             forced_prefix: list[int] | None = None, hooks=None) -> DecodeResult:
    """Decode src (B, S) as one generation config says, as transformers'
    ``generate(generation_config=…)``: greedy when ``config.num_beams`` is 1, else the beam search
    ``config.beam_scoring`` names, with its length penalty, repetition guard and forbidden tokens.
    ``max_len`` (default: ``config.max_new_tokens``, else :func:`max_output_length`) caps the tokens
    written. ``top_k``, ``forced_prefix`` and ``hooks`` are greedy decoding's
    (what the pages draw step by step)."""
    max_len = max_len or config.max_new_tokens or None
    common = {"max_len": max_len, "record": record, "max_loop_repeats": config.max_loop_repeats,
              "suppress": config.suppress_ids}
    if config.num_beams <= 1:
        return greedy_decode(model, src, top_k=top_k, forced_prefix=forced_prefix, hooks=hooks,
                             **common)
    if forced_prefix or hooks is not None:
        raise ValueError("a forced prefix and hooks are greedy decoding's: set num_beams to 1")
    return beam_search(model, src, beam_size=config.num_beams, alpha=config.length_penalty,
                       scoring=config.beam_scoring, early_stopping=config.early_stopping, **common)
