"""How pages show things: a figure with its CSV download, figures built once per input and shared,
the data layouts of those downloads, user text shown safely as text, choices that went stale, and a
metric's change."""

from __future__ import annotations

import html
import re

import streamlit as st

# The CSV layouts live with the views, which build most figures' data; the pages that build
# their own tables use them from here.
from transformer_viz.views.tables import long_form, row_names, token_frame  # noqa: F401

# The figure's own template (plots.common) gives its look, not Streamlit's theme; the toolbar shows
# on hover (on a touch screen: after a tap), so it does not sit over a chart's title.
CHART_CONFIG = {"displaylogo": False, "displayModeBar": "hover", "scrollZoom": False}


def chart(fig, data, name: str, caption: str | None = None) -> None:
    """A figure with its data as a CSV download (plotly's own toolbar saves the image)."""
    import pandas as pd

    from transformer_viz.plots.common import min_width
    from transformer_viz.plots.describe import describe
    from transformer_viz.plots.payload import BrowserFigure, browser_figure

    fig = browser_figure(fig)  # at once for a cached figure, which already is one
    kept = isinstance(fig, BrowserFigure)
    needed = fig.min_width if kept else min_width(fig)
    title = phone_title(fig.to_dict() if kept else fig.to_plotly_json())
    if title:
        # Shown on a phone only (style.PAGE_CSS), where it wraps to the screen and the figure's own
        # title line, cut at a 358 px chart's edge, is hidden.
        st.html(f'<p class="chart-title">{title}</p>')
    # The keyed container carries the figure's minimum width into the page's style (style.PAGE_CSS),
    # rounded up to 50 px.
    with st.container(
        key=f"wide{min(1250, -(-needed // 50) * 50)}-{name}") if needed else st.container():
        st.plotly_chart(fig, width="stretch", key=f"chart-{name}", theme=None,
                        config=CHART_CONFIG | {"toImageButtonOptions": {"filename": name,
                                                                        "scale": 2}})
    # What the chart shows, in one sentence with its key number, for a screen reader (style.PAGE_CSS
    # takes it out of the page's flow: no space on the screen).
    alt = fig.alt if kept else describe(fig)
    st.html(f'<p class="chart-alt" role="note">{html.escape(alt)}</p>')
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    # A callable: the CSV is built only when someone downloads it, not on every rerun.
    st.download_button("Download the data (CSV)", lambda: frame.to_csv().encode("utf-8"),
                       file_name=f"{name}.csv",
                       mime="text/csv", key=f"csv-{name}")
    if caption:
        st.caption(caption)


def phone_title(spec: dict) -> str:
    """A figure's title as HTML text that wraps: its explicit line breaks as spaces (plotly's title
    markup, <sub>, <sup>, <b>, <i>, is HTML's too); "" for a figure without a title."""
    title = (spec.get("layout") or {}).get("title") or {}
    text = title.get("text") if isinstance(title, dict) else title
    return re.sub(r"\s*<br\s*/?>\s*", " ", str(text or "")).strip()


def view_chart(spec, name: str, caption: str | None = None) -> None:
    """A view's figure (a views.FigureSpec), built once per input (:func:`cached_figure`), with its
    data as the CSV download."""
    chart(cached_figure(spec.plot, *spec.args, **spec.kwargs), spec.data, name, caption)


def cached_figure(factory, *args, **kwargs):
    """``factory(*args, **kwargs)``, built once per input and shared by every session: plotly
    figures are slow to build, and no page changes one once built (``st.plotly_chart`` only reads
    it)."""
    return _cached_figure(factory, f"{factory.__module__}.{factory.__qualname__}", *args, **kwargs)


@st.cache_resource(max_entries=256, ttl=3600, show_spinner=False)
def _cached_figure(_factory, factory_name: str, *args, **kwargs):
    # Streamlit cannot hash a function: the "_" keeps it out of the cache key, and its name stands
    # in. Kept as the browser gets it (plots.payload), so that this is done once per figure, not
    # once per rerun.
    from transformer_viz.plots.payload import browser_figure

    return browser_figure(_factory(*args, **kwargs))


def escape_markdown(text: str) -> str:
    """Backslash-escape Markdown syntax, so text shown through st.info/st.markdown stays literal."""
    out = []
    for ch in text:
        if ch in "\\`*_{}[]()#+-.!|<>~$&":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def show_user_text(label: str, text: str) -> None:
    """User text is shown as text only: never as Markdown or HTML."""
    st.caption(label)
    st.text(text)


def reset_stale_index(key: str, n: int) -> None:
    """Call before a keyed selectbox over range(n) whose labels describe the data (tokens, lengths).

    After a new sentence the kept choice may be out of range, and, when its old label is no longer
    among the options, Streamlit hands back that label (a str) instead of an index. Either way the
    choice goes back to 0 rather than failing.
    """
    value = st.session_state.get(key, 0)
    if not isinstance(value, int) or not 0 <= value < n:
        st.session_state[key] = 0


def score_change(new: float, old: float, digits: int = 4) -> tuple[str, str]:
    """(delta text, colour) for a metric comparing two log-probabilities shown with ``digits``
    decimals: equal as shown -> a neutral 'same', never a red '-0.0000'."""
    difference = round(new - old, digits)
    if difference == 0:
        return "same", "off"
    return f"{difference:+.{digits}f}", "normal"
