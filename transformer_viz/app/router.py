"""The app's router, run on every script run: the page's settings and style, the navigation (every
page of navigation.PAGES, each at its own address), the shared sidebar, and then the page itself."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import streamlit as st

# first: before any import that may bring torch
from transformer_viz.app import coldstart  # noqa: F401

# pandas is imported whole before any page runs. plotly looks for it in sys.modules without
# importing it (optional_imports.get_module(..., should_load=False)) and then reads pandas.Series:
# while one script thread imported pandas for the first time (a chart's CSV download), another
# thread's figure found it half initialised and failed ("partially initialized module 'pandas' has
# no attribute 'Series'"), on a page opened while a fresh server's first page reran. Every script
# run imports this module, and a thread that finds it still being imported waits until it is.
import pandas  # noqa: E402, F401
from transformer_viz.app import context, frame, runlog, sidebar, style, url
from transformer_viz.app.navigation import DEFAULT_PAGE, PAGES

# What navigation.Page.file is relative to: absolute page paths let the app start from any
# directory.
PAGES_ROOT = Path(__file__).resolve().parents[2]


def navigation_pages() -> list[st.Page]:
    """The pages, in navigation order, then the default page once more, hidden, at its own address.

    Streamlit serves the default page at the root URL and at no other: its declared url_path would
    open a "Page not found" dialog. The hidden copy (the same script and title) answers that
    address. It comes last, so that a link to the page's file (st.page_link) names the first, the
    root URL.
    """
    pages = [st.Page(PAGES_ROOT / p.file, title=p.title, url_path="" if p == DEFAULT_PAGE
                     else p.url_path,
                     default=p == DEFAULT_PAGE) for p in PAGES]
    address = st.Page(PAGES_ROOT / DEFAULT_PAGE.file, title=DEFAULT_PAGE.title,
                      url_path=DEFAULT_PAGE.url_path,
                      visibility="hidden")
    return pages + [address]


_SESSION_PAGES = "_navigation_pages"


def session_pages() -> list[st.Page]:
    """:func:`navigation_pages`, made on the session's first run and kept in its state for the later
    ones.

    Making them resolves and checks every page's file, which need not happen on every click. Kept
    per session, not per process: st.navigation marks the page it returns as the one allowed to run
    and page.run() clears the mark, so two sessions running at once must not share the objects.
    """
    pages = st.session_state.get(_SESSION_PAGES)
    if pages is None:
        pages = st.session_state[_SESSION_PAGES] = navigation_pages()
    return pages


@st.fragment(run_every=timedelta(hours=1))
def rerun_after_reconnect() -> None:
    """Shows nothing; its presence makes the browser rerun the page whenever its websocket
    reconnects.

    Streamlit's frontend asks for a full rerun after a reconnect only when it thinks the server lost
    the session's run, for instance when the page holds a fragment that reruns on a timer, as this
    one does (hourly, at the cost of a run that draws nothing). Behind a proxy with several
    processes,
    a reconnect can land on another process that has never seen the session (its own process died):
    without the rerun the page would keep showing the old figures while nothing behind it runs any
    more (no widget, tab or download would answer until the student touched something). With it, the
    new process runs the page from the widgets' values and the URL: same page, sentence, direction,
    layer, head and open step. After a reconnect to the same process it is one cheap rerun from the
    caches.
    """


def main() -> None:
    """One script run: the navigation picks the page; the sidebar runs before it, which may
    st.stop()."""
    st.set_page_config(page_title="transformer-viz", page_icon="🔎", layout="wide")
    style.page_style()
    # expanded: every page listed (Streamlit folds a list of more than 12 behind "View more"
    # otherwise).
    page = st.navigation(session_pages(), expanded=True)
    with runlog.logged_run(page.title):  # a no-op unless TRANSFORMER_VIZ_RUN_LOG names a file
        memory = context.session_memory()
        ctx = frame.open_page(page.title, sidebar.sidebar(memory), memory)
        with st.sidebar:  # before the page, which may st.stop()
            # A session whose process died comes back on another (docs/deployment.md §4).
            rerun_after_reconnect()
        memory.hand_over(ctx)  # page.run() passes the page script nothing: it takes ctx from there
        try:
            page.run()
        finally:  # also after st.stop(): the URL keeps no step= of the page before
            url.end_run(ctx.step_written)  # a page with steps wrote its open step (steps.tabs)
