"""The look every page shares: the app's CSS."""

from __future__ import annotations

import streamlit as st

# Style-only HTML takes no room on the page (Streamlit puts it out of the flow).
PAGE_CSS = """<style>
/* A projector shows 720 px: less empty space above a smaller title, so that the main figure starts on
   the first screen. */
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem; }  /* just below the 3.75rem header bar */
[data-testid="stMain"] h1 { font-size: 2.1rem; padding: 0.25rem 0 0.5rem; }
/* Sixteen pages: close links (26 px apart instead of 34, each 26 px tall, above the 24 px a touch target
   needs) keep the Layer and Head pickers below them on the sidebar's first screen at 720 px. */
[data-testid="stSidebarNavItems"] li { margin: 0; }
[data-testid="stSidebarNavLink"] { margin: 0; min-height: 26px; height: 26px; padding-top: 0; padding-bottom: 0; }
/* The sentence bar is for narrow screens (a phone), where the sidebar is folded away. */
@media (min-width: 768px) { .st-key-sentence_bar { display: none; } }
/* A figure of several panels side by side, or a block diagram, keeps the width it needs (widgets.chart)
   and scrolls sideways on a narrower screen, instead of drawing its parts over each other. */
[class*="st-key-wide"] { overflow-x: auto; overflow-y: hidden; }
""" + "\n".join(f'[class*="st-key-wide{w}-"] > * {{ min-width: {w}px; }}'
                for w in range(300, 1300, 50)) + """
</style>"""


def page_style() -> None:
    st.html(PAGE_CSS)
