"""End to end in headless Chromium: the real app (streamlit run) on the tiny checkpoint, every page
of the navigation, the Masking lab's causal-mask toggle, and hostile sentences that must stay text.

Uses Debian's Chromium (/usr/bin/chromium) through playwright; skipped when it is missing. Never run
`playwright install` for this (it would download another browser).

SAVE_SCREENSHOTS=1 also writes docs/screenshots/<page>.png, from the trained checkpoints in
checkpoints/ when checkpoints/de-en exists, else from the tiny test checkpoint.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

import pytest

from tests.support.browser import (CHART_CONTENT_JS, CHROMIUM, CHROMIUM_ARGS, COUNT_RUNS_JS, ROOT,
                                   RUN_DONE_JS, app_pages, serving)

# Generous bounds: a busy 2-core machine (training in the background) can take tens of seconds per
# rerun.
WAIT_MS = int(float(os.environ.get("BROWSER_TEST_TIMEOUT_S", "120")) * 1000)
SERVER_START_S = 120

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the playwright package is not installed")

CHART_SVGS_JS = """() => Array.from(
    document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]'))
  .map((c) => {
    const svg = c.querySelector('.js-plotly-plot svg.main-svg'); return svg ? svg.outerHTML : null;
  })"""
PROJECTOR = (1280, 720)
SCREENSHOTS = ROOT / "screenshots-tmp" / "projector"  # git-ignored; each run replaces its files
FIRST_SENTENCE = "zwei kinder sitzen am strand ."
INJECTIONS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]


def use_real_checkpoints() -> bool:
    """Only the docs screenshots use the trained models (when they exist); the test itself uses the
    tiny one."""
    return (os.environ.get("SAVE_SCREENSHOTS") == "1"
            and (ROOT / "checkpoints" / "de-en" / "config.json").is_file())


def screenshot_checkpoint_root(checkpoint_dir: Path) -> Path:
    return ROOT / "checkpoints" if use_real_checkpoints() else checkpoint_dir.parent


@pytest.fixture(scope="module")
def app_url(checkpoint_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with serving(screenshot_checkpoint_root(checkpoint_dir), log, SERVER_START_S) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def new_page(browser, app_url, width: int, height: int):
    """A fresh browser tab of that size on the app, its first run done; yields it, then closes
    it."""
    context = browser.new_context(viewport={"width": width, "height": height})
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


@pytest.fixture()
def page(browser, app_url):
    yield from new_page(browser, app_url, 1400, 1000)


@pytest.fixture()
def projector_page(browser, app_url):
    """The size of a lecture-hall projector: 1280 × 720."""
    yield from new_page(browser, app_url, *PROJECTOR)


def runs_seen(pg) -> int:
    return pg.evaluate("window.__stRuns")


def wait_for_run(pg, after: int, **expect) -> None:
    pg.wait_for_function(RUN_DONE_JS, arg={"after": after, **expect}, polling=100, timeout=WAIT_MS)


def act_and_wait(pg, action, **expect) -> None:
    """Do the action, then wait for its run; `expect` (sentence=, title=, step=, text=, charts=):
    what the page shows after it, for a run too quick to be seen starting."""
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
    link = pg.locator('[data-testid="stSidebarNav"] a',
                      has_text=re.compile(rf"^\s*{re.escape(title)}\s*$"))
    assert link.count() == 1, f"no navigation link titled {title!r}"
    if link.get_attribute("aria-current") != "page":  # the first page is already open
        act_and_wait(pg, link.click, title=title)
    assert link.get_attribute("aria-current") == "page", f"{title!r} did not open"


def assert_page_healthy(pg, title: str) -> int:
    """No exception or error box on the page; every plotly chart drew an svg with content. Returns
    the chart count."""
    exceptions = pg.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{title}: {exceptions.all_inner_texts()}"
    errors = pg.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, f"{title}: {errors.all_inner_texts()}"
    svgs = pg.evaluate(CHART_SVGS_JS)
    assert all(svgs), f"{title}: a plotly chart has no svg"
    # a drawn plot has traces, or at least shapes/annotations (the architecture diagram)
    for svg in svgs:
        assert re.search(r'class="(trace|shape|annotation)', svg), f"{title}: an empty plotly chart"
    return len(svgs)


def save_screenshot(pg, path: Path, whole_page: bool = False) -> None:
    """The viewport, or the whole page: Streamlit scrolls inside its main container, so for that the
    viewport grows to the content, 1400 px wide (slower: every chart redraws), and then goes back to
    its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not whole_page:
        pg.screenshot(path=str(path))
        return
    size = pg.viewport_size
    height = pg.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
                                    return Math.max(m ? m.scrollHeight : 0, 1000); }""")
    pg.set_viewport_size({"width": 1400, "height": min(int(height), 4000)})
    pg.wait_for_timeout(500)  # plotly redraws on resize
    pg.screenshot(path=str(path))
    pg.set_viewport_size(size)
    pg.wait_for_timeout(500)


def toggle_causal_mask(pg) -> None:
    """On the Masking lab: switching the causal mask off must redraw charts with different
    content."""
    control = pg.locator('[data-testid="stCheckbox"]', has_text=re.compile("causal", re.I))
    assert control.count() >= 1, "the Masking lab has no checkbox/toggle labelled '…causal…'"
    before = pg.evaluate(CHART_CONTENT_JS)
    act_and_wait(pg, lambda: control.first.locator("label").first.click(), charts=before)
    assert assert_page_healthy(pg, "Masking lab (causal mask toggled)") > 0, ("no chart after "
                                                                              "toggling the causal "
                                                                              "mask")
    after = pg.evaluate(CHART_CONTENT_JS)
    assert len(after) == len(before)
    assert sum(a != b for a, b in zip(before, after)) >= 1, ("toggling the causal mask changed no "
                                                             "chart")
    # back to the trained setting
    act_and_wait(pg, lambda: control.first.locator("label").first.click(), charts=after)
    assert pg.evaluate(CHART_CONTENT_JS) == before, "the trained setting did not come back"
    assert_page_healthy(pg, "Masking lab")


def open_step(pg, label_start: str) -> None:
    """Click a page's step (a tab of app.steps.tabs): only the open step runs, so its charts arrive
    with the rerun the click starts. Waits for a chart in the open step, then for the run to end."""
    tab = pg.get_by_role("tab", name=re.compile("^" + re.escape(label_start)))
    assert tab.count() == 1, f"no step {label_start!r}"
    tab.click()
    assert tab.get_attribute("aria-selected") == "true"
    pg.locator('[role="tabpanel"]:not([hidden]) '
               '[data-testid="stPlotlyChart"] svg.main-svg').first.wait_for(timeout=WAIT_MS)
    wait_for_run(pg, 0)


def type_a_longer_sentence_on_the_masking_lab(pg) -> None:
    """The batch-row choice names token counts; a new sentence changes them. The browser then sends
    back a label that is no longer an option, and the page must not fail on it (20 sessions at once
    found that)."""
    open_step(pg, "2 · The padding mask")
    assert_page_healthy(pg, "Masking lab, step 2")
    assert pg.get_by_role("combobox", name="Batch row").count() == 1, ("the Masking lab has no "
                                                                       "'Batch row' choice")
    sentence = pg.get_by_label(re.compile(r"^Sentence")).input_value()
    commit_sentence(pg,
                    "Ein Mann und eine Frau gehen mit zwei kleinen Hunden durch den großen Park am "
                    "See."
                    if use_real_checkpoints()
                    else "ein mann spielt mit einem hund und einer katze im park .")
    assert_page_healthy(pg, "Masking lab (after a longer sentence)")
    commit_sentence(pg, sentence)  # the pages after this one show the same sentence as those before


def test_every_page_opens_at_its_own_address_and_hostile_sentences_stay_text(page, app_url):
    """A link to a page's address (http://host/<url_path>, as the navigation declares it) opens that
    page and stays there, the default page's included: Streamlit serves the default page at the root
    URL, and without the router's second entry for it /overview opened the Overview under a "Page
    not found" dialog. The links carry a hostile sentence (?s=), as a shared link could: on no page
    does it become markup, and the Overview shows it literally; typed into the box, the same."""
    pages = app_pages()
    default = next(info for info in pages if info["default"])
    hostile = " ".join(INJECTIONS)
    for path, title in [("", default["title"])] + [(info["url_path"], info["title"])
                                                   for info in pages]:
        page.goto(f"{app_url}/{path}?s=" + urllib.parse.quote(hostile))
        wait_for_run(page, 0, title=title)
        assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == title, path
        assert page.get_by_text("Page not found").count() == 0, (f"/{path}: a 'Page not found' "
                                                                 "dialog")
        assert urllib.parse.urlparse(page.url).path == f"/{path}", (path, page.url)
        assert_page_healthy(page, title)
        assert_stays_text(page, title, literal=title == default["title"])
    open_page(page, default["title"])
    commit_sentence(page, FIRST_SENTENCE)
    commit_sentence(page, hostile)
    assert_stays_text(page, default["title"], literal=True)
    assert page.dialogs == [], f"a dialog opened: {page.dialogs}"


def assert_stays_text(pg, title: str, literal: bool) -> None:
    """Nothing from the sentence became markup: no <img src=x> and no script with alert in the DOM;
    with `literal`, the main area shows each hostile string as it was typed."""
    assert pg.locator('img[src="x"]').count() == 0, title
    assert pg.evaluate("() => Array.from(document.scripts).some((s) => "
                       "s.text.includes('alert(1)'))") is False, title
    if literal:
        main_text = pg.locator('[data-testid="stMain"]').inner_text()
        for s in INJECTIONS:
            assert s in main_text, f"{s!r} is not shown literally on {title}"


# Everything in the main area that is wider than the box it sits in, so that part of it is cut off
# or hidden behind a scroll bar: a formula (.katex) wider than its element, a tab bar whose last
# steps are hidden, or a table whose columns do not fit (st.dataframe scrolls inside its grid,
# st.table inside its wrapper). Each as "what: content px > box px".
OVERFLOW_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const visible = (e) => e.getClientRects().length > 0;  // not in a hidden tab
  const boxOf = (e) => (e.closest('[data-testid="stElementContainer"]') || e.parentElement)
    .getBoundingClientRect();
  const px = (x) => `${Math.round(x)} px`;
  const out = [];
  main.querySelectorAll('.katex').forEach((k) => {
    if (!visible(k)) return;
    // A display formula's own box spans the line whatever it holds: what it draws are its .base
    // runs.
    const runs = Array.from(k.querySelectorAll('.katex-html > .base, .katex-html > .tag'))
      .map((b) => b.getBoundingClientRect()).filter((r) => r.width > 0);
    if (!runs.length) return;
    const box = boxOf(k);
    const left = Math.min(...runs.map((r) => r.left)),
      right = Math.max(...runs.map((r) => r.right));
    if (left < box.left - 1 || right > box.right + 1)
      out.push(`formula ${JSON.stringify(k.textContent.slice(0, 60))}: `
               + `${px(right - left)} > ${px(box.width)}`);
  });
  // A page's steps: a tab bar that scrolls hides its last tabs.
  main.querySelectorAll('[role="tablist"]').forEach((bar) => {
    if (visible(bar) && bar.scrollWidth > bar.clientWidth + 1)
      out.push(`tab bar: its tabs ${px(bar.scrollWidth)} > ${px(bar.clientWidth)}`);
  });
  const tables = Array.from(
    main.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"]'));
  tables.filter(visible).forEach((t, n) => {
    const name = `table ${n + 1} (${t.dataset.testid})`;
    const r = t.getBoundingClientRect(), box = boxOf(t);
    if (r.left < box.left - 1 || r.right > box.right + 1)
      out.push(`${name}: ${px(r.width)} > ${px(box.width)}`);
    // st.dataframe scrolls its columns inside its grid; st.table inside the element around its
    // <table>.
    t.querySelectorAll('.dvn-scroller, table').forEach((e) => {
      const s = e.tagName === 'TABLE' ? e.parentElement : e;
      if (s.scrollWidth > s.clientWidth + 1)
        out.push(`${name}: its columns ${px(s.scrollWidth)} > ${px(s.clientWidth)}`);
    });
  });
  return out;
}"""


