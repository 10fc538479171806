"""What a checkpoint says about itself, read from its JSON files without loading the model (no
torch): its config and model card, decoding defaults and language statistics, cached once per
process; and what the app derives from them: the direction's name, the model for the other
direction, the corpora it was trained on, the models of a family for one direction."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from transformer_viz.app.catalogue import checkpoint_roots, list_checkpoints
from transformer_viz.checkpoints import CheckpointError, load_config, load_metadata
from transformer_viz.checkpoints.cards import length_entries
from transformer_viz.generation.decoding_defaults import (GenerationDefaults,
                                                         load_generation_defaults)
from transformer_viz.models.transformer.config import PRESETS, ModelConfig
from transformer_viz.text.language_stats import LanguageStats, direction_name, load_language_stats

# The paper's base model (Table 3). A checkpoint of its size is named so in the sidebar and listed
# after the smaller ones: the default stays a small model, which answers a new sentence fastest.
PAPER_SIZE = {key: PRESETS["base"][key] for key in ("d_model", "d_ff", "h", "N")}

# How the model card names each training corpus, for the one line that says what a model knows.
CORPUS_DESCRIPTIONS = {"Multi30k": "picture captions (Multi30k)",
                       "Tatoeba": "everyday sentences (Tatoeba)"}


@st.cache_resource(show_spinner=False, max_entries=64)
def checkpoint_info(name: str) -> tuple[ModelConfig, dict]:
    """A checkpoint's config and metadata, read from its JSON files without loading the model
    (read-only)."""
    available = list_checkpoints()
    if name not in available:
        raise CheckpointError(f"unknown checkpoint {name!r}")
    return load_config(available[name]), load_metadata(available[name])


@st.cache_resource(show_spinner=False, max_entries=64)
def generation_defaults(name: str) -> GenerationDefaults:
    """The checkpoint's decoding defaults (generation_config.json; greedy without one), read without
    torch."""
    return load_generation_defaults(list_checkpoints()[name])


@st.cache_resource(show_spinner=False, max_entries=64)
def language_stats(name: str) -> LanguageStats | None:
    """The checkpoint's language_stats.json (None without one, or when it cannot be read: the
    language and length warnings are then skipped, the page still works). Read without torch."""
    try:
        return load_language_stats(list_checkpoints()[name])
    except (ValueError, OSError):
        return None


def direction_label(name: str) -> str:
    """'German → English' for a checkpoint, from its model card (its directory name when that has
    none)."""
    try:
        metadata = checkpoint_info(name)[1]
    except CheckpointError:
        return name
    if "src_lang" not in metadata or "tgt_lang" not in metadata:
        return name
    return direction_name(metadata["src_lang"], metadata["tgt_lang"])


def is_paper_size(name: str) -> bool:
    """Whether a checkpoint has the paper's base shapes (d_model 512, d_ff 2048, h 8, N 6); False
    for one whose config cannot be read."""
    try:
        cfg = checkpoint_info(name)[0]
    except CheckpointError:
        return False
    return all(getattr(cfg, key, None) == value for key, value in PAPER_SIZE.items())


def model_label(name: str) -> str:
    """The sidebar's name for a checkpoint: its direction, and for one of the paper's base size
    'German → English · paper size' (short enough for the sidebar; :func:`size_note` says which)."""
    if not is_paper_size(name):
        return direction_label(name)
    return f"{direction_label(name)} · paper size"


def size_note(name: str) -> str | None:
    """The line under the sidebar's model for one of the paper's base size, else None."""
    if not is_paper_size(name):
        return None
    return (f"Paper size: {PAPER_SIZE['d_model']} × {PAPER_SIZE['N']} layers (d_model "
            f"{PAPER_SIZE['d_model']}, d_ff {PAPER_SIZE['d_ff']}, h {PAPER_SIZE['h']}, N "
            f"{PAPER_SIZE['N']}), the paper's base model.")


def checkpoints_in_order() -> list[str]:
    """The Transformer checkpoints' names as the sidebar offers them: by name, those of the paper's
    base size after the others. The first is the app's default."""
    return sorted(list_checkpoints(), key=lambda name: (is_paper_size(name), name))


def transformer_for(src_lang: str | None, tgt_lang: str | None,
                    like: str | None = None) -> str | None:
    """The first Transformer checkpoint, in the sidebar's order, that translates src_lang →
    tgt_lang; with ``like``, one of that checkpoint's size (paper size or not) when there is one."""
    found = []
    for name in checkpoints_in_order():
        try:
            metadata = checkpoint_info(name)[1]
        except CheckpointError:
            continue
        if (metadata.get("src_lang"), metadata.get("tgt_lang")) == (src_lang, tgt_lang):
            found.append(name)
    if like is not None:
        same_size = [name for name in found if is_paper_size(name) == is_paper_size(like)]
        found = same_size or found
    return found[0] if found else None


def reverse_checkpoint(name: str) -> str | None:
    """The checkpoint that translates the other way (en-de for de-en), of the same size when there
    is one."""
    try:
        metadata = checkpoint_info(name)[1]
    except CheckpointError:
        return None
    return transformer_for(metadata.get("tgt_lang"), metadata.get("src_lang"), like=name)


def training_data_line(metadata: dict) -> str:
    """'Trained on picture captions (Multi30k) and everyday sentences (Tatoeba).' from the model
    card."""
    corpora = [CORPUS_DESCRIPTIONS.get(name, name) for name in metadata.get("data", {})]
    if not corpora:  # cards written before the corpora were listed: those models saw Multi30k only
        corpora = [CORPUS_DESCRIPTIONS["Multi30k"]]
    return "Trained on " + " and ".join(corpora) + "."


def model_card_text(name: str) -> str:
    """The checkpoint's model card (README.md), or an empty string."""
    path = list_checkpoints()[name] / "README.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


# --- the recurrent models (the RNN page loads them itself; the sidebar lists Transformers only)
# -----------

def rnn_checkpoints(src_lang: str = "de", tgt_lang: str = "en") -> dict[str, str]:
    """{"plain": name, "attention": name} of the recurrent checkpoints for this direction (first by
    name)."""
    return _rnn_checkpoints(tuple(checkpoint_roots()), src_lang, tgt_lang)


@st.cache_resource(show_spinner=False, max_entries=16)
def _rnn_checkpoints(roots: tuple[Path, ...], src_lang: str, tgt_lang: str) -> dict[str, str]:
    # The roots are part of the key: the answer is read from them once per process.
    found: dict[str, str] = {}
    for name, path in sorted(list_checkpoints("rnn").items()):
        try:
            cfg, metadata = load_config(path), load_metadata(path)
        except CheckpointError:
            continue
        if (metadata.get("src_lang", "de"), metadata.get("tgt_lang", "en")) == (src_lang, tgt_lang):
            found.setdefault("attention" if cfg.attention else "plain", name)
    return found


@st.cache_resource(show_spinner=False, max_entries=16)
def family_metadata(arch: str, name: str) -> dict:
    """The metadata.json (the model card's data) of one family's checkpoint, without loading the
    model."""
    return load_metadata(list_checkpoints(arch)[name])


def lengths_on_one_split(cards: dict[str, dict]) -> dict[str, dict]:
    """Label -> the bucketed-BLEU entry of each model card, all on one split (that of the first card
    with one), so that a figure compares like with like; a card without that split is left out."""
    split = next((meta["bleu_by_length"].get("split") for meta in cards.values()
                  if meta.get("bleu_by_length")), None)
    return {label: length_entries(meta)[split] for label, meta in cards.items()
            if split in length_entries(meta)}
