"""Why this word? Activation patching between a clean and a corrupted source.

Two sources of the same token length that differ in one place (``she`` / ``he``) translate
differently. At a target position t the clean run writes c and the corrupted run writes k. Both runs
are teacher-forced on the CLEAN translation's prefix, so that position t reads the same decoder
input in both and only the source differs. The metric is the logit difference

    LD = logit(c) − logit(k) at position t,

and a patch's restored share is (LD_patched − LD_corrupted) / (LD_clean − LD_corrupted): 0 when the
patch changes nothing, 1 when it brings the clean run's preference back whole.

A patch copies one clean activation into the corrupted run: a hook on ``encoder.{i}.out`` at one
source position or at all of them, on ``decoder.{i}.out`` at one target position, or on a layer's
``heads`` point at one head (its d_k columns of Concat(head_1, …, head_h), before W_O), all at the
model's own hook points (core/hooks.py). Every patch of a grid is one batch row, and row 0 of the
same batch is the clean run itself: a hook replaces row r's slice with row 0's at the moment both
are computed, so no activation is stored and the whole experiment is ONE encoder pass and ONE
decoder pass (:func:`patched_logits`; tests/unit/test_patching.py: equal to one patch at a time).

Causal cone: a source position patched in the encoder reaches every target position through
cross-attention; a target position p patched in the decoder reaches only positions ≥ p (the causal
mask), so a decoder cell after t restores nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.core.hooks import Hooks, Recorder
from transformer_viz.interpret import ablation as H
from transformer_viz.interpret.explain import translation_with_heads_off
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.tokenizer import InputError, encode_source


@dataclass(frozen=True)
class Patch:
    """The clean activation at hook point ``name``, copied along axis 1 at ``index`` (a position of
    a stream (B, L, d_model), a head of a ``heads`` point (B, h, L, d_k)), or whole when ``index``
    is None."""

    name: str
    index: int | None = None

    @property
    def in_encoder(self) -> bool:
        return self.name.startswith(("src.", "encoder."))


def _device(model: Transformer) -> torch.device:
    return next(model.parameters()).device


def _masks(rows: list[list[Patch]], sizes: dict[str, int], first: int, total: int) -> dict:
    """Per hook-point name, which (row, axis-1 index) cells take row 0's value: (total, size)
    booleans. ``rows[r]`` is batch row first + r."""
    masks: dict[str, torch.Tensor] = {}
    for r, patches in enumerate(rows):
        for patch in patches:
            empty = torch.zeros(total, sizes[patch.name], dtype=torch.bool)  # (total, L or h)
            mask = masks.setdefault(patch.name, empty)
            if patch.index is None:
                mask[first + r] = True
            else:
                mask[first + r, patch.index] = True
    return masks


def _copy_row0_hooks(masks: dict[str, torch.Tensor], device) -> Hooks:
    """Hooks that overwrite the masked cells of every row with row 0's (the clean run's) values."""
    fns = {}
    for name, mask in masks.items():
        mask = mask.to(device)

        def copy(x: torch.Tensor, name: str, mask=mask) -> torch.Tensor:
            # (B, A) -> (B, A, 1, …): one flag per row and axis-1 index, broadcast over the rest
            cells = mask.view(*mask.shape, *([1] * (x.dim() - 2)))
            return torch.where(cells, x[:1], x)

        fns[name] = copy
    return Hooks(fns)


def _axis_sizes(model: Transformer, S: int, T: int) -> dict[str, int]:
    """The length of axis 1 at every point a Patch may name: positions for streams, h for heads."""
    cfg = model.cfg
    sizes = {}
    for i in range(cfg.N):
        sizes[f"encoder.{i}.out"] = S
        sizes[f"decoder.{i}.out"] = T
        for kind in H.KINDS:
            sizes[H.heads_point(kind, i)] = cfg.h
    return sizes


def _after(patch: Patch, t: int) -> bool:
    """Whether a patch writes a decoder stream at a position after t (or at every position)."""
    return patch.name.startswith("decoder.") and patch.name.endswith(".out") and (
        patch.index is None or patch.index > t)


@torch.no_grad()
def patched_logits(model: Transformer, clean_src: list[int], corrupted_src: list[int],
                   tgt_ids: list[int], t: int, rows: list[list[Patch]]) -> torch.Tensor:
    """The logits at target position t (2 + R, V), float32: row 0 the clean run, row 1 the corrupted
    run, row 2 + r the corrupted run with ``rows[r]``'s patches (each a list; empty: nothing
    patched).

    Both sources read ``tgt_ids`` (<s> + the clean translation). Position t reads only positions ≤ t
    (the causal mask), so the rows run the decoder on tgt_ids[:t + 1]; only the rows that patch a
    decoder stream after t run it whole, in a second batch, so that what such a patch changes at t
    is computed, not assumed.
