"""views/lecture/export.py: the lecture as one HTML file. One section per step with the step's text,
its formula as MathML and the very figure the Lecture page sends (same JSON); the speaker notes only
when asked for; nothing outside the file named (no URL besides plotly.js's own strings); hostile
text stays text; under 10 MB on the tiny model."""

from __future__ import annotations

import html
import json
import re

import pytest

from tests.support.apptest import SENTENCE
from transformer_viz.engine import run_sentence
from transformer_viz.plots.payload import browser_figure
from transformer_viz.views.lecture import BEAM_K, STEPS, step_context
from transformer_viz.views.lecture import export

N = len(STEPS)


@pytest.fixture(scope="module")
def made(tiny_checkpoint):
    """The run, its step contexts (layer 1, head 1) and the file with the notes."""
    run, ctxs = export.contexts(tiny_checkpoint, SENTENCE, layer=1, head=1)
    return run, ctxs, export.lecture_html_of(tiny_checkpoint, run, ctxs, 1, 1, notes=True)


def sections(text: str) -> dict[int, str]:
    found = re.findall(r'<section id="step-(\d+)".*?</section>', text, flags=re.S)
    bodies = re.split(r'(?=<section id="step-)', text)[1:]
    assert len(found) == len(bodies)
    return {int(n): body for n, body in zip(found, bodies)}


def spec_of(section: str) -> dict:
    raw = re.search(r'<script type="application/json" class="spec">(.*?)</script>', section, re.S)
    return json.loads(raw.group(1))


def without_plotly(text: str) -> str:
    from plotly.offline import get_plotlyjs

    bundle = get_plotlyjs()
    assert text.count(bundle) == 1  # plotly.js once, inline
    return text.replace(bundle, "")


def test_one_section_per_step_after_the_title_page(made):
    run, _, text = made
    found = sections(text)
    assert sorted(found) == list(range(N + 1))
    assert html.escape(run.source_text) in found[0] and html.escape(run.translation) in found[0]
    for n, step in enumerate(STEPS, start=1):
        assert html.escape(step.title) in found[n], step.id


def test_each_figure_is_the_pages_figure_for_that_step(made, tiny_checkpoint):
    run, _, text = made
    found = sections(text)
    beam = run_sentence(tiny_checkpoint, SENTENCE, beam_size=BEAM_K, trace=False)
    for n, step in enumerate(STEPS, start=1):
        # what pages/lecture.py draws for this step: step_context, the builder, browser_figure
        ctx = step_context(step, tiny_checkpoint, run, 1, 1, beam=lambda: beam)
        page = browser_figure(step.figure(ctx).figure()).to_dict()
        expected = json.loads(json.dumps(page, default=lambda v: v.tolist()))
        assert spec_of(found[n]) == expected, step.id
        assert spec_of(found[n])["data"], step.id


def test_each_step_has_its_text_with_the_runs_numbers_and_its_formula_as_mathml(made):
    _, ctxs, text = made
    found = sections(text)
    for n, (step, ctx) in enumerate(zip(STEPS, ctxs), start=1):
        body = found[n]
        for part in re.split(r"\n\s*\n", step.text(ctx)):
            assert html.escape(part.strip()) in body, step.id
        math = re.findall(r"<math display=\"block\">.*?</math>", body, re.S)
        assert len(math) == 1, step.id
        # every command was converted: no LaTeX left in the MathML's text
        assert not re.search(r">[^<]*\\[^<]*<", math[0]), (step.id, math[0][:300])


def test_a_formula_the_converter_cannot_read_is_shown_as_its_source(monkeypatch):
    import latex2mathml.converter

    def refuse(latex, display="inline"):
        raise ValueError("unknown command")

    monkeypatch.setattr(latex2mathml.converter, "convert", refuse)
    shown = export.formula_html(r"a < \unknown")
    assert shown == r'<pre class="latex"><code>a &lt; \unknown</code></pre>'


def test_speaker_notes_only_when_asked_for(made, tiny_checkpoint):
    run, ctxs, text = made
    assert text.count('<details class="notes">') == N
    for step in STEPS:
        assert html.escape(step.notes.ask) in text
    plain = export.lecture_html_of(tiny_checkpoint, run, ctxs, 1, 1, notes=False)
    assert "Speaker notes" not in plain and STEPS[0].notes.ask not in plain


def test_the_file_names_nothing_outside_itself_and_stays_under_10_mb(made):
    text = made[2]
    assert len(text.encode("utf-8")) < export.MAX_BYTES
    own = without_plotly(text)
    assert "http://" not in own and "https://" not in own
    # every src or href is a step of the file or a data: URI
    for target in re.findall(r'\b(?:src|href)="([^"]*)"', own):
        assert re.fullmatch(r"#\d+|data:.*", target), target
    assert "default-src 'none'" in own  # the browser refuses any request the file might make


def test_hostile_text_stays_text(tiny_checkpoint):
    hostile = "ein mann </script><script>alert(1)</script> <img src=x onerror=alert(1)> ."
    text = export.lecture_html(tiny_checkpoint, hostile)
    own = without_plotly(text)
    assert "alert(1)</script>" not in own and "<img" not in own
    # plotly.js's (emptied) element, one figure per step, the chart configuration and the
    # navigation: no other script element
    assert own.count("<script") == 1 + N + 1 + 1
    assert len(sections(text)) == N + 1


def test_a_layer_or_head_the_model_lacks_is_refused(tiny_checkpoint):
    from transformer_viz.text.tokenizer import InputError

    with pytest.raises(InputError, match="layers 0 to"):
        export.lecture_html(tiny_checkpoint, SENTENCE, layer=tiny_checkpoint.config.N)
    with pytest.raises(InputError, match="heads 0 to"):
        export.lecture_html(tiny_checkpoint, SENTENCE, head=-1)
