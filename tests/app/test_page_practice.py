"""The Practice page through AppTest: every exercise opened by its address (?ex=N) and answered
right, the progress in the URL (done=…) and the summary growing with each; a wrong answer, which
marks nothing; the three hints one at a time, the last with its figure; a tutor's link reopening the
progress; the sidebar's parameters left as they were."""

from __future__ import annotations

import pytest

from tests.support.apptest import SENTENCE, charts, open_page, rerun
from transformer_viz.engine import run_sentence
from transformer_viz.views import practice as P

PAGE = "transformer_viz/app/pages/practice.py"
N = len(P.EXERCISES)


@pytest.fixture(scope="module")
def answers(tiny_checkpoint) -> list[P.Posed]:
    """Every exercise posed on the sentence the app opens with, in layer 0 and head 0."""
    context = P.Context(run_sentence(tiny_checkpoint, SENTENCE), tiny_checkpoint, 0, 0)
    return [e.pose(context) for e in P.EXERCISES]


def texts(at) -> list[str]:
    return [m.value for m in at.markdown]


def answer(at, number: int, typed: str):
    at.text_input(key=f"practice_answer_{number}").input(typed)
    at.button(key=f"practice_check_{number}").click()
    return rerun(at)


def test_every_exercise_by_its_address_answered_right(make_app, answers):
    at = open_page(make_app(), PAGE)
    assert at.title[0].value == "Practice"
    assert at.subheader[0].value.startswith(f"Exercise 1 of {N}:")
    assert at.query_params["ex"] == "1" and "done" not in at.query_params
    assert f"0 of {N} answered correctly yet." in texts(at) and at.dataframe
    for number in range(1, N + 1):
        at.query_params["ex"] = str(number)
        rerun(at)
        assert at.subheader[0].value == f"Exercise {number} of {N}: {P.EXERCISES[number - 1].title}"
        answer(at, number, answers[number - 1].answer.shown)
        assert not at.error and at.success[0].value.startswith("Right:"), number
        assert at.query_params["done"] == ",".join(map(str, range(1, number + 1)))
        assert P.summary(range(1, number + 1), N) in texts(at)
    assert f"All {N} of {N} answered correctly." in texts(at)
    table = at.dataframe[0].value
    assert list(table["answered"]) == ["✓ right"] * N
    # the sidebar's parameters are untouched
    assert at.query_params["s"] == SENTENCE and at.query_params["ckpt"] == "tiny"


def test_a_wrong_answer_marks_nothing_and_the_hints_come_one_at_a_time(make_app, answers):
    at = make_app()
    at.query_params["ex"] = "6"
    at = open_page(at, PAGE)
    assert at.subheader[0].value.startswith(f"Exercise 6 of {N}:")
    answer(at, 6, "certainly not a token")
    assert at.error[0].value.startswith("Not quite") and not at.success
    assert "done" not in at.query_params
    for k in (1, 2):
        at.button(key="practice_hint_6").click()
        rerun(at)
        assert any(t.startswith(f"**Hint {k}.**") for t in texts(at))
        assert not charts(at)
    at.button(key="practice_hint_6").click()
    rerun(at)
    assert any(t.startswith("**Hint 3, the answer.**") for t in texts(at))
    assert list(charts(at)) == ["practice-self_attention"]  # the answer on the attention heatmap
    alts = [h.proto.body for h in at.get("html") if 'class="chart-alt"' in h.proto.body]
    assert len(alts) == 1 and "Answer" in alts[0]
    assert not [b for b in at.button if b.key == "practice_hint_6"]  # no fourth hint
    answer(at, 6, answers[5].answer.shown)
    assert at.query_params["done"] == "6"


def test_a_tutors_link_reopens_the_progress_and_the_buttons_move_on(make_app):
    at = make_app()
    at.query_params.update({"ex": "3", "done": "1,3,99,x"})
    at = open_page(at, PAGE)
    assert at.subheader[0].value.startswith(f"Exercise 3 of {N}:")
    assert "2 of 14 answered correctly: 1, 3." in texts(at)
    assert at.query_params["done"] == "1,3"  # what the page could not read is left out
    assert any("Answered correctly already" in i.value for i in at.info)
    at.button(key="practice_next").click()
    rerun(at)
    assert at.query_params["ex"] == "4" and at.query_params["done"] == "1,3"
    at.selectbox(key="practice_jump").set_value(N)
    rerun(at)
    assert at.query_params["ex"] == str(N) and at.button(key="practice_next").disabled
    # the link to the page that explains it, with the glossary
    assert [p.proto.page for p in at.get("page_link")] and at.expander


def test_a_verdict_is_for_the_sentence_it_was_given_on(make_app, answers):
    at = make_app()
    at.query_params["ex"] = "1"
    at = open_page(at, PAGE)
    answer(at, 1, answers[0].answer.shown)
    assert at.success and at.query_params["done"] == "1"
    at.text_area(key="sentence").set_value("zwei kinder .")
    rerun(at)
    assert not at.success and not at.error  # a new sentence: its answer not given yet
    assert any("Answered correctly already" in i.value for i in at.info)  # the link keeps it
