"""What the page "Why this word?" (pages/patching.py) chooses and keeps: the pair of sentences (a
preset of interpret/patching.py, or two typed), the target position, and the numbers, each computed
once per (checkpoint, sentences, position) and shared read-only between sessions. In the URL:
``pair=`` (a preset's name) or ``clean=`` and ``corrupted=`` (typed), and ``pos=`` when it is not
where the translations first differ, so that a link reopens the same view."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from transformer_viz.app import loaders, url
from transformer_viz.app.about import checkpoint_info, direction_label
from transformer_viz.app.catalogue import list_checkpoints
from transformer_viz.app.sidebar import MAX_INPUT_CHARS, Selection
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.interpret.patching import PRESETS, Patching, Preset
from transformer_viz.plots.common import token_text
from transformer_viz.text.tokenizer import InputError

OWN = "Your own two sentences"
PAIR_KEY, CLEAN_KEY, CORRUPTED_KEY, POS_KEY = "why_pair", "why_clean", "why_corrupted", "why_pos"
_POS_FOR = "_why_pos_for"  # the pair the position belongs to: a new pair starts at its default
CONE_TEXT = ("The causal cone: a cell of the encoder reaches every target position, through "
             "cross-attention; a cell of the decoder at position p reaches only positions ≥ p (the "
             "causal mask), so the cells after t (grey) cannot reach t and restore nothing.")


@dataclass(frozen=True)
class Pair:
    checkpoint: str
    clean: str
    corrupted: str
    preset: Preset | None

    @classmethod
    def of(cls, preset: Preset) -> Pair:
        return cls(preset.checkpoint, preset.clean, preset.corrupted, preset)


def available_presets() -> list[Preset]:
    """The presets whose checkpoint this app has."""
    names = list_checkpoints()
    return [p for p in PRESETS if p.checkpoint in names]


def _direction(name: str) -> tuple:
    try:
        metadata = checkpoint_info(name)[1]
    except CheckpointError:
        return None, None
    return metadata.get("src_lang"), metadata.get("tgt_lang")


def _first_choice(sel: Selection, presets: list[Preset], options: list[str]) -> str:
    """A link's pair, else the first preset of the sidebar's direction, else the reader's own."""
    wanted = st.query_params.get("pair")
    if wanted in options:
        return wanted
    if "clean" in st.query_params:
        return OWN
    mine = (sel.src_lang, sel.tgt_lang)
    return next((p.name for p in presets if _direction(p.checkpoint) == mine), OWN)


def choose_preset(sel: Selection) -> Preset | None:
    """The preset selectbox, its choice written to the URL; None for the reader's own pair."""
    presets = available_presets()
    options = [p.name for p in presets] + [OWN]
    state = st.session_state
    if state.get(PAIR_KEY) not in options:
        state[PAIR_KEY] = _first_choice(sel, presets, options)
    choice = st.selectbox("Clean / corrupted pair", options, key=PAIR_KEY)
    if choice == OWN:
        return None
    preset = presets[options.index(choice)]
    url.write(pair=choice, clean=None, corrupted=None)
    st.caption(f"{preset.note} On the {direction_label(preset.checkpoint)} model.")
    return preset


def typed_pair(sel: Selection) -> Pair | None:
    """Two text boxes side by side for the reader's own pair (run on the sidebar's model), written
    to the URL; None while one is still empty."""
    state = st.session_state
    if CLEAN_KEY not in state:
        state[CLEAN_KEY] = st.query_params.get("clean", sel.sentence)[:MAX_INPUT_CHARS]
        state[CORRUPTED_KEY] = st.query_params.get("corrupted", "")[:MAX_INPUT_CHARS]
    left, right = st.columns(2)
    clean = left.text_input("Clean sentence", key=CLEAN_KEY, max_chars=MAX_INPUT_CHARS)
    corrupted = right.text_input("Corrupted: the same, one word changed (as many tokens)",
                                 key=CORRUPTED_KEY, max_chars=MAX_INPUT_CHARS)
    url.write(pair=None, clean=clean or None, corrupted=corrupted or None)
    if not clean.strip() or not corrupted.strip():
        return None
    return Pair(sel.checkpoint, clean, corrupted, None)


def written(p: Patching) -> list[str]:
    """What each decoder position writes: the clean translation's tokens, then </s>."""
    return p.tgt_tokens[1:] + ["</s>"]


def choose_position(pair: Pair, first: Patching) -> int:
    """The target position t (a selectbox over the clean translation's tokens), by default where
    the translations first differ (``first.position``); from the link for the session's first pair.
    """
    tokens = written(first)
    state = st.session_state
    key = (pair.checkpoint, pair.clean, pair.corrupted)
    if state.get(_POS_FOR) != key:
        wanted = st.query_params.get("pos", "") if _POS_FOR not in state else ""
        fits = wanted.isascii() and wanted.isdigit() and int(wanted) < len(tokens)
        state[POS_KEY] = int(wanted) if fits else first.position
        state[_POS_FOR] = key

    def label(t: int) -> str:
        note = "  (first difference)" if t == first.position else ""
        return f"{t}: {token_text(tokens[t])}{note}"

    t = st.selectbox("Target position t (the word to explain)", list(range(len(tokens))),
                     key=POS_KEY, format_func=label)
    url.write(pos=None if t == first.position else str(t))
    return t


@st.cache_resource(show_spinner="Patching every layer, position and head…", max_entries=64,
                   ttl=3600)
def patching(checkpoint: str, clean: str, corrupted: str, position: int | None) -> Patching | str:
    """interpret.patching.patch_sentences, or the message that says why the pair cannot be patched
    (kept too: a refused pair is not tried again on every rerun)."""
    from transformer_viz.interpret.patching import patch_sentences

    try:
        return patch_sentences(loaders.get_checkpoint(checkpoint), clean, corrupted, position)
    except (InputError, CheckpointError) as exc:
        return str(exc)


@st.cache_resource(show_spinner="Attributing “why X, not Y” (integrated gradients)…",
                   max_entries=64, ttl=3600)
def attributions(checkpoint: str, clean: str, corrupted: str, position: int | None):
    """The contrastive attribution of X against Y at the pair's position (interpret.contrast), and
    the plain integrated gradients of log p(X) over the source (S,), for comparison."""
    from transformer_viz.interpret.contrast import contrastive_ig
    from transformer_viz.interpret.explain import integrated_gradients_at

    p = patching(checkpoint, clean, corrupted, position)
    ckpt = loaders.get_checkpoint(checkpoint)
    ids = ckpt.tokenizer.convert_tokens_to_ids
    src, tgt = ids(p.src_tokens), ids(p.tgt_tokens)
    contrast = contrastive_ig(ckpt.model, src, tgt, p.position, p.clean_id, p.corrupted_id)
    plain, _ = integrated_gradients_at(ckpt.model, src, tgt, p.position)  # (S,)
    return contrast, plain
