"""Lecture: the whole lecture, one idea per step, on the current sentence; a presentation clicker
drives it (→, PageDown, Space: next; ←, PageUp: previous). The steps are data
(transformer_viz/views/lecture/); this page renders any of them: its live text, its formula, its
figure and a link to the page that shows it in full, and offers them all as one HTML file that needs
no network (app/lecture/download.py)."""

import streamlit as st

from transformer_viz.app import (about, frame, loaders, on_request, sections, steps, url,
                                 widgets)
from transformer_viz.app.lecture.browser import FIGURE_WIDTH_CSS, KEYS_JS, PROJECTOR_CSS
from transformer_viz.app.lecture.download import download_button
from transformer_viz.app.context import PageContext
from transformer_viz.app.navigation import PAGES
from transformer_viz.app.sidebar import Selection
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.views import lecture

STEP = "lecture_step"
JUMP = "lecture_jump"
PROJECTOR = "lecture_projector"
PRESET = "lecture_preset"
N = len(lecture.STEPS)


def move(delta: int) -> None:
    st.session_state[STEP] = min(max(st.session_state[STEP] + delta, 1), N)


def jump() -> None:
    st.session_state[STEP] = st.session_state[JUMP]


def use_preset(names: dict) -> None:
    preset = st.session_state.get(PRESET)
    if preset is not None:
        st.session_state["checkpoint"] = names[preset.src_lang]
        st.session_state["sentence"] = preset.sentence


def navigation_row(step_no: int) -> bool:
    """Title, Previous, the jump to any step (which says where we are), Next, and the projector
    toggle."""
    title, prev, where, nxt, mode = st.columns([2, 0.7, 4, 0.7, 1.6], vertical_alignment="center")
    title.title("Lecture")
    prev.button("◀", key="lecture_prev", on_click=move, args=(-1,), disabled=step_no <= 1,
                width="stretch",
                help="Previous step (← or PageUp)")
    st.session_state[JUMP] = step_no
    where.selectbox("Step", range(1, N + 1), key=JUMP, on_change=jump, label_visibility="collapsed",
                    format_func=lambda n: f"{n} / {N} · {lecture.STEPS[n - 1].title}")
    where.progress(step_no / N)
    nxt.button("▶", key="lecture_next", on_click=move, args=(1,), disabled=step_no >= N,
               width="stretch",
               help="Next step (→, PageDown or Space)")
    return mode.toggle("Projector", key=PROJECTOR, help="Large text and figures for a lecture "
                                                        "hall; kept in the link")


def page_link(step: lecture.Step, sel: Selection) -> None:
    page = next((p for p in PAGES if p.url_path == step.page), None)
    if page is None:
        st.caption("This idea has no page of its own in the app yet: the figure is drawn from the "
                   "formulas.")
        return
    st.page_link(page.file, label=f"Full page: {page.title}", icon="↗",
                 help="Opens it with this sentence, layer and head",
                 query_params={"ckpt": sel.checkpoint, "s": sel.sentence, "layer": str(sel.layer),
                               "head": str(sel.head)})


def presets(sel: Selection, run) -> None:
    """The lecture's own example sentences, in the direction they need; an honest line when one is
    shown."""
    names = {}  # source language -> the model a preset in it switches to: the reader's own, of
    # the same size for the other direction, else the sidebar's first
    reverse = about.reverse_checkpoint(sel.checkpoint)
    for name in [sel.checkpoint, *([reverse] if reverse else []), *about.checkpoints_in_order()]:
        try:
            names.setdefault(about.checkpoint_info(name)[1].get("src_lang"), name)
        except CheckpointError:
            continue
    usable = [p for p in lecture.PRESETS if p.src_lang in names]
    st.selectbox("The lecture's examples", [None] + usable, key=PRESET, on_change=use_preset,
                 args=(names,),
                 format_func=lambda p: "— pick one —" if p is None else f"{p.label}: {p.sentence}")
    preset = lecture.preset_for(run.source_text)
    if preset is not None and preset.src_lang == sel.src_lang:
        ckpt = loaders.get_checkpoint(sel.checkpoint)  # its metadata names its known errors
        st.info(lecture.preset_verdict(preset, run, ckpt.tokenizer.convert_ids_to_tokens,
                                       ckpt.metadata))


def speaker_notes(step: lecture.Step) -> None:
    with st.expander("Speaker notes", expanded=False):
        st.markdown(f"**Say:** {step.notes.say}\n\n**Ask the class:** {step.notes.ask}")
        if step.notes.careful:
            st.markdown(f"**Careful:** {step.notes.careful}")


def show_step(page: PageContext, step: lecture.Step, run, projector: bool) -> None:
    sel = page.selection
    if step.slow and not on_request.wanted(sel, run.config, f"lecture_{step.id}",
                                           f"Show “{step.title}”", step.slow):
        return  # a large model's slow step waits for the button
    ctx = lecture.step_context(step, loaders.get_checkpoint(sel.checkpoint), run, sel.layer,
                               sel.head,
                               st.session_state.get("lecture_what_if_position", 0) + 1,
                               lambda: loaders.get_run(sel.checkpoint, sel.sentence,
                                                       lecture.BEAM_K))
    spec = step.figure(ctx)
    fig = widgets.cached_figure(lecture.drawer(spec.plot, projector), *spec.args, **spec.kwargs)
    if projector and fig.min_width:
        st.html(FIGURE_WIDTH_CSS % fig.min_width)
    with st.container(key="lecture_columns"):
        words, picture = st.columns([2, 3] if projector else [1, 1])  # formulas fit the text column
    with words:
        st.subheader(step.title, anchor=False)
        with st.container(key="lecture_text"):
            st.markdown(widgets.escape_markdown(step.text(ctx)))
        st.latex(step.formula)
        page_link(step, sel)
    with picture:
        with st.container(key="lecture_figure"):
            widgets.chart(fig, spec.data, f"lecture-{step.id}")
    if step.id == "inference":
        st.subheader("What if the model had chosen another word?", anchor=False)
        sections.what_if(page, run, "lecture_what_if")


state = st.session_state
page = frame.page_context(__file__)
sel = frame.selection(page)
if STEP not in state:  # the session's first look at the lecture: the link's step and mode
    state[STEP] = lecture.step_number(page.link_step())
    state[PROJECTOR] = st.query_params.get("projector") == "1"
step_no = min(max(int(state[STEP]), 1), N)
projector = navigation_row(step_no)
st.html(KEYS_JS, unsafe_allow_javascript=True)
if projector:
    st.set_page_config(initial_sidebar_state="collapsed")
    st.html(PROJECTOR_CSS)
url.write(projector="1" if projector else None)
steps.write_open_step(page, step_no)
run = frame.require_run(page)
show_step(page, lecture.STEPS[step_no - 1], run, projector)
presets(sel, run)
speaker_notes(lecture.STEPS[step_no - 1])
download_button(sel, loaders.get_checkpoint(sel.checkpoint), run)
