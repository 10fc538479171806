"""What the Practice page (pages/practice.py) keeps and draws: the exercise open and the exercises
answered right, both in the URL (``ex=3&done=1,2``) and nowhere else that outlives the session; each
exercise posed once per (checkpoint, sentence, layer, head) and shared read-only between sessions;
the answer box with its verdict, and the three staged hints."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import loaders, url, widgets
from transformer_viz.app.navigation import PAGES
from transformer_viz.app.sidebar import Selection
from transformer_viz.views import practice as P

EX, DONE = "ex", "done"  # the URL's exercise open and exercises answered right
N = len(P.EXERCISES)
# The session's last (exercise, done), for a student who follows the page's link to another page and
# comes back by the navigation, which opens the page without them in its URL.
_LAST = "_practice_progress"


@st.cache_resource(show_spinner="Preparing the exercise…", max_entries=256, ttl=3600)
def posed(checkpoint: str, sentence: str, layer: int, head: int, number: int) -> P.Posed:
    """Exercise ``number`` (from 1) asked about the sentence's run: answered from its trace and
    model once."""
    run, ckpt = loaders.get_run(checkpoint, sentence), loaders.get_checkpoint(checkpoint)
    context = P.Context(run, ckpt, layer, head)
    return P.EXERCISES[number - 1].pose(context)


def progress() -> tuple[int, list[int]]:
    """The exercise open and those answered right, as the URL says (or as this session last had
    them, when the URL says neither); written back to the URL."""
    params = st.query_params
    last = st.session_state.get(_LAST)
    if last is not None and EX not in params and DONE not in params:
        number, done = last
    else:
        number, done = P.exercise_number(params.get(EX), N), P.parse_done(params.get(DONE), N)
    keep(number, done)
    return number, done


def keep(number: int, done: list[int]) -> None:
    st.session_state[_LAST] = (number, done)
    url.write(**{EX: str(number), DONE: P.format_done(done)})


def go_to(number: int) -> None:
    """A button's callback: open exercise ``number``, the progress kept."""
    keep(min(max(number, 1), N), P.parse_done(st.query_params.get(DONE), N))


def _jumped() -> None:
    go_to(st.session_state["practice_jump"])


def navigation_row(number: int) -> None:
    """Previous, the jump to any exercise (which says where the student is), Next."""
    prev, where, nxt = st.columns([1, 5, 1], vertical_alignment="center")
    prev.button("◀ Previous", key="practice_prev", on_click=go_to, args=(number - 1,),
                disabled=number <= 1, width="stretch")
    st.session_state["practice_jump"] = number
    where.selectbox("Exercise", range(1, N + 1), key="practice_jump", on_change=_jumped,
                    label_visibility="collapsed",
                    format_func=lambda k: f"Exercise {k} of {N} · {P.EXERCISES[k - 1].title}")
    nxt.button("Next ▶", key="practice_next", on_click=go_to, args=(number + 1,),
               disabled=number >= N, width="stretch")


def _check(number: int, answer: P.Answer) -> None:
    typed = st.session_state.get(f"practice_answer_{number}", "")
    right = bool(typed.strip()) and answer.check(typed)
    # Kept with the answer it was checked against: after a new sentence, layer or head the verdict
    # no longer applies (posed() hands out one Posed per sentence, layer and head).
    st.session_state[f"practice_verdict_{number}"] = (typed, right, answer)
    if right:
        keep(number, sorted(set(P.parse_done(st.query_params.get(DONE), N)) | {number}))


def answer_box(number: int, answer: P.Answer, done: list[int]) -> None:
    """The answer field and its Check button (Enter checks too), then the verdict on the last
    answer."""
    with st.form(f"practice_form_{number}", border=False):
        field, button = st.columns([4, 1], vertical_alignment="bottom")
        field.text_input("Your answer", key=f"practice_answer_{number}")
        button.form_submit_button("Check", key=f"practice_check_{number}", on_click=_check,
                                  args=(number, answer), width="stretch")
    typed, right, checked = st.session_state.get(f"practice_verdict_{number}", (None, None, None))
    if checked is not answer:
        typed = right = None
    if right:
        shown = widgets.escape_markdown(answer.shown)
        st.success(f"Right: {shown}. Exercise {number} is marked done in the link.")
    elif typed is not None:
        shown = widgets.escape_markdown(typed.strip()) or "an empty answer"
        st.error(f"Not quite: {shown} is not the answer. Try again, or take a hint.")
    elif number in done:
        st.info("Answered correctly already (the link says so). Try it again if you like.")


def _more_hints(number: int) -> None:
    key = f"practice_hints_{number}"
    st.session_state[key] = min(st.session_state.get(key, 0) + 1, P.HINTS)


def hints(number: int, question: P.Posed) -> bool:
    """The hints in words taken so far, and the button for one more; whether the third, the answer,
    has been asked for (:func:`worked_answer` draws it, across the page: its figure needs the
    width)."""
    taken = st.session_state.get(f"practice_hints_{number}", 0)
    for k, hint in enumerate(question.hints[:taken], start=1):
        st.markdown(f"**Hint {k}.** {widgets.escape_markdown(hint)}")
    if taken < P.HINTS:
        st.button(f"Show hint {taken + 1} of {P.HINTS}", key=f"practice_hint_{number}",
                  on_click=_more_hints, args=(number,))
    return taken >= P.HINTS


def worked_answer(exercise: P.Exercise, question: P.Posed) -> None:
    """The third hint: the answer worked out, and drawn on a figure of the page explaining it."""
    st.markdown(f"**Hint 3, the answer.** {widgets.escape_markdown(question.solution)}")
    spec = question.figure
    widgets.chart(spec.figure(), spec.data, f"practice-{exercise.id}")


def explained_on(exercise: P.Exercise, sel: Selection) -> None:
    """The link to the page that explains the exercise (same sentence, layer and head) and its
    glossary."""
    page = next(p for p in PAGES if p.url_path == exercise.page)
    st.page_link(page.file, label=f"Explained on: {page.title}", icon="↗",
                 help="Opens that page with this sentence, layer and head",
                 query_params={"ckpt": sel.checkpoint, "s": sel.sentence, "layer": str(sel.layer),
                               "head": str(sel.head)})
    with st.expander("Glossary", expanded=False):
        escape = widgets.escape_markdown
        st.markdown("\n".join(f"- **{escape(term)}**: {escape(text)}"
                              for term, text in P.terms(exercise.terms)))


def progress_table(done: list[int]) -> dict[str, list[str]]:
    """One row per exercise: its number and title, and whether it was answered right."""
    return {"exercise": [f"{k}. {e.title}" for k, e in enumerate(P.EXERCISES, 1)],
            "answered": ["✓ right" if k in done else "" for k in range(1, N + 1)]}
