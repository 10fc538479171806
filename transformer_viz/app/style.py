"""The look every page shares: the app's CSS."""

from __future__ import annotations

import streamlit as st

# px: the least widths a figure asks for (widgets.chart rounds up to one)
WIDE_WIDTHS = range(300, 1300, 50)
SCROLL_CUE = ('content: "⇆ Swipe sideways: this figure is wider than the screen"; display: block; '
              "position: sticky; left: 0; width: max-content; padding: 2px 6px; font-size: 14px; "
              "color: #333; "
              "background: #fff3cd; border-radius: 4px;")
# Style-only HTML takes no room on the page (Streamlit puts it out of the flow).
PAGE_CSS = """<style>
/* Each chart's sentence for screen readers (widgets.chart): read aloud, never drawn, and out of the
   page's flow so that it adds no gap. */
[data-testid="stElementContainer"]:has(.chart-alt) { position: absolute; width: 1px; height: 1px;
  overflow: hidden; clip-path: inset(50%); margin: 0; padding: 0; }
/* A projector shows 720 px: less empty space above a smaller title, so that the main figure starts
   on the first screen. */
/* just below the 3.75rem header bar */
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem; }
[data-testid="stMain"] h1 { font-size: 2.1rem; padding: 0.25rem 0 0.5rem; }
/* Eighteen pages: close links (24 px apart instead of 34, each 24 px tall, the least a touch target
   needs) keep the Layer and Head pickers below them on the sidebar's first screen at 720 px. */
[data-testid="stSidebarNavItems"] li { margin: 0; }
[data-testid="stSidebarNavLink"] { margin: 0; min-height: 24px; height: 24px; padding-top: 0;
  padding-bottom: 0; }
/* The sentence bar is for narrow screens (a phone), where the sidebar is folded away. */
@media (min-width: 768px) { .st-key-sentence_bar { display: none; } }
/* A figure of several panels side by side, or a block diagram, keeps the width it needs
   (widgets.chart) and scrolls sideways on a narrower screen, instead of drawing its parts over each
   other. */
[class*="st-key-wide"] { overflow-x: auto; overflow-y: hidden; }
/* A figure's title as page text (widgets.chart), for a phone only. */
@media (min-width: 641px) {
  [data-testid="stElementContainer"]:has(.chart-title) { display: none; }
}
/* On a phone the typed sentence keeps its box to itself: the hint "Press Enter to submit form" was
   drawn over it (the button beside the box says what to do). A figure's title stands above it as
   page text that wraps (a title line was cut at the chart's edge): the chart's own title is hidden,
   and plotly's toolbar, shown after a tap, takes its empty place. */
@media (max-width: 640px) {
  [data-testid="InputInstructions"] { display: none; }
  [data-testid="stMain"] .js-plotly-plot .gtitle { visibility: hidden; }
  .chart-title { font-size: 16px; font-weight: 600; color: #222; margin: 0 0 -0.5rem; }
}
""" + "\n".join(f'[class*="st-key-wide{w}-"] > * {{ min-width: {w}px; }}'
                for w in WIDE_WIDTHS) + "\n" + "\n".join(
    # Where the screen is narrower than the figure (its column's padding included), a line under it
    # says that it scrolls sideways; it stays at the left edge while the figure scrolls.
    f'@media (max-width: {w + 40}px) {{ [class*="st-key-wide{w}-"]::after {{ {SCROLL_CUE} }} }}'
    for w in WIDE_WIDTHS) + """
</style>"""


def page_style() -> None:
    st.html(PAGE_CSS)
