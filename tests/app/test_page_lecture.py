"""The Lecture page through AppTest: every step renders with its main figure, Next/Previous move by
one and stop at the ends, ?step=N opens step N (a bad step opens step 1), the projector mode and the
forced prefix travel in the link, the presets, the speaker notes and the link to each step's full
page."""

from __future__ import annotations

import json

import pytest

from tests.support.apptest import SENTENCE, charts, rerun
from transformer_viz.views import lecture
from transformer_viz.app.navigation import PAGES
from transformer_viz.app.sections import format_forced, parse_forced
from transformer_viz.engine import run_sentence

PAGE = "transformer_viz/app/pages/lecture.py"
N = len(lecture.STEPS)


def open_lecture(make_app, **params):
    """A new session opened from a link straight onto the Lecture, with these URL parameters."""
    at = make_app()
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(PAGE)
    return rerun(at)


def shown_step(at) -> int:
    return at.session_state["lecture_step"]


def main_figure(at, step: lecture.Step) -> dict:
    found = charts(at)
    assert f"lecture-{step.id}" in found, (step.id, sorted(found))
    return json.loads(found[f"lecture-{step.id}"])


def test_every_step_renders_its_main_figure_and_next_stops_at_the_end(make_app):
    at = open_lecture(make_app)
    assert [t.value for t in at.title] == ["Lecture"] and shown_step(at) == 1
    assert at.button(key="lecture_prev").disabled
    for n, step in enumerate(lecture.STEPS, start=1):
        assert shown_step(at) == n and at.query_params["step"] == str(n)
        assert main_figure(at, step)["data"], step.id
        assert at.subheader[0].value == step.title
        assert step.formula in at.latex[0].value
        assert abs(at.progress[0].value - 100 * n / N) <= 1  # in percent
        if n < N:
            at.button(key="lecture_next").click()
            rerun(at)
    # it stops at the last step
    assert shown_step(at) == N and at.button(key="lecture_next").disabled
    at.button(key="lecture_prev").click()
    assert shown_step(rerun(at)) == N - 1


def test_previous_moves_back_by_one_and_stops_at_the_first_step(make_app):
    at = open_lecture(make_app, step="3")
    assert shown_step(at) == 3
    for expected in (2, 1):
        at.button(key="lecture_prev").click()
        assert shown_step(rerun(at)) == expected
    assert at.button(key="lecture_prev").disabled  # it stops at the first step
    assert at.query_params["step"] == "1"
    at.selectbox(key="lecture_jump").set_value(12)  # the jump to any step
    assert shown_step(rerun(at)) == 12 and at.query_params["step"] == "12"


@pytest.mark.parametrize("raw", ["0", str(N + 1), "abc", "-1", "2.5", ""])
def test_a_bad_step_in_the_link_opens_step_1_without_an_error(make_app, raw):
    at = open_lecture(make_app, step=raw)
    assert shown_step(at) == 1 and at.query_params["step"] == "1"
    assert not at.error


def test_a_link_opens_its_step_with_the_sentence_layer_head_and_projector_mode(make_app):
    cross = next(n for n, s in enumerate(lecture.STEPS, start=1) if s.id == "cross")
    at = open_lecture(make_app, step=str(cross), layer="1", head="2", projector="1")
    assert shown_step(at) == cross and at.toggle(key="lecture_projector").value
    figure = main_figure(at, lecture.STEPS[cross - 1])
    assert "layer 1, head 2" in figure["layout"]["title"]["text"]
    assert figure["layout"]["height"] == lecture.PROJECTOR_HEIGHT
    assert figure["layout"]["xaxis"]["tickfont"]["size"] >= 18
    assert at.query_params["projector"] == "1"
    at.toggle(key="lecture_projector").set_value(False)
    assert "projector" not in rerun(at).query_params
    assert "height" not in main_figure(at, lecture.STEPS[cross - 1])["layout"] or \
        main_figure(at, lecture.STEPS[cross - 1])["layout"]["height"] != lecture.PROJECTOR_HEIGHT


def test_each_step_links_to_its_page_with_the_same_sentence_layer_and_head_or_says_it_has_none(
        make_app):
    pages = {p.url_path: p for p in PAGES}
    at = open_lecture(make_app, layer="1", head="3")
    for n, step in enumerate(lecture.STEPS, start=1):
        at.session_state["lecture_step"] = n
        rerun(at)
        links = at.get("page_link")
        if step.page in pages:
            assert len(links) == 1 and pages[step.page].title in links[0].proto.label
            assert ("layer=1" in links[0].proto.query_string
                    and "head=3" in links[0].proto.query_string)
        else:
            assert not links and any("no page of its own" in c.value for c in at.caption), step.id


