"""What every page script stands on: the router says which page runs and what the sidebar chose
(:func:`open_page`); the page reads that choice back (:func:`selection`), draws its header (title,
sentence bar, intro, formula) and gets the sentence's run, with what the reader should know about the
input at the top (:func:`page_header`). The step a shared link names is kept here for the page it opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import streamlit as st

from transformer_viz.app import loaders
from transformer_viz.app.about import direction_label, language_stats, reverse_checkpoint
from transformer_viz.app.sidebar import MAX_INPUT_CHARS, Selection, swap_direction
from transformer_viz.app.widgets import escape_markdown
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.text.language_stats import check_language, input_warnings, language_name
from transformer_viz.text.tokenizer import InputError

# torch and the engine are imported on first use, not here: the sidebar and the top of a page need only
# JSON, so on a cold start the browser draws them (and fetches its chart code) while torch is loading.
if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun

_URL_STEP = "_url_step"  # (page title, the step named in the link the session was opened with)
_OPEN_PAGE = "_open_page"  # where the router leaves this run's page title and selection for the page
_NOTES_SLOT = "_notes_slot"  # where page_header keeps the place under the title for the input notes


@dataclass(frozen=True)
class OpenPage:
    title: str
    selection: Selection | None


def open_page(title: str, selection: Selection | None) -> None:
    """Called by the router on every run, after the sidebar and before the page: what the page is, and the
    sidebar's choice (None when there is no usable checkpoint), for :func:`page_header`."""
    st.session_state[_OPEN_PAGE] = OpenPage(title, selection)
    if _URL_STEP not in st.session_state:  # the session's first run: the link's open step, for this page only
        st.session_state[_URL_STEP] = (title, st.query_params.get("step"))
    st.session_state[_NOTES_SLOT] = None  # page_header makes this run's place for the input notes


def selection() -> Selection:
    """The sidebar's choice for this run; stops the page when there is none (the sidebar says why)."""
    opened = st.session_state.get(_OPEN_PAGE)
    if opened is None or opened.selection is None:
        st.stop()
    return opened.selection


def link_step() -> str | None:
    """The step named in the link this session was opened with (``step=7``, as text, unchecked), when the
    link opened this page; once: later runs get None, and the session's own choice counts."""
    state = st.session_state
    title, wanted = state.get(_URL_STEP) or (None, None)
    if wanted is None or title != state[_OPEN_PAGE].title:
        return None
    state[_URL_STEP] = (None, None)
    return wanted


def current_run(sel: Selection, beam_size: int = 1, causal: bool = True, trace: bool = True) -> SentenceRun | None:
    """Run the selection (cached), showing input problems as messages in the page, never a traceback.
    ``trace=False``: the translation alone (loaders.get_translation), for a page that shows none of its tensors."""
    try:
        if trace:
            run = loaders.get_run(sel.checkpoint, sel.sentence, beam_size, causal)
        else:
            run = loaders.get_translation(sel.checkpoint, sel.sentence, beam_size)
    except InputError as exc:
        st.warning(escape_markdown(str(exc)))
        return None
    except CheckpointError as exc:
        st.error(f"This checkpoint cannot be loaded: {exc}")
        return None
    show_input_notes(sel, run)
    return run


def require_run(sel: Selection, beam_size: int = 1, causal: bool = True) -> SentenceRun:
    """The selection's run (cached); stops the page when the input was refused (the message is shown)."""
    run = current_run(sel, beam_size, causal)
    if run is None:
        st.stop()
    return run


def show_input_notes(sel: Selection, run: SentenceRun) -> None:
    """What the reader should know about the input, at the top of the page (under the title), whatever the
    page draws first: what was removed or cut, and the warnings (another language, far too long, a
    fragment) with, for another language, a button that swaps the direction and keeps the text."""
    slot = st.session_state.get(_NOTES_SLOT)
    with slot if slot is not None else st.container():
        for note in run.messages:
            st.info(escape_markdown(note))
        warnings = input_warnings(language_stats(sel.checkpoint), run.source_text, run.src_ids, sel.src_lang,
                                  sel.tgt_lang)
        for warning in warnings:
            st.warning(escape_markdown(warning))
        stats = language_stats(sel.checkpoint)
        other = reverse_checkpoint(sel.checkpoint) if stats is not None else None
        if other and check_language(stats, run.src_ids, sel.src_lang).looks_like == sel.tgt_lang:
            st.button(f"Translate it {direction_label(other)} instead", key="swap_direction",
                      on_click=swap_direction, args=(other,))


@st.fragment(run_every=timedelta(seconds=0.5))
def rerun_when_loaded(name: str) -> None:
    """Shows nothing; reruns the whole page as soon as the background load of the checkpoint is over
    (loaders.loading_in_background), for a page that drew what it could without the model. The browser
    asks for a run of this fragment every 0.5 s meanwhile; a page drawn with the model calls it no more,
    which ends those runs."""
    if not loaders.loading_in_background(name):
        st.rerun()


_BAR_TEXT = "sentence_bar_text"


def _run_bar_sentence() -> None:
    text = st.session_state.get(_BAR_TEXT, "")
    if text.strip():
        st.session_state["sentence"] = text[:MAX_INPUT_CHARS]


def sentence_bar(sel: Selection) -> None:
    """On a phone the sidebar (and its sentence box) is folded away behind a small arrow, and a text area
    there takes Enter as a new line: a one-line box at the top of the page with a Translate button, where
    Enter (the keyboard's Go) runs the sentence. Hidden on wide screens, which have the sidebar."""
    st.session_state[_BAR_TEXT] = sel.sentence  # what the sidebar holds, each run (a form sends only on submit)
    with st.container(key="sentence_bar"), st.form("sentence_bar_form", border=False):
        text_col, button_col = st.columns([4, 1], vertical_alignment="bottom")
        text_col.text_input(f"Type a sentence ({language_name(sel.src_lang)})", key=_BAR_TEXT,
                            max_chars=MAX_INPUT_CHARS)
        button_col.form_submit_button("Translate ▶", on_click=_run_bar_sentence, width="stretch")


def page_header(intro: str, formula: str | None = None, *, run: bool = True) -> tuple[Selection, SentenceRun | None]:
    """The top of every page: the selection, the page's title (as the navigation names it), what the page
    shows and its formula; then the sentence's run, or a stop where the input was refused.

    ``run=False`` leaves the run to the page (returned as None), for a page that has something to show
    before it, or without it.
    """
    sel = selection()
    st.title(st.session_state[_OPEN_PAGE].title)
    st.session_state[_NOTES_SLOT] = st.container()  # the input notes go here, above everything else
    sentence_bar(sel)
    st.markdown(intro)
    if formula:
        st.latex(formula)
    return sel, (require_run(sel) if run else None)
