"""Work that a large model makes too slow for every new sentence: switching each head off in turn,
patching every layer and position, integrated gradients. For a model of the small checkpoints' size
it runs as the page opens; for a large one (the paper's base size: 44M parameters in its layers,
where one pass with each of its 144 heads off takes 1-3 s on one core) it waits for a button, once
per checkpoint and sentence, so that a new sentence costs each page one cheap rerun."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.context import Selection

# Parameters of the encoder's and decoder's layers (embeddings left out: their cost is one product
# per token) above which a model is large. The small checkpoints have 5.5M, the paper's base 44M.
LARGE_LAYER_PARAMETERS = 20_000_000
ASKED = "asked_for"  # session state: the (work, checkpoint, sentence) the reader asked for


def layer_parameters(cfg) -> int:
    """The weights of the N encoder and N decoder layers: attention's W_Q, W_K, W_V, W_O (d_model²
    each; twice in a decoder layer) and the feed-forward's W_1, W_2 (d_model·d_ff each)."""
    attention, ffn = 4 * cfg.d_model * cfg.d_model, 2 * cfg.d_model * cfg.d_ff
    return cfg.N * (attention + ffn) + cfg.N * (2 * attention + ffn)


def is_large(cfg) -> bool:
    return layer_parameters(cfg) > LARGE_LAYER_PARAMETERS


def ready(sel: Selection, cfg, work: str) -> bool:
    """Whether ``work`` may run now: at once for a model that is not large; for a large one once the
    reader pressed its button (:func:`offer`) for this checkpoint and sentence, remembered for the
    session."""
    return not is_large(cfg) or (work, sel.checkpoint, sel.sentence) in st.session_state.get(
        ASKED, set())


def offer(sel: Selection, cfg, work: str, label: str, what: str) -> None:
    """The button (``label``) that asks for ``work`` on this checkpoint and sentence, after one line
    on what it does (``what``) and why it waits."""
    st.caption(f"{what} For a model of this size ({layer_parameters(cfg) / 1e6:.0f}M parameters "
               "in its layers) that takes seconds, so it runs when you ask.")
    # a callback, so that the run the click starts is already ready() and draws no button
    st.button(label, key=f"ask_{work}", on_click=_ask, args=((work, sel.checkpoint, sel.sentence),))


def wanted(sel: Selection, cfg, work: str, label: str, what: str) -> bool:
    """:func:`ready`, else the :func:`offer` drawn and False."""
    if ready(sel, cfg, work):
        return True
    offer(sel, cfg, work, label, what)
    return False


def _ask(token: tuple) -> None:
    st.session_state.setdefault(ASKED, set()).add(token)
