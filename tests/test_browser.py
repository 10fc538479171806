"""End to end in headless Chromium: the real app (streamlit run) on the tiny checkpoint, every page of the
navigation, the Masking lab's causal-mask toggle, and hostile sentences that must stay text.

Uses Debian's Chromium (/usr/bin/chromium) through playwright; skipped when it is missing. Never run
`playwright install` for this (it would download another browser).

SAVE_SCREENSHOTS=1 also writes docs/screenshots/<page>.png, from the trained checkpoints in checkpoints/
when checkpoints/de-en exists, else from the tiny test checkpoint.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

import pytest

from tests.support.browser import (CHROMIUM, CHROMIUM_ARGS, COUNT_RUNS_JS, ROOT, RUN_DONE_JS, app_pages, start_server,
                                   stop_server)

# Generous bounds: a busy 2-core machine (training in the background) can take tens of seconds per rerun.
WAIT_MS = int(float(os.environ.get("BROWSER_TEST_TIMEOUT_S", "120")) * 1000)
SERVER_START_S = 120

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

CHART_SVGS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]'))
  .map((c) => { const svg = c.querySelector('.js-plotly-plot svg.main-svg'); return svg ? svg.outerHTML : null; })"""
# What a chart shows, without plotly's per-render random ids: its text, raster images (heatmaps) and paths.
CHART_CONTENT_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
  .map((p) => [p.textContent,
               ...Array.from(p.querySelectorAll('image')).map((i) => i.getAttribute('href')),
               ...Array.from(p.querySelectorAll('path')).map((d) => d.getAttribute('d'))].join('|'))"""

FIRST_SENTENCE = "zwei kinder sitzen am strand ."
INJECTIONS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]


def use_real_checkpoints() -> bool:
    """Only the docs screenshots use the trained models (when they exist); the test itself uses the tiny one."""
    return os.environ.get("SAVE_SCREENSHOTS") == "1" and (ROOT / "checkpoints" / "de-en" / "config.json").is_file()


def screenshot_checkpoint_root(checkpoint_dir: Path) -> Path:
    return ROOT / "checkpoints" if use_real_checkpoints() else checkpoint_dir.parent


@pytest.fixture(scope="module")
def app_url(checkpoint_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    try:
        proc, url, _ = start_server(screenshot_checkpoint_root(checkpoint_dir), log_path=log, timeout_s=SERVER_START_S)
    except RuntimeError as exc:
        pytest.fail(f"{exc}:\n{log.read_text()[-3000:]}")
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_RUNS_JS)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    pg.dialogs = []  # every alert/confirm/prompt the page tries to open

    def on_dialog(dialog):
        pg.dialogs.append(dialog.message)
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    # A short first sentence (the default example is long in the tiny vocabulary, and slow to draw).
    pg.goto(f"{app_url}/?s=" + urllib.parse.quote(FIRST_SENTENCE))
    wait_for_run(pg, 0, sentence=FIRST_SENTENCE)
    yield pg
    context.close()


def runs_seen(pg) -> int:
    return pg.evaluate("window.__stRuns")


def wait_for_run(pg, after: int, **expect: str) -> None:
    pg.wait_for_function(RUN_DONE_JS, arg={"after": after, **expect}, polling=100, timeout=WAIT_MS)


def act_and_wait(pg, action, **expect: str) -> None:
    """Do the action, then wait for its run; `expect` (sentence=, title=): what the page shows after it."""
    before = runs_seen(pg)
    action()
    wait_for_run(pg, before, **expect)


def commit_sentence(pg, text: str) -> None:
    area = pg.get_by_label(re.compile(r"^Sentence"))
    area.fill(text)
    act_and_wait(pg, lambda: area.press("Control+Enter"), sentence=text)
    assert area.input_value() == text
    area.evaluate("(e) => e.blur()")  # the focus ring would show in every screenshot


def open_page(pg, title: str) -> None:
    link = pg.locator('[data-testid="stSidebarNav"] a', has_text=re.compile(rf"^\s*{re.escape(title)}\s*$"))
    assert link.count() == 1, f"no navigation link titled {title!r}"
    if link.get_attribute("aria-current") != "page":  # the first page is already open
        act_and_wait(pg, link.click, title=title)
    assert link.get_attribute("aria-current") == "page", f"{title!r} did not open"


def assert_page_healthy(pg, title: str) -> int:
    """No exception or error box on the page; every plotly chart drew an svg with content. Returns the chart count."""
    exceptions = pg.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{title}: {exceptions.all_inner_texts()}"
    errors = pg.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, f"{title}: {errors.all_inner_texts()}"
    svgs = pg.evaluate(CHART_SVGS_JS)
    assert all(svgs), f"{title}: a plotly chart has no svg"
    for svg in svgs:  # a drawn plot has traces, or at least shapes/annotations (the architecture diagram)
        assert re.search(r'class="(trace|shape|annotation)', svg), f"{title}: an empty plotly chart"
    return len(svgs)


def save_screenshot(pg, path: Path, whole_page: bool = False) -> None:
    """The viewport, or the whole page: Streamlit scrolls inside its main container, so for that the
    viewport grows to the content (slower: every chart redraws)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not whole_page:
        pg.screenshot(path=str(path))
        return
    height = pg.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
                                    return Math.max(m ? m.scrollHeight : 0, 1000); }""")
    pg.set_viewport_size({"width": 1400, "height": min(int(height), 4000)})
    pg.wait_for_timeout(500)  # plotly redraws on resize
    pg.screenshot(path=str(path))
    pg.set_viewport_size({"width": 1400, "height": 1000})


def toggle_causal_mask(pg) -> None:
    """On the Masking lab: switching the causal mask off must redraw charts with different content."""
    control = pg.locator('[data-testid="stCheckbox"]', has_text=re.compile("causal", re.I))
    assert control.count() >= 1, "the Masking lab has no checkbox/toggle labelled '…causal…'"
    before = pg.evaluate(CHART_CONTENT_JS)
    act_and_wait(pg, lambda: control.first.locator("label").first.click())
    assert assert_page_healthy(pg, "Masking lab (causal mask toggled)") > 0, "no chart after toggling the causal mask"
    after = pg.evaluate(CHART_CONTENT_JS)
    assert len(after) == len(before)
    assert sum(a != b for a, b in zip(before, after)) >= 1, "toggling the causal mask changed no chart"
    act_and_wait(pg, lambda: control.first.locator("label").first.click())  # back to the trained setting
    assert_page_healthy(pg, "Masking lab")


def open_step(pg, label_start: str) -> None:
    """Click a page's step (a tab of webapp.steps): only the open step runs, so its charts arrive with the
    rerun the click starts. Waits for a chart in the open step, then for the run to end."""
    tab = pg.get_by_role("tab", name=re.compile("^" + re.escape(label_start)))
    assert tab.count() == 1, f"no step {label_start!r}"
    tab.click()
    assert tab.get_attribute("aria-selected") == "true"
    pg.locator('[role="tabpanel"]:not([hidden]) [data-testid="stPlotlyChart"] svg.main-svg').first.wait_for(
        timeout=WAIT_MS)
    wait_for_run(pg, 0)


def type_a_longer_sentence_on_the_masking_lab(pg) -> None:
    """The batch-row choice names token counts; a new sentence changes them. The browser then sends back
    a label that is no longer an option, and the page must not fail on it (20 sessions at once found that)."""
    open_step(pg, "2 · The padding mask")
    assert_page_healthy(pg, "Masking lab, step 2")
    assert pg.get_by_role("combobox", name="Batch row").count() == 1, "the Masking lab has no 'Batch row' choice"
    sentence = pg.get_by_label(re.compile(r"^Sentence")).input_value()
    commit_sentence(pg, "Ein Mann und eine Frau gehen mit zwei kleinen Hunden durch den großen Park am See."
                    if use_real_checkpoints() else "ein mann spielt mit einem hund und einer katze im park .")
    assert_page_healthy(pg, "Masking lab (after a longer sentence)")
    commit_sentence(pg, sentence)  # the pages after this one show the same sentence as those before


def test_every_page_renders_without_errors(page, tmp_path):
    pages = app_pages()
    assert len(pages) >= 2
    commit_sentence(page, "Zwei Hunde spielen im Schnee." if use_real_checkpoints() else "ein mann spielt im park .")
    save_docs = os.environ.get("SAVE_SCREENSHOTS") == "1"
    charts = {}
    for info in pages:
        title, url_path = info["title"], info["url_path"]
        open_page(page, title)
        charts[title] = assert_page_healthy(page, title)
        shot = tmp_path / f"{url_path}.png"
        save_screenshot(page, shot)
        assert shot.stat().st_size > 10_000
        if save_docs:
            save_screenshot(page, ROOT / "docs" / "screenshots" / f"{url_path}.png", whole_page=True)
        if "mask" in title.lower():
            toggle_causal_mask(page)
            type_a_longer_sentence_on_the_masking_lab(page)
    assert page.dialogs == []
    assert sum(charts.values()) > 0, f"no page drew a plotly chart: {charts}"


def info_default(pages: list[dict], title: str) -> bool:
    return any(p["default"] and p["title"] == title for p in pages)


def test_script_injection_stays_text(page):
    hostile = " ".join(INJECTIONS)
    commit_sentence(page, hostile)
    pages = app_pages()
    for title in [info["title"] for info in pages]:
        open_page(page, title)
        assert_page_healthy(page, title)
        # Nothing from the sentence became markup: no <img src=x> and no script with alert in the DOM.
        assert page.locator('img[src="x"]').count() == 0, title
        assert page.evaluate("() => Array.from(document.scripts).some((s) => s.text.includes('alert(1)'))") is False
        if info_default(pages, title):  # the Overview shows the sentence itself (the Lecture opens on the RNN)
            main_text = page.locator('[data-testid="stMain"]').inner_text()
            for s in INJECTIONS:
                assert s in main_text, f"{s!r} is not shown literally on {title}"
    assert page.dialogs == [], f"a dialog opened: {page.dialogs}"
