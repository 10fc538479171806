"""The Lecture end to end in headless Chromium: a presentation clicker's keys walk every step in
projector mode on a 1280×720 screen, and two steps on a 1920×1080 one. The server, the browser and
the helpers are those of tests/test_browser.py (skipped likewise when Chromium or playwright is
missing)."""

from __future__ import annotations

import urllib.parse

from tests.browser.test_browser import (  # noqa: F401
    FIRST_SENTENCE,
    WAIT_MS,
    app_url,
    assert_page_healthy,
    browser,
    pytestmark,
    use_real_checkpoints,
    wait_for_run,
)
from tests.support.browser import COUNT_RUNS_JS, ROOT

FIGURE_BOX_JS = """() => {
  const c = document.querySelector('.st-key-lecture_figure [data-testid="stPlotlyChart"]');
  const svg = c && c.querySelector('svg.main-svg'); if (!svg) return null;
  const r = c.getBoundingClientRect(); return {x: r.x, y: r.y, right: r.right, bottom: r.bottom};
}"""
TEXT_FONT_JS = """() => { const p = document.querySelector('.st-key-lecture_text p');
  return p ? parseFloat(getComputedStyle(p).fontSize) : 0; }"""


def wait_for_lecture_step(pg, n: int, title: str, sentence: str) -> None:
    """The URL names step n, its title is drawn, the run is over and its chart has its svg."""
    pg.wait_for_function("""([n, title]) => {
      const h = document.querySelector('[data-testid="stMain"] h3');
      return new URLSearchParams(location.search).get('step') === String(n) && h !== null
        && h.textContent.trim() === title; }""", arg=[n, title], polling=100, timeout=WAIT_MS)
    wait_for_run(pg, 0, sentence=sentence)


def assert_figure_on_screen(pg, width: int, height: int, where: str) -> None:
    box = pg.evaluate(FIGURE_BOX_JS)
    assert box is not None, f"{where}: no main figure"
    assert (box["x"] >= 0 and box["y"] >= 0 and box["right"] <= width
            and box["bottom"] <= height), (where, box)


def test_the_lecture_walks_with_the_keyboard_in_projector_mode_at_1280x720(browser, app_url):
    """A clicker's keys through every step, projector mode, on a 1280×720 screen: the URL names each
    step, the main figure lies fully inside the screen, the text is at least 24 px, the sidebar is
    collapsed. Screenshots go to screenshots-tmp/lecture/ (git-ignored); SAVE_SCREENSHOTS=1 runs it
    on the trained en→de model with the lecture's "they" sentence."""
    from transformer_viz.views.lecture import STEPS

    real = use_real_checkpoints()
    sentence = ("The kids were scared of the lions, so they left right away." if real
                else FIRST_SENTENCE)
    query = {"projector": "1", "step": "1", "s": sentence, "layer": "1",
             "head": "3" if real else "2"}
    if real:
        query["ckpt"] = "en-de"
    shots = ROOT / "screenshots-tmp" / "lecture"
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(COUNT_RUNS_JS)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        pg.goto(f"{app_url}/lecture?" + urllib.parse.urlencode(query))
        for n, step in enumerate(STEPS, start=1):
            wait_for_lecture_step(pg, n, step.title, sentence)
            assert_page_healthy(pg, f"Lecture step {n}")
            assert "projector=1" in pg.url
            assert_figure_on_screen(pg, 1280, 720, f"step {n} ({step.id})")
            assert pg.evaluate(TEXT_FONT_JS) >= 24, f"step {n}: text under 24 px"
            assert pg.locator('[data-testid="stSidebar"]').get_attribute("data-collapsed") == "true"
            pg.screenshot(path=str(shots / f"step-{n:02d}-{step.id}.png"))
            if n < len(STEPS):
                pg.keyboard.press("ArrowRight")
        pg.keyboard.press("ArrowRight")  # past the last step: nothing happens
        pg.keyboard.press("PageUp")  # a clicker's "back"
        wait_for_lecture_step(pg, len(STEPS) - 1, STEPS[-2].title, sentence)
        pg.keyboard.press(" ")  # and its "next"
        wait_for_lecture_step(pg, len(STEPS), STEPS[-1].title, sentence)
        # after a jump through the step list, the clicker still works (the closed list does not keep
        # its keys)
        jump = pg.locator('.st-key-lecture_jump input')
        jump.click()
        pg.get_by_role("option", name=f"3 / {len(STEPS)} · {STEPS[2].title}", exact=True).click()
        wait_for_lecture_step(pg, 3, STEPS[2].title, sentence)
        pg.keyboard.press("ArrowRight")
        wait_for_lecture_step(pg, 4, STEPS[3].title, sentence)
        pg.set_viewport_size({"width": 1920, "height": 1080})
        cross = next(n for n, step in enumerate(STEPS, start=1) if step.id == "cross")
        for n in (cross, 2):  # cross-attention, and the soft lookup, on a 1920×1080 screen
            pg.goto(f"{app_url}/lecture?" + urllib.parse.urlencode({**query, "step": str(n)}))
            wait_for_lecture_step(pg, n, STEPS[n - 1].title, sentence)
            assert_figure_on_screen(pg, 1920, 1080, f"step {n} at 1920×1080")
    finally:
        context.close()


def test_the_lecture_downloads_as_one_html_file(browser, app_url, tmp_path):
    """The page's download button hands over the lecture's HTML file (made when clicked, in the
    download's own thread) for the page's sentence."""
    from transformer_viz.views.lecture import STEPS

    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(COUNT_RUNS_JS)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        pg.goto(f"{app_url}/lecture?" + urllib.parse.urlencode({"step": "1", "s": FIRST_SENTENCE}))
        wait_for_lecture_step(pg, 1, STEPS[0].title, FIRST_SENTENCE)
        with pg.expect_download(timeout=WAIT_MS) as download:
            pg.get_by_role("button", name="Download this lecture as one HTML file").click()
        path = tmp_path / "lecture.html"
        download.value.save_as(path)
    finally:
        context.close()
    text = path.read_text(encoding="utf-8")
    assert download.value.suggested_filename == "lecture.html"
    assert text.startswith("<!DOCTYPE html>") and FIRST_SENTENCE in text
    assert text.count('<section id="step-') == len(STEPS) + 1 and "Speaker notes" in text
