"""Practice: exercises along the lecture's path, each a question about the reader's own sentence
answered from the live model's numbers and checked at once, with three staged hints, the page that
explains it and a short glossary. The exercises are data (transformer_viz/views/practice/); the
progress is in the URL (app/practice_view.py), so that a student can send the link to a tutor."""

import streamlit as st

from transformer_viz.app import frame, on_request, practice_view, widgets
from transformer_viz.views import practice as P

ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    f"{practice_view.N} questions about **your own sentence**, in the lecture's order, answered "
    "from the numbers of the model that translates it: change the sentence in the sidebar and "
    "every answer changes with it. Each answer is checked at once; three hints wait if you are "
    "stuck, the last with the answer drawn on a figure. Your progress is in this page's address: "
    "**send the link to your tutor** to show what you did.")
number, done = practice_view.progress()
exercise = P.EXERCISES[number - 1]
practice_view.navigation_row(number)

# The progress beside the exercise, not under it: on a projector it stays on the first screen.
exercise_column, progress_column = st.columns([3, 2], gap="large")
answer_open = False
with exercise_column:
    st.subheader(f"Exercise {number} of {practice_view.N}: {exercise.title}", anchor=False)
    # a large model's slow exercise waits for the button
    if not exercise.slow or on_request.wanted(sel, run.config, f"practice_{exercise.id}",
                                              f"Pose exercise {number}", exercise.slow):
        question = practice_view.posed(sel.checkpoint, sel.sentence, sel.layer, sel.head, number)
        with st.container(key="practice_question"):
            st.markdown(widgets.escape_markdown(question.question))
        practice_view.answer_box(number, question.answer, done)
        answer_open = practice_view.hints(number, question)
    practice_view.explained_on(exercise, sel)
with progress_column:
    st.subheader("Your progress", anchor=False)
    with st.container(key="practice_summary"):
        st.markdown(P.summary(done, practice_view.N))  # a right answer's callback ran before this
    st.dataframe(practice_view.progress_table(done), hide_index=True)
if answer_open:
    practice_view.worked_answer(exercise, question)