"""
    late = [r for r, patches in enumerate(rows) if any(_after(p, t) for p in patches)]
    early = [r for r in range(len(rows)) if r not in set(late)]
    prefix = tgt_ids[:t + 1]
    out = _patched_run(model, clean_src, corrupted_src, prefix, t, [rows[r] for r in early])
    if not late:
        return out
    whole = _patched_run(model, clean_src, corrupted_src, tgt_ids, t, [rows[r] for r in late])
    logits = torch.empty(2 + len(rows), out.size(1), dtype=out.dtype, device=out.device)
    logits[[0, 1] + [2 + r for r in early]] = out
    logits[[2 + r for r in late]] = whole[2:]
    return logits


def _patched_run(model: Transformer, clean_src: list[int], corrupted_src: list[int],
                 tgt_ids: list[int], t: int, rows: list[list[Patch]]) -> torch.Tensor:
    """:func:`patched_logits` in a few batches: the encoder runs only for rows 0, 1 and those that
    patch it; the rows that patch only the decoder share the corrupted run's memory and, below the
    first decoder layer their patches change, its stream: they run from that layer on
    (``Transformer.decode``'s start_at_layer), each batch led by the clean run, whose values the
    hooks copy."""
    device = _device(model)
    S, T = len(clean_src), len(tgt_ids)
    sizes = _axis_sizes(model, S, T)
    enc_rows = [r for r, patches in enumerate(rows) if any(p.in_encoder for p in patches)]
    # A row that patches nothing runs whole: what it computes is the corrupted run, not assumed
    first = {r: min((_first_layer(p) for p in rows[r]), default=0) for r in range(len(rows))
             if r not in enc_rows}
    src = torch.tensor([clean_src, corrupted_src], device=device)  # (2, S)
    src = torch.cat([src, src[1:].expand(len(enc_rows), -1)])  # (2 + R_enc, S)
    enc_patches = [[p for p in rows[r] if p.in_encoder] for r in enc_rows]
    hooks = _copy_row0_hooks(_masks(enc_patches, sizes, 2, len(src)), device)
    memory, src_mask = model.encode(src, hooks=hooks)  # (2 + R_enc, S, d_model), (·, 1, 1, S)
    # No source padded: cross-attention without a mask is the same arithmetic with less work (as
    # the model's own start_state does)
    padded = not bool(src_mask.all())
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)
    N = model.cfg.N
    streams = Recorder([f"decoder.{i}.out" for i in range(N)])
    logits = torch.empty(2 + len(rows), model.cfg.vocab_size, device=device)
    # Batch rows: order[b] is the row of ``logits``; take[b] the row of ``memory`` it reads.
    for layer in range(N + 1):
        group = [r for r, at in first.items() if at == layer]
        if layer == 0:
            order = [0, 1] + [2 + r for r in enc_rows] + [2 + r for r in group]
            take = [0, 1] + list(range(2, 2 + len(enc_rows))) + [1] * len(group)
        elif group:
            order, take = [0] + [2 + r for r in group], [0] + [1] * len(group)
        else:
            continue
        dec_patches = [[p for p in rows[b - 2] if not p.in_encoder] for b in order[2 if layer == 0
                                                                                 else 1:]]
        hooks = _copy_row0_hooks(_masks(dec_patches, sizes, 2 if layer == 0 else 1, len(order)),
                                 device)
        stream = None
        if layer:  # the clean run's stream after layer − 1, then the corrupted run's, patched there
            below = streams[f"decoder.{layer - 1}.out"]  # (2 + ·, T, d_model)
            stream = torch.cat([below[:1], below[1:2].expand(len(group), -1, -1)])
            stream = hooks(f"decoder.{layer - 1}.out", stream)
        else:
            hooks = hooks.merged(streams.hooks())
        take_t = torch.tensor(take, device=device)
        y = model.decode(tgt.expand(len(order), -1), memory[take_t],
                         src_mask[take_t] if padded else None, hooks=hooks,
                         start_at_layer=layer, stream=stream)  # (len(order), T, d_model)
        logits[torch.tensor(order, device=device)] = model.project(y[:, t:t + 1])[:, 0].float()
    return logits  # rows in the caller's order


def _first_layer(patch: Patch) -> int:
    """The first decoder layer whose computation a decoder patch changes: a stream patched after
    layer i changes layers i + 1 on (N: only the final LayerNorm), a head of layer i layer i on."""
    layer = int(patch.name.split(".")[1])
    return layer + 1 if patch.name.endswith(".out") else layer


def restored_shares(logits: torch.Tensor, clean_id: int, corrupted_id: int) -> np.ndarray:
    """logits (2 + R, V) from :func:`patched_logits` -> each patched row's restored share (R,)."""
    ld = (logits[:, clean_id] - logits[:, corrupted_id]).double()  # (2 + R,)
    return ((ld[2:] - ld[1]) / (ld[0] - ld[1])).cpu().numpy()


# --- the grids ------------------------------------------------------------------------------------

@dataclass
class Grids:
    """Restored shares of every single patch, and the two runs' logit differences.

    encoder (N, S): ``encoder.{i}.out`` at one source position; encoder_all (N,): at all of them;
    decoder (N, T): ``decoder.{i}.out`` at one target position; heads (3, N, h): one head's output
    (interpret.ablation.KINDS order: enc, dec, cross)."""

    encoder: np.ndarray
    encoder_all: np.ndarray
    decoder: np.ndarray
    heads: np.ndarray
    ld_clean: float
    ld_corrupted: float


def head_shares(grids: Grids) -> dict[str, float]:
    """The heads grid by name ("enc.L.H", "dec.L.H", "cross.L.H", as
    interpret.ablation spells them)."""
    kinds, N, h = grids.heads.shape
    return {str(H.Head(H.KINDS[k], i, j)): float(grids.heads[k, i, j])
            for k in range(kinds) for i in range(N) for j in range(h)}


def grid_rows(cfg, S: int, T: int) -> list[list[Patch]]:
    """Every patch of the four grids, one row each: encoder layer × source position, encoder layer
    with all positions, decoder layer × target position, then every head (KINDS, layer, head order).
    """
    rows = [[Patch(f"encoder.{i}.out", s)] for i in range(cfg.N) for s in range(S)]
    rows += [[Patch(f"encoder.{i}.out")] for i in range(cfg.N)]
    rows += [[Patch(f"decoder.{i}.out", p)] for i in range(cfg.N) for p in range(T)]
    rows += [[Patch(H.heads_point(h.kind, h.layer), h.head)] for h in H.all_heads(cfg)]
    return rows


def _split(shares: np.ndarray, cfg, S: int, T: int) -> tuple[np.ndarray, ...]:
    """The flat shares of :func:`grid_rows`' rows -> encoder (N, S), encoder_all (N,), decoder (N,
    T), heads (3, N, h)."""
    N = cfg.N
    sizes = np.cumsum([N * S, N, N * T])
    enc, enc_all, dec, heads = np.split(shares, sizes)
    return enc.reshape(N, S), enc_all, dec.reshape(N, T), heads.reshape(len(H.KINDS), N, cfg.h)


def patch_grids(model: Transformer, clean_src: list[int], corrupted_src: list[int],
                tgt_ids: list[int], t: int, clean_id: int, corrupted_id: int) -> Grids:
    """All four grids at position t in one batched pass (:func:`patched_logits`)."""
    S, T = len(clean_src), len(tgt_ids)
    logits = patched_logits(model, clean_src, corrupted_src, tgt_ids, t, grid_rows(model.cfg, S, T))
    ld = logits[:2, clean_id] - logits[:2, corrupted_id]  # (2,)
    shares = restored_shares(logits, clean_id, corrupted_id)
    return Grids(*_split(shares, model.cfg, S, T), float(ld[0]), float(ld[1]))


@torch.no_grad()
def grids_one_at_a_time(model: Transformer, clean_src: list[int], corrupted_src: list[int],
                        tgt_ids: list[int], t: int, clean_id: int, corrupted_id: int) -> Grids:
    """The same grids, one forward pass per patch, from the clean activations recorded first (a
    Recorder) and written into the corrupted run by a hook: slow, the reference for the batched
    pass."""
    device = _device(model)
    cfg = model.cfg
    S, T = len(clean_src), len(tgt_ids)
    rows = grid_rows(cfg, S, T)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)
    recorder = Recorder(sorted({p.name for patches in rows for p in patches}))
    clean = model(torch.tensor([clean_src], device=device), tgt, hooks=recorder.hooks())
    corrupted_src_t = torch.tensor([corrupted_src], device=device)  # (1, S)

    def ld(logits: torch.Tensor) -> float:
        return float(logits[0, t, clean_id] - logits[0, t, corrupted_id])

    def patched(patch: Patch) -> float:
        def write(x: torch.Tensor, name: str) -> torch.Tensor:
            x = x.clone()
            index = slice(None) if patch.index is None else patch.index
            x[:, index] = recorder[name][:, index]
            return x

        return ld(model(corrupted_src_t, tgt, hooks=Hooks({patch.name: write})))

    ld_clean, ld_corrupted = ld(clean), ld(model(corrupted_src_t, tgt))
    shares = np.array([(patched(p) - ld_corrupted) / (ld_clean - ld_corrupted) for (p,) in rows])
    return Grids(*_split(shares, cfg, S, T), ld_clean, ld_corrupted)


