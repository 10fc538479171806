"""A page's numbered steps, as tabs of which only the open one runs; the open step travels in the
URL."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import url
from transformer_viz.app.context import PageContext


def _move(store: str, key, delta: int, last: int) -> None:
    places = st.session_state.setdefault(store, {})
    places[key] = min(max(places.get(key, 1) + delta, 1), last)


def stepper(store: str, key, n_steps: int, prefix: str, noun: str = "Step") -> int:
    """◀ Previous / Next ▶ through ``n_steps`` generated tokens (buttons ``{prefix}_prev`` and
    ``{prefix}_next``); the place is kept per ``key`` (a sentence, a prompt) in
    ``st.session_state[store]``, so each keeps its own. Returns the step shown, from 1."""
    t = min(max(st.session_state.get(store, {}).get(key, 1), 1), n_steps)
    left, middle, right = st.columns([1, 2, 1])
    left.button("◀ Previous", key=f"{prefix}_prev", on_click=_move, args=(store, key, -1, n_steps),
                disabled=t <= 1,
                width="stretch")
    middle.markdown(f"**{noun} {t} of {n_steps}**")
    middle.progress(t / n_steps)
    right.button("Next ▶", key=f"{prefix}_next", on_click=_move, args=(store, key, 1, n_steps),
                 disabled=t >= n_steps, width="stretch")
    return t


def write_open_step(ctx: PageContext, number: int) -> None:
    """The page's open step (from 1) into the URL; the context notes it, so the router keeps it."""
    ctx.step_written = True
    url.write_step(number)


def tabs(ctx: PageContext, labels: list[str], key: str) -> list:
    """A page's numbered steps as tabs, of which only the open one runs (`if tab.open:`): a new
    sentence then builds, sends and draws only that step's figures, about half the CPU of the whole
    page for the server and for the student's browser. Each session keeps its open step under `key`;
    a widget inside a closed step is not rendered, so it starts from its default when the step opens
    again. The open step is in the URL (``step=2``), so a shared link reopens it."""
    state = st.session_state
    wanted = ctx.link_step()  # a shared link names the open step: 1, 2, …
    if wanted is not None and wanted.isascii() and wanted.isdigit() and 1 <= int(
        wanted) <= len(labels):
        state[key] = labels[int(wanted) - 1]
    tabs = st.tabs(labels, key=key, on_change="rerun")
    # The open step is mirrored in the URL like the page, sentence, layer and head: a link reopens
    # it.
    opened = state.get(key)
    write_open_step(ctx, labels.index(opened) + 1 if opened in labels else 1)
    return tabs
