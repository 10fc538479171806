"""A page's numbered steps, as tabs of which only the open one runs; the open step travels in the URL."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.frame import link_step


def tabs(labels: list[str], key: str) -> list:
    """A page's numbered steps as tabs, of which only the open one runs (`if tab.open:`): a new sentence
    then builds, sends and draws only that step's figures, about half the CPU of the whole page for
    the server and for the student's browser. Each session keeps its open step under `key`; a widget
    inside a closed step is not rendered, so it starts from its default when the step opens again. The open
    step is in the URL (``step=2``), so a shared link reopens it."""
    state = st.session_state
    wanted = link_step()  # a shared link names the open step: 1, 2, …
    if wanted is not None and wanted.isascii() and wanted.isdigit() and 1 <= int(wanted) <= len(labels):
        state[key] = labels[int(wanted) - 1]
    tabs = st.tabs(labels, key=key, on_change="rerun")
    # The open step is mirrored in the URL like the page, sentence, layer and head: a link reopens it.
    opened = state.get(key)
    st.query_params["step"] = str(labels.index(opened) + 1 if opened in labels else 1)
    return tabs
