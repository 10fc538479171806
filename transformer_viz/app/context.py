"""What a page runs with, in the open: :class:`PageContext` (the page's title, the sidebar's
selection, the place for the input notes, whether the page wrote its open step) is made for every
run and passed to the functions that need it; :class:`SessionMemory` is what the app keeps for one
browser session between runs, beyond the values its widgets own.

The one place the app keeps anything of its own in ``st.session_state`` is :data:`MEMORY_KEY`: the
session's :class:`SessionMemory`. Widgets keep their values under their own keys ("checkpoint",
"sentence", "layer", …), as Streamlit does. The router hands the run's context to the page through
the memory too (:meth:`SessionMemory.hand_over`), because ``st.Page.run`` passes a page script no
argument; a page script run on its own (no router) finds none and makes its own
(``frame.page_context``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from transformer_viz.text.language_stats import direction_name, language_name

MEMORY_KEY = "transformer_viz_memory"  # st.session_state[MEMORY_KEY]: the session's SessionMemory


@dataclass
class Selection:
    checkpoint: str
    sentence: str
    layer: int
    head: int
    src_lang: str
    tgt_lang: str

    @property
    def direction(self) -> str:
        return direction_name(self.src_lang, self.tgt_lang)

    @property
    def src_name(self) -> str:
        return language_name(self.src_lang)

    @property
    def tgt_name(self) -> str:
        return language_name(self.tgt_lang)


@dataclass
class SessionMemory:
    """What must outlive a run of one session (each field is read by a later run or a widget's
    callback).

    ``link``: the page and the step (``step=``, as text, unchecked) named in the link the session
    was opened with, until that page has read it; ``started``: whether the session's first run took
    it.
    ``last_checkpoint``: the direction of the previous run, to notice a change. ``carry``:
    (checkpoint, sentence) whose translation the sidebar offers as the new source after a change of
    direction.
    ``forced``: (checkpoint, sentence, forced token IDs), the "what if" prefix of the sentence.
    """

    started: bool = False
    link: tuple[str, str] | None = None
    last_checkpoint: str | None = None
    carry: tuple[str, str] | None = None
    forced: tuple[str, str, tuple[int, ...]] | None = None
    handed: PageContext | None = field(default=None, repr=False)

    def open_link(self, title: str, step: str | None) -> None:
        """On the session's first run: the link's step, kept for the page it opened (``title``)."""
        if not self.started:
            self.started = True
            self.link = (title, step) if step is not None else None

    def take_link_step(self, title: str) -> str | None:
        """The link's step when the link opened page ``title``; once: later calls get None."""
        if self.link is None or self.link[0] != title:
            return None
        step = self.link[1]
        self.link = None
        return step

    def hand_over(self, ctx: PageContext) -> None:
        """The router: this run's context, for the page script it runs next."""
        self.handed = ctx

    def take_handed(self) -> PageContext | None:
        """The page: the context the router made for this run, or None when no router ran."""
        ctx, self.handed = self.handed, None
        return ctx


def session_memory() -> SessionMemory:
    """This session's memory (made on its first run), under :data:`MEMORY_KEY`."""
    memory = st.session_state.get(MEMORY_KEY)
    if memory is None:
        memory = st.session_state[MEMORY_KEY] = SessionMemory()
    return memory


@dataclass
class PageContext:
    """One run of one page. ``selection`` is None where the sidebar could offer no checkpoint.

    Two fields are filled while the page runs: ``notes``, the place under the title where the notes
    on the input go (frame.page_header makes it), and ``step_written``, set when the page wrote its
    open step to the URL (steps.tabs): after the page, the router removes a ``step=`` no page wrote.
    """

    title: str
    selection: Selection | None
    memory: SessionMemory = field(default_factory=SessionMemory)
    notes: Any = None
    step_written: bool = False

    def link_step(self) -> str | None:
        """The step named in the link this session was opened with (``step=7``, as text, unchecked),
        when the link opened this page; once: later runs get None, and the session's own choice
        counts."""
        return self.memory.take_link_step(self.title)