# The block diagrams (the architecture, the flows of shapes) as drawn: every label inside its box (a
# shape named "block"), in type of at least 14 px. Returns {diagrams: how many, problems: [...]}.
DIAGRAM_TEXT_JS = """() => {
  const problems = [];
  const plots = Array.from(document.querySelectorAll(
    '[class*="st-key-chart-architecture"] .js-plotly-plot, '
    + '[class*="st-key-chart-shapes-flow"] .js-plotly-plot'));
  plots.forEach((gd) => {
    const boxes = (gd.layout.shapes || []).map((shape, i) => [shape, i])
      .filter(([shape]) => shape.name === 'block')
      .map(([, i]) => gd.querySelector(`.shapelayer path[data-index="${i}"]`)
        .getBoundingClientRect());
    gd.querySelectorAll('.textpoint text').forEach((t) => {
      const r = t.getBoundingClientRect();
      if (!boxes.some((b) => r.left >= b.left && r.right <= b.right
                             && r.top >= b.top && r.bottom <= b.bottom))
        problems.push(`diagram label ${JSON.stringify(t.textContent)} is not inside its box`);
      if (parseFloat(getComputedStyle(t).fontSize) < 14)
        problems.push(`diagram label ${JSON.stringify(t.textContent)} is smaller than 14 px`);
    });
  });
  return {diagrams: plots.length, problems};
}"""

