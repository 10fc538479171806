"""The shared sidebar: the reader's choice of model (direction), sentence, layer and head, kept in
the session and mirrored in the URL (``ckpt``, ``s``, ``layer``, ``head``), so that a link reopens
it; and, after a change of direction, the offer to carry the translation over."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import loaders, url
from transformer_viz.app.about import (checkpoint_info, checkpoints_in_order, direction_label,
                                       model_label, size_note)
from transformer_viz.app.catalogue import CHECKPOINTS_ENV, list_checkpoints
from transformer_viz.app.context import Selection, SessionMemory
from transformer_viz.app.examples import examples_for
from transformer_viz.app.widgets import show_user_text
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.models.transformer.config import ModelConfig
from transformer_viz.text.language_stats import language_name
from transformer_viz.text.tokenizer import DEFAULT_MAX_CHARS, InputError

MAX_INPUT_CHARS = DEFAULT_MAX_CHARS


def _direction_changed(memory: SessionMemory) -> None:
    # The reader chose another direction: offer to carry the old direction's translation over.
    last = memory.last_checkpoint
    if last and last != st.session_state.get("checkpoint"):
        memory.carry = (last, st.session_state.get("sentence", ""))


def _carry_translation(translation: str, memory: SessionMemory) -> None:
    st.session_state["sentence"] = translation[:MAX_INPUT_CHARS]
    memory.carry = None


def swap_direction(other: str, memory: SessionMemory) -> None:
    """A button's callback: the text is in the other language already, so switch the model, keep the
    text."""
    st.session_state["checkpoint"] = other
    memory.carry = None


def _carry_offer(name: str, sentence: str, memory: SessionMemory) -> None:
    """After a change of direction: the previous direction's translation of the sentence, and a
    button that makes it the new source (a round trip)."""
    carried = memory.carry
    if not carried or carried[
        1] != sentence or carried[0] == name or carried[0] not in list_checkpoints():
        memory.carry = None
        return
    try:
        translation = loaders.get_translation(carried[0], sentence).translation
    except (InputError, CheckpointError):
        return
    if not translation:
        return
    show_user_text(f"Its translation by the {direction_label(carried[0])} model", translation)
    st.button("Use this translation as the sentence", key="carry_translation",
              on_click=_carry_translation, args=(translation, memory),
              help="Translate it back: a round trip through both models.")


def _query_int(key: str, default: int, upper: int) -> int:
    try:
        value = int(st.query_params.get(key, default))
    except (TypeError, ValueError):
        return default
    return min(max(value, 0), upper - 1)


def query_index(key: str, n: int) -> int:
    """An index in range(n) from the URL's ``key`` (0 when absent or not a number; clamped into
    range)."""
    return _query_int(key, 0, n)


def _layer_and_head(cfg: ModelConfig) -> tuple[int, int]:
    """The Layer and Head pickers side by side under the model: on a 1280×720 projector they stay on
    the sidebar's first screen, below the list of pages."""
    state = st.session_state
    if "layer" not in state:
        state["layer"] = _query_int("layer", 0, cfg.N)
        state["head"] = _query_int("head", 0, cfg.h)
    state["layer"] = min(state["layer"], cfg.N - 1)
    state["head"] = min(state["head"], cfg.h - 1)
    layer_col, head_col = st.columns(2)
    layer = layer_col.selectbox("Layer", list(range(cfg.N)), key="layer",
                                help=f"N = {cfg.N} layers")
    head = head_col.selectbox("Head", list(range(cfg.h)), key="head", help=f"h = {cfg.h} heads")
    return layer, head


def _sentence_box(src_lang: str) -> str:
    """The example sentences and the sentence box, in the checkpoint's source language."""
    state = st.session_state
    examples = examples_for(src_lang)
    if "sentence" not in state:
        from_url = st.query_params.get("s", examples[0])
        if len(from_url) > MAX_INPUT_CHARS:
            st.warning(f"The sentence in the link was cut to its first {MAX_INPUT_CHARS} "
                       "characters.")
        state["sentence"] = from_url[:MAX_INPUT_CHARS]

    def use_example() -> None:
        if state.get("example"):
            state["sentence"] = state["example"]

    st.selectbox("Example sentences", [""] + examples, key="example", on_change=use_example,
                 format_func=lambda s: s or "— pick an example —")
    sentence = st.text_area(f"Sentence ({language_name(src_lang)})", key="sentence",
                            max_chars=MAX_INPUT_CHARS,
                            height=80)
    if len(sentence) > MAX_INPUT_CHARS:  # max_chars is enforced by the browser only
        st.warning(f"The text was cut to its first {MAX_INPUT_CHARS} characters.")
        sentence = sentence[:MAX_INPUT_CHARS]
    return sentence


def sidebar(memory: SessionMemory) -> Selection | None:
    """The shared sidebar: checkpoint, sentence (with examples), layer and head. Mirrored in the
    URL.
    ``memory``: the session's, where the previous direction and the offer to carry over are kept."""
    names = checkpoints_in_order()  # the first is the default: a small model
    if not names:
        st.error("No checkpoint found. Put checkpoint directories in `checkpoints/` or name a "
                 f"directory in the {CHECKPOINTS_ENV} environment variable.")
        return None
    state = st.session_state
    if "checkpoint" not in state:  # first run of this session: take the URL's state
        wanted = st.query_params.get("ckpt", names[0])
        state["checkpoint"] = wanted if wanted in names else names[0]
    with st.sidebar:
        name = st.selectbox("Model (direction)", names, key="checkpoint",
                            format_func=model_label,
                            on_change=_direction_changed, args=(memory,),
                            help="Trained checkpoints found in checkpoints/ (and any the operator "
                            "configured).")
        note = size_note(name)
        if note:
            st.caption(note)
        try:
            cfg, metadata = checkpoint_info(name)
        except CheckpointError as exc:
            st.error(f"This checkpoint cannot be loaded: {exc}")
            return None
        layer, head = _layer_and_head(cfg)
        src_lang = metadata.get("src_lang", "de")
        tgt_lang = metadata.get("tgt_lang", "en")
        sentence = _sentence_box(src_lang)
        _carry_offer(name, sentence, memory)
    memory.last_checkpoint = name
    url.write(ckpt=name, s=sentence, layer=str(layer), head=str(head))
    return Selection(name, sentence, layer, head, src_lang, tgt_lang)