# --- two sentences --------------------------------------------------------------------------------

@dataclass
class Patching:
    """One clean/corrupted pair of sentences patched at target position ``position``: the tokens,
    both greedy translations, the two candidate tokens and the grids (:class:`Grids`).
    ``tgt_tokens`` is the decoder input both runs read: <s> + the clean translation."""

    src_tokens: list[str]
    corrupted_tokens: list[str]
    changed: list[int]  # the source positions where the two sentences differ
    tgt_tokens: list[str]
    translation: str
    corrupted_translation: str
    position: int
    clean_id: int
    corrupted_id: int
    clean_token: str
    corrupted_token: str
    grids: Grids


def _encode_pair(ckpt, clean: str, corrupted: str) -> tuple:
    """Both sentences' encodings; InputError unless they have the same token length and differ."""
    a, b = (encode_source(ckpt.tokenizer, text, max_tokens=ckpt.config.max_len)
            for text in (clean, corrupted))
    if len(a.ids) != len(b.ids):
        raise InputError(f"the two sentences must have the same number of tokens to be patched "
                         f"position by position: {len(a.ids)} and {len(b.ids)} (with </s>); change "
                         f"one word for another of as many tokens")
    if a.ids == b.ids:
        raise InputError("the two sentences are the same tokens: change a word in the second one")
    return a, b