# Scroll the main area so that this element sits just under Streamlit's top bar.
SCROLL_TO_JS = """(e) => {
  let s = e.parentElement;
  while (s && !(['auto', 'scroll'].includes(getComputedStyle(s).overflowY)
                && s.scrollHeight > s.clientHeight))
    s = s.parentElement;
  if (s) s.scrollTop += e.getBoundingClientRect().top - s.getBoundingClientRect().top - 70;
}"""


def step_labels(pg) -> list[str]:
    """The page's steps (the tabs of app.steps.tabs), in order."""
    return pg.locator('[data-testid="stMain"] [role="tab"]').all_inner_texts()


def open_step_number(pg, labels: list[str], n: int) -> None:
    """Open step n (from 0) of a page, whether or not it draws a chart, and wait for its run: the
    app names the open step in the URL (?step=n+1)."""
    tab = pg.get_by_role("tab", name=labels[n], exact=True)
    assert tab.count() == 1, f"no step {labels[n]!r}"
    if tab.get_attribute("aria-selected") != "true":
        act_and_wait(pg, tab.click, step=str(n + 1))
    assert tab.get_attribute("aria-selected") == "true"


def every_step(pg, open_one):
    """Open every page (``open_one(info)``) and each of its steps in turn; yields (page info, step
    index, step label or None for a page without steps) while that step is open and drawn."""
    for info in app_pages():
        open_one(info)
        labels = step_labels(pg) or [None]
        for n, label in enumerate(labels):
            if label is not None:
                open_step_number(pg, labels, n)
            yield info, n, label
        if len(labels) > 1:
            # the next visit of this page starts from its first step
            open_step_number(pg, labels, 0)


