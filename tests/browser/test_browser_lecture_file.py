"""The lecture as one HTML file (views/lecture/export.py) in headless Chromium with every request
that is not the file itself aborted: a clicker's keys walk every step, each step's figure is drawn,
the hash names the step, and the console stays free of errors. The browser is
tests/browser/test_browser.py's (skipped likewise when Chromium or playwright is missing)."""

from __future__ import annotations

import pytest

from tests.browser.test_browser import browser, pytestmark  # noqa: F401
from tests.support.apptest import SENTENCE
from transformer_viz.views.lecture import STEPS
from transformer_viz.views.lecture.export import MAX_BYTES, lecture_html

WAIT_MS = 20_000
N = len(STEPS)
# The shown step's figure has drawn its svg (plotly.js adds the class and the svg when it draws).
SHOWN_AND_DRAWN_JS = """(n) => {
  const s = document.getElementById('step-' + n);
  return location.hash === '#' + n && s !== null && !s.hidden
    && s.querySelector('.figure.js-plotly-plot svg.main-svg') !== null; }"""
DRAWN_JS = """() => Array.from(document.querySelectorAll('.figure.js-plotly-plot'))
  .filter((f) => f.querySelector('svg.main-svg') !== null).length"""


@pytest.fixture(scope="module")
def lecture_file(tmp_path_factory, tiny_checkpoint):
    path = tmp_path_factory.mktemp("lecture") / "lecture.html"
    path.write_text(lecture_html(tiny_checkpoint, SENTENCE, notes=True), encoding="utf-8")
    return path


def test_the_lecture_file_walks_offline_with_a_clickers_keys(browser, lecture_file):  # noqa: F811
    assert lecture_file.stat().st_size < MAX_BYTES
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    aborted, errors = [], []

    def only_the_file(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_file)
    pg = context.new_page()
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    try:
        pg.goto(lecture_file.as_uri())
        pg.wait_for_function("() => location.hash === '#0'", timeout=WAIT_MS)
        assert SENTENCE in pg.locator("#step-0").inner_text()
        assert pg.evaluate(DRAWN_JS) == 0  # a figure is drawn when its step is first shown
        for n in range(1, N + 1):
            pg.keyboard.press("ArrowRight" if n % 2 else "PageDown")
            pg.wait_for_function(SHOWN_AND_DRAWN_JS, arg=n, timeout=WAIT_MS)
            assert pg.locator(f"#step-{n} h2").inner_text().endswith(STEPS[n - 1].title)
            assert pg.locator(f"#step-{n} math").count() == 1, f"step {n}: its formula as MathML"
        assert pg.evaluate(DRAWN_JS) == N  # as many figures drawn as the lecture has steps
        pg.keyboard.press("ArrowRight")  # past the last step: it stays there
        pg.keyboard.press("PageUp")
        pg.wait_for_function("(n) => location.hash === '#' + n", arg=N - 1, timeout=WAIT_MS)
        pg.keyboard.press("ArrowLeft")
        pg.wait_for_function("(n) => location.hash === '#' + n", arg=N - 2, timeout=WAIT_MS)
        pg.keyboard.press(" ")
        pg.wait_for_function("(n) => location.hash === '#' + n", arg=N - 1, timeout=WAIT_MS)
        visible = pg.evaluate("() => Array.from(document.querySelectorAll('main > section'))"
                              ".filter((s) => !s.hidden).map((s) => s.id)")
        assert visible == [f"step-{N - 1}"]
    finally:
        context.close()
    assert not aborted, aborted
    assert not errors, errors


def test_a_link_to_a_step_opens_that_step(browser, lecture_file):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    pg = context.new_page()
    try:
        pg.goto(lecture_file.as_uri() + "#5")
        pg.wait_for_function(SHOWN_AND_DRAWN_JS, arg=5, timeout=WAIT_MS)
        pg.goto(lecture_file.as_uri() + "#999")  # past the end: the last step
        pg.wait_for_function(SHOWN_AND_DRAWN_JS, arg=N, timeout=WAIT_MS)
    finally:
        context.close()
