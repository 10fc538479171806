"""What every page script stands on: the router makes the run's context, what page runs and what
the sidebar chose (:func:`open_page`, context.PageContext); the page takes it
(:func:`page_context`), draws its header (title, sentence bar, intro, formula) and gets the
sentence's run, with what the reader should know about the input at the top (:func:`page_header`).
Every function here takes the context.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import streamlit as st

from transformer_viz.app import loaders
from transformer_viz.app.about import direction_label, language_stats, reverse_checkpoint
from transformer_viz.app.context import PageContext, SessionMemory, session_memory
from transformer_viz.app.navigation import title_of
from transformer_viz.app.sidebar import MAX_INPUT_CHARS, Selection, sidebar, swap_direction
from transformer_viz.app.widgets import escape_markdown
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.text.language_stats import check_language, input_warnings, language_name
from transformer_viz.text.tokenizer import InputError

# torch and the engine are imported on first use, not here: the sidebar and the top of a page need
# only JSON, so on a cold start the browser draws them (and fetches its chart code) while torch is
# loading.
if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun


def open_page(title: str, selection: Selection | None,
              memory: SessionMemory | None = None) -> PageContext:
    """This run's context: what the page is, and the sidebar's choice (None when there is no usable
    checkpoint). On the session's first run, the link's open step is kept for this page only."""
    memory = memory if memory is not None else session_memory()
    memory.open_link(title, st.query_params.get("step"))
    return PageContext(title, selection, memory)


def page_context(page_file: str) -> PageContext:
    """The page script's first call: the context the router made for this run; a page script run on
    its own (no router, e.g. ``AppTest.from_file`` on its file) draws the sidebar itself and makes
    its context here, titled as the navigation names ``page_file``."""
    memory = session_memory()
    ctx = memory.take_handed()
    if ctx is None:
        ctx = open_page(title_of(page_file), sidebar(memory), memory)
    return ctx


def selection(ctx: PageContext) -> Selection:
    """The sidebar's choice for this run; stops the page when there is none (the sidebar says
    why)."""
    if ctx.selection is None:
        st.stop()
    return ctx.selection


def current_run(ctx: PageContext, beam_size: int = 1, causal: bool = True,
                trace: bool = True) -> SentenceRun | None:
    """Run the selection (cached), showing input problems as messages in the page, never a
    traceback.
    ``trace=False``: the translation alone (loaders.get_translation), for a page that shows none of
    its tensors."""
    sel = selection(ctx)
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
    show_input_notes(ctx, run)
    return run


def require_run(ctx: PageContext, beam_size: int = 1, causal: bool = True) -> SentenceRun:
    """The selection's run (cached); stops the page when the input was refused (the message is
    shown)."""
    run = current_run(ctx, beam_size, causal)
    if run is None:
        st.stop()
    return run


def show_input_notes(ctx: PageContext, run: SentenceRun) -> None:
    """What the reader should know about the input, at the top of the page (under the title, in
    ``ctx.notes``), whatever the page draws first: what was removed or cut, and the warnings
    (another language, far too long, a fragment) with, for another language, a button that swaps the
    direction and keeps the text."""
    sel = selection(ctx)
    with ctx.notes if ctx.notes is not None else st.container():
        for note in run.messages:
            st.info(escape_markdown(note))
        stats = language_stats(sel.checkpoint)
        warnings = input_warnings(stats, run.source_text, run.src_ids, sel.src_lang, sel.tgt_lang)
        for warning in warnings:
            st.warning(escape_markdown(warning))
        other = reverse_checkpoint(sel.checkpoint) if stats is not None else None
        if other and check_language(stats, run.src_ids, sel.src_lang).looks_like == sel.tgt_lang:
            st.button(f"Translate it {direction_label(other)} instead", key="swap_direction",
                      on_click=swap_direction, args=(other, ctx.memory))


@st.fragment(run_every=timedelta(seconds=0.5))
def rerun_when_loaded(name: str) -> None:
    """Shows nothing; reruns the whole page as soon as the background load of the checkpoint is over
    (loaders.loading_in_background), for a page that drew what it could without the model. The
    browser asks for a run of this fragment every 0.5 s meanwhile; a page drawn with the model calls
    it no more, which ends those runs."""
    if not loaders.loading_in_background(name):
        st.rerun()


SENTENCE_BAR_KEY = "sentence_bar_text"  # the sentence bar's text box (a widget's own value)


def _run_bar_sentence() -> None:
    text = st.session_state.get(SENTENCE_BAR_KEY, "")
    if text.strip():
        st.session_state["sentence"] = text[:MAX_INPUT_CHARS]


def sentence_bar(sel: Selection) -> None:
    """On a phone the sidebar (and its sentence box) is folded away behind a small arrow, and a text
    area there takes Enter as a new line: a one-line box at the top of the page with a Translate
    button, where Enter (the keyboard's Go) runs the sentence. Hidden on wide screens, which have
    the sidebar."""
    # What the sidebar holds, each run: a form sends its box only on submit.
    st.session_state[SENTENCE_BAR_KEY] = sel.sentence
    with st.container(key="sentence_bar"), st.form("sentence_bar_form", border=False):
        text_col, button_col = st.columns([4, 1], vertical_alignment="bottom")
        text_col.text_input(f"Type a sentence ({language_name(sel.src_lang)})",
                            key=SENTENCE_BAR_KEY,
                            max_chars=MAX_INPUT_CHARS)
        button_col.form_submit_button("Translate ▶", on_click=_run_bar_sentence, width="stretch")


def page_header(ctx: PageContext, intro: str, formula: str | None = None, *,
                run: bool = True) -> tuple[Selection, SentenceRun | None]:
    """The top of every page: the selection, the page's title (as the navigation names it), what the
    page shows and its formula; then the sentence's run, or a stop where the input was refused. The
    place for the notes on the input, right under the title, becomes ``ctx.notes``.

    ``run=False`` leaves the run to the page (returned as None), for a page that has something to
    show before it, or without it.
    """
    sel = selection(ctx)
    st.title(ctx.title)
    ctx.notes = st.container()
    sentence_bar(sel)
    st.markdown(intro)
    if formula:
        st.latex(formula)
    return sel, (require_run(ctx) if run else None)