def test_speaker_notes_are_collapsed_and_state_the_misconceptions(make_app):
    cross = next(n for n, s in enumerate(lecture.STEPS, start=1) if s.id == "cross")
    at = open_lecture(make_app, step=str(cross))
    notes = next(e for e in at.expander if e.label == "Speaker notes")
    assert not notes.proto.expanded
    text = " ".join(m.value for m in notes.markdown)
    assert ("Q comes from the decoder, K and V from the encoder" in text
            and "(B, h, T_target, S_source)" in text)


def test_the_inference_step_forces_a_candidate_and_the_link_keeps_it(make_app, tiny_checkpoint):
    inference = next(n for n, s in enumerate(lecture.STEPS, start=1) if s.id == "inference")
    at = open_lecture(make_app, step=str(inference))
    run = run_sentence(tiny_checkpoint, SENTENCE)
    assert "force" not in at.query_params
    at.selectbox(key="lecture_what_if_position").set_value(1)  # position 2
    at.selectbox(key="lecture_what_if_candidate").set_value(1)  # its runner-up
    rerun(at)
    at.button(key="lecture_what_if_force").click()
    rerun(at)
    forced = tuple(run.tgt_ids[1:2]) + (run.decoding.steps[1].top_ids[0][1],)
    assert at.query_params["force"] == format_forced(forced)
    expected = run_sentence(tiny_checkpoint, SENTENCE, forced_prefix=list(forced),
                            trace=False).translation
    assert expected in [t.value for t in at.text]
    bars = json.loads(charts(at)["lecture_what_if-forced"])["data"]
    assert [b["name"] for b in bars] == ["original", "forced"]
    # a new session from the link shows the same forced translation
    other = open_lecture(make_app, step=str(inference), force=at.query_params["force"])
    assert expected in [t.value for t in other.text]
    other.button(key="lecture_what_if_clear").click()
    assert "force" not in rerun(other).query_params


def test_a_forced_prefix_in_a_link_is_checked():
    assert parse_forced("412-87", 500) == (412, 87) and format_forced((412, 87)) == "412-87"
    for bad in (None, "", "412-", "a-1", "1-600", "0-5", "-".join(["5"] * 65), "٣"):
        assert parse_forced(bad, 500) == (), bad
    assert parse_forced("2", 500) == (2,)  # </s> may be forced: it is among the candidates


def test_a_preset_sets_the_sentence_and_direction_and_the_verdict_is_shown(make_app):
    at = open_lecture(make_app)
    options = at.selectbox(key="lecture_preset").options
    assert any("Komm her bitte." in o for o in options)
    # no en→de model in the test: not offered
    assert not any("Where there is a will" in o for o in options)
    preset = next(p for p in lecture.PRESETS if p.sentence == "Komm her bitte.")
    at.selectbox(key="lecture_preset").set_value(preset)
    rerun(at)
    assert at.query_params["s"] == "Komm her bitte."
    assert any("The slide translates it as “Please come here.”" in i.value for i in at.info)


def test_the_download_button_offers_the_lecture_as_one_html_file(make_app):
    at = open_lecture(make_app)
    buttons = [b for b in at.get("download_button") if "lecture_download" in b.proto.id]
    assert len(buttons) == 1
    assert buttons[0].proto.label == "Download this lecture as one HTML file"
    assert "no network" in buttons[0].proto.help


def test_the_downloaded_file_draws_every_steps_figure_as_the_page_does(make_app, tiny_checkpoint):
    """Step by step, the chart the page sends and the figure the file holds are the same JSON; the
    file is the command line's (export-lecture --notes) for this sentence, layer and head."""
    import re

    from transformer_viz.app.lecture.download import lecture_file
    from transformer_viz.views.lecture.export import lecture_html

    at = open_lecture(make_app, layer="1", head="2")
    run = run_sentence(tiny_checkpoint, SENTENCE)
    data = lecture_file("tiny", SENTENCE, 1, 2, tiny_checkpoint, run)
    assert data == lecture_html(tiny_checkpoint, SENTENCE, 1, 2, notes=True).encode("utf-8")
    specs = re.findall(r'<script type="application/json" class="spec">(.*?)</script>',
                       data.decode("utf-8"), re.S)
    assert len(specs) == N
    for n, step in enumerate(lecture.STEPS, start=1):
        at.session_state["lecture_step"] = n
        rerun(at)
        assert main_figure(at, step) == json.loads(specs[n - 1]), step.id