def test_every_page_and_step_renders_and_nothing_is_cut_off_at_projector_size(projector_page):
    """At 1280 × 720, on every page and every step of it: no exception or error box, every chart
    drawn, a screenshot each (kept in SCREENSHOTS), no formula, tab bar or table wider than its
    container, and the block diagrams' labels inside their boxes. On the Masking lab, the causal
    mask toggled off and on, and a longer sentence typed. SAVE_SCREENSHOTS=1 also writes each page's
    first step, whole, to docs/screenshots/<page>.png."""
    pg = projector_page
    pages = app_pages()
    assert len(pages) >= 2
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    print(f"\nscreenshots at {PROJECTOR[0]}×{PROJECTOR[1]}: {SCREENSHOTS}")
    commit_sentence(pg, "Zwei Hunde spielen im Schnee." if use_real_checkpoints()
                    else "ein mann spielt im park .")
    save_docs = os.environ.get("SAVE_SCREENSHOTS") == "1"
    cut, shots, diagrams, charts, seen = [], [], 0, 0, set()
    for info, n, label in every_step(pg, lambda info: open_page(pg, info["title"])):
        where = info["title"] + (f" / {label}" if label else "")
        charts += assert_page_healthy(pg, where)
        seen.add(info["title"])
        if n == 0 and save_docs:
            save_screenshot(pg, ROOT / "docs" / "screenshots" / f"{info['url_path']}.png",
                            whole_page=True)
        if n == 0 and "mask" in info["title"].lower():
            toggle_causal_mask(pg)
            type_a_longer_sentence_on_the_masking_lab(pg)
            open_step_number(pg, step_labels(pg), 0)
        shot = SCREENSHOTS / (f"{info['url_path']}-{n + 1}.png" if label
                              else f"{info['url_path']}.png")
        if label is not None:  # the step's own content, not the page's header, fills the picture
            pg.locator('[data-testid="stMain"] [role="tablist"]').first.evaluate(SCROLL_TO_JS)
        save_screenshot(pg, shot)
        shots.append(shot)
        cut += [f"{where}: {problem}" for problem in pg.evaluate(OVERFLOW_JS)]
        drawn = pg.evaluate(DIAGRAM_TEXT_JS)
        diagrams += drawn["diagrams"]
        cut += [f"{where}: {problem}" for problem in drawn["problems"]]
    print(f"{len(shots)} screenshots in {SCREENSHOTS}")
    assert seen == {info["title"] for info in pages}
    assert all(shot.stat().st_size > 10_000 for shot in shots)
    assert charts > 0, "no page drew a plotly chart"
    assert diagrams == 3, "the Overview's architecture and the Shapes page's two flows"
    assert cut == [], "cut off at 1280 px:\n" + "\n".join(cut)
    assert pg.dialogs == []


def test_complete_the_sentence_reruns_with_the_prompt_and_steps_through_the_tokens(page, app_url):
    """The decoder-only page: a new prompt gives a new completion that starts with it; Next ▶ moves
    to the second generated token; the settings stay in the URL."""
    page.goto(f"{app_url}/complete?T=0&n=5&s=" + urllib.parse.quote(FIRST_SENTENCE))
    wait_for_run(page, 0, title="Complete the sentence: decoder-only models")
    assert_page_healthy(page, "Complete the sentence")
    box = page.get_by_label(re.compile(r"^Prompt"))
    box.fill("ein hund")
    act_and_wait(page, lambda: box.press("Enter"), text="ein hund")
    completion = page.locator('[data-testid="stText"]').first.inner_text()
    assert completion.startswith("ein hund"), completion
    assert "prompt=ein+hund" in page.url or "prompt=ein%20hund" in page.url, page.url
    act_and_wait(page, page.get_by_role("button", name="Next ▶").click, text="Token 2 of")
    assert page.get_by_text(re.compile(r"Token 2 of \d+")).count() == 1
    assert_page_healthy(page, "Complete the sentence (step 2)")
    assert page.dialogs == []