def first_difference(clean_ids: list[int], corrupted_ids: list[int]) -> int | None:
    """The first position where two outputs (each ending in </s>) differ, or None if they are equal.
    """
    for t, (c, k) in enumerate(zip(clean_ids, corrupted_ids)):
        if c != k:
            return t
    return None if len(clean_ids) == len(corrupted_ids) else min(len(clean_ids), len(corrupted_ids))


def _choose_tokens(ckpt, a, b, tgt_ids: list[int], written: list[int], t: int, first: int) -> tuple:
    """The two candidates at t: the clean translation's token and the corrupted run's top token
    there (teacher-forced on the clean prefix, the forbidden tokens aside): at the first difference,
    the word its own translation writes. InputError when both are the same token."""
    logits = patched_logits(ckpt.model, a.ids, b.ids, tgt_ids, t, [])[1]  # (V,): corrupted
    suppress = list(ckpt.generation.suppress_ids)
    logits[suppress] = float("-inf")
    corrupted_id = int(logits.argmax())
    if corrupted_id == written[t]:
        token = ckpt.tokenizer.convert_ids_to_tokens(corrupted_id)
        raise InputError(f"at position {t} both sources lead to {token!r}; the translations first "
                         f"differ at position {first}")
    return written[t], corrupted_id


def patch_sentences(ckpt, clean: str, corrupted: str, position: int | None = None) -> Patching:
    """Translate both sentences greedily, pick position t (default: where the translations first
    differ) and patch every grid there. ``ckpt``: a loaded Transformer checkpoint (model, tokenizer,
    config, generation). InputError for a pair that cannot be patched."""
    a, b = _encode_pair(ckpt, clean, corrupted)
    eos = ckpt.config.eos_id
    (ids_a, text_a), (ids_b, text_b) = (translation_with_heads_off(ckpt, e.ids, ()) for e in (a, b))
    written = list(ids_a) + [eos]  # what each decoder position predicts
    first = first_difference(written, list(ids_b) + [eos])
    if first is None:
        raise InputError(f"both sentences translate to {text_a!r}: there is no word to explain")
    t = first if position is None else position
    if not 0 <= t < len(written):
        raise InputError(f"position {t} is outside the translation: 0 to {len(written) - 1}")
    tgt_ids = [ckpt.config.bos_id] + list(ids_a)
    clean_id, corrupted_id = _choose_tokens(ckpt, a, b, tgt_ids, written, t, first)
    grids = patch_grids(ckpt.model, a.ids, b.ids, tgt_ids, t, clean_id, corrupted_id)
    tokens = ckpt.tokenizer.convert_ids_to_tokens
    return Patching(a.tokens, b.tokens, [s for s, (x, y) in enumerate(zip(a.ids, b.ids)) if x != y],
                    tokens(tgt_ids), text_a, text_b, t, clean_id, corrupted_id, tokens(clean_id),
                    tokens(corrupted_id), grids)


