"""The page's state in its URL (?ckpt=…&s=…&layer=…&head=…&step=…), written back on every run, so
that a link reopens what its sender saw.

Streamlit sends the whole query string to the browser for every change of ``st.query_params``, even
a change to the value it already has, and the browser then rewrites its history entry: a few
milliseconds of its main thread each time. A run used to write three such messages or more (the
sidebar's choice, the open step removed and written back, a page's own parameters). Here a run
writes only what differs from the URL.
"""

from __future__ import annotations

import streamlit as st


def write(**values: str | None) -> None:
    """Set these query parameters (None removes one): one message to the browser for the values that
    change, one for each parameter removed, and none when the URL already says so."""
    params = st.query_params
    for key in [k for k, v in values.items() if v is None and k in params]:
        del params[key]
    changed = {k: v for k, v in values.items() if v is not None and params.get(k) != v}
    if changed:
        params.update(changed)


def write_step(number: int) -> None:
    """The open step of a page with steps, from 1 (steps.write_open_step also notes it in the page's
    context)."""
    write(step=str(number))


def end_run(step_written: bool) -> None:
    """After the page ran, or stopped: a page without steps (or one stopped before them) leaves no
    ``step=``."""
    if not step_written:
        write(step=None)