def word(token: str) -> str:
    """A token as a reader sees it: without the word-start mark."""
    return token.replace("▁", "") or token


def summary_text(p: Patching, weak: float = 0.1) -> str:
    """The strongest cells in one plain sentence: the source position that decides the word at
    encoder layer 0 (and where the last layer, which cross-attention reads, holds it, if elsewhere),
    the cross-attention head that reads it (or that none alone does), and how much of it the
    decoder's stream at t holds after each layer."""
    g = p.grids
    first, last = int(np.argmax(g.encoder[0])), int(np.argmax(g.encoder[-1]))
    moved = ""
    if last != first:
        k = int(np.argmax(g.encoder.argmax(1) == last))  # the first layer where it sits at ``last``
        moved = (f", which hands it on to “{word(p.src_tokens[last])}” by encoder layer {k} "
                 f"({g.encoder[k, last]:.0%})")
    cross = g.heads[H.KINDS.index("cross")]  # (N, h)
    i, j = np.unravel_index(int(np.argmax(cross)), cross.shape)
    read = (f"read by cross-attention head {i}.{j} (restores {cross[i, j]:.0%})"
            if cross[i, j] >= weak else
            f"and no single cross-attention head carries it (the strongest, {i}.{j}, restores "
            f"{cross[i, j]:.0%})")
    stream = ", ".join(f"{share:.0%}" for share in g.decoder[:, p.position])
    return (f"“{word(p.clean_token)}” rather than “{word(p.corrupted_token)}” at position "
            f"{p.position} is decided by “{word(p.src_tokens[first])}” at encoder layer 0 "
            f"(patching that cell restores {g.encoder[0, first]:.0%}){moved}, {read}; the "
            f"decoder's stream at position {p.position} holds {stream} of it after layers 0 to "
            f"{len(g.decoder) - 1}.")


# --- presets --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Preset:
    """A clean/corrupted pair for a shipped checkpoint: one source token apart, different
    translations (tests/unit/test_shipped_patching.py checks both)."""

    name: str
    checkpoint: str  # a directory under checkpoints/
    clean: str
    corrupted: str
    note: str


PRESETS = (
    Preset("she / he", "en-de", "The doctor said that she was tired.",
           "The doctor said that he was tired.",
           "The pronoun alone changes, and the translations part there: “dass sie müde sei” "
           "against “er sei müde”: with “she” the model opens a “dass” clause, with “he” it does "
           "not."),
    Preset("tired / dangerous", "en-de",
           "The animal didn't cross the street because it was too tired.",
           "The animal didn't cross the street because it was too dangerous.",
           "The Winograd pair ends in “tired” / “wide”, but “wide” is two tokens here; "
           "“dangerous” is one. The model writes “es” for “it” either way: only the adjective's "
           "translation changes."),
    Preset("singular / plural", "de-en", "Sie spielt im Park.", "Sie spielen im Park.",
           "Only the verb's ending tells “she” from “they”."),
    Preset("nicht / draußen", "de-en", "Die Kinder spielen nicht.",
           "Die Kinder spielen draußen.",
           "“nicht” replaced by a word of one token, so that the positions line up."),
)
