"""Every chart whole and legible, as a class sees it: the Lecture in projector mode at 1280×720 and
1920×1080, with the sidebar folded and open, on a short and a long sentence in each direction (the
shipped de→en and en→de models); and every page and step on a 390×844 phone.

A chart fails when it is wider than its column (on a phone: unless its box shows that it scrolls
sideways), when one of its texts is cut at the chart's edge, when two of its texts overlap (the
glyph boxes of the SVG texts as drawn, turned with them, so the empty corners of a turned tick label
do not count), or when a text is smaller than the floor: 16 px, and 18 px for titles (figure, axis,
colour-bar and panel titles), on a projector; 10 px on a phone. On a phone, also no colour bar or
panel title over a panel and the block diagrams' labels inside their boxes. Screenshots of each
step go to screenshots-tmp/legibility/ (git-ignored; each run replaces its files).

Every problem found is written to problems.txt beside the screenshots, and any one fails the test.
The two walks take about two and a half minutes together."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from tests.browser.test_browser import (  # noqa: F401
    DIAGRAM_TEXT_JS,
    SERVER_START_S,
    WAIT_MS,
    act_and_wait,
    assert_page_healthy,
    browser,
    every_step,
    pytestmark,
    wait_for_run,
)
from tests.browser.test_browser_lecture import wait_for_lecture_step
from tests.support.browser import COUNT_RUNS_JS, ROOT, page_url, serving

SHOTS = ROOT / "screenshots-tmp" / "legibility"
CHECKPOINTS = ROOT / "checkpoints"
# Two lengths in each direction; the long German one is the class sentence.
SENTENCES = {"de-en": ("Ein Hund läuft.", "Die Katze schläft auf dem Sofa, weil sie müde ist."),
             "en-de": ("A dog runs.",
                       "The kids were scared of the lions, so they left right away.")}
PROJECTOR_FLOOR, PROJECTOR_TITLE_FLOOR, PHONE_FLOOR = 16, 18, 10
# (screen, sidebar open): at 1280×720 the sidebar open leaves the narrowest column, and folded it
# lets a figure stand beside the text that goes under it with the sidebar open; 1920×1080 draws the
# figures larger.
VIEWS = (((1280, 720), True), ((1280, 720), False), ((1920, 1080), True))

# Resolves once every chart has its svg as wide as its box and nothing in any chart moved for 150 ms
# (plotly redraws a figure after a resize, and again while its automatic margins settle).
SETTLED_JS = """async () => {
  const shape = () => Array.from(
      document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
    .map((gd) => { const s = gd.querySelector('svg.main-svg');
                   const p = gd.querySelector('.cartesianlayer, .layer-above');
                   const r = p ? p.getBoundingClientRect() : {x: 0, width: 0};
                   return [s ? s.getAttribute('width') : -1, gd.clientWidth, r.x, r.width,
                           gd.querySelectorAll('text').length].join(','); }).join(';');
  let last = shape(), since = performance.now();
  const t0 = performance.now();
  while (performance.now() - t0 < 10000) {
    await new Promise((r) => setTimeout(r, 30));
    const now = shape();
    if (now !== last) { last = now; since = performance.now(); }
    else if (performance.now() - since > 150) return true;
  }
  return false;
}"""

# The checks, in the page, over every plotly chart in the main area: {charts, texts, problems}.
CHECK_JS = """({floor, titleFloor, scrollOk}) => {
  const problems = [];
  let texts = 0;
  const corners = (t, size) => {
    const b = t.getBBox(), m = t.getScreenCTM();
    // the line box holds the font's ascent and descent: the glyphs leave ~0.12 em free above and
    // below
    const inset = Math.min(0.12 * size, b.height / 4);
    return [[b.x + 1, b.y + inset], [b.x + b.width - 1, b.y + inset],
            [b.x + b.width - 1, b.y + b.height - inset], [b.x + 1, b.y + b.height - inset]]
      .map(([x, y]) => new DOMPoint(x, y).matrixTransform(m));
  };
  const apart = (p, q) => {  // separating axes of two convex quadrilaterals, with 1 px of slack
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const a = poly[i], b = poly[(i + 1) % 4];
        const nx = b.y - a.y, ny = a.x - b.x, len = Math.hypot(nx, ny) || 1;
        const proj = (pts) => pts.map((c) => (c.x * nx + c.y * ny) / len);
        const [pp, qq] = [proj(p), proj(q)];
        if (Math.min(Math.max(...pp), Math.max(...qq))
            - Math.max(Math.min(...pp), Math.min(...qq)) <= 1) return true;
      }
    }
    return false;
  };
  const charts = Array.from(
    document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]'));
  charts.forEach((chart, ci) => {
    const gd = chart.querySelector('.js-plotly-plot');
    if (!gd || !gd._fullLayout) return;
    const title = (gd.querySelector('.gtitle') || {}).textContent || '';
    const name = `chart ${ci + 1} "${title.slice(0, 45)}"`;
    const column = chart.closest('[data-testid="stColumn"]')
      || chart.closest('[data-testid="stMain"]');
    const col = column.getBoundingClientRect(),
      svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
    const scroller = chart.closest('[class*="st-key-wide"]');
    const cue = scroller && getComputedStyle(scroller, '::after').content !== 'none'
      && scroller.scrollWidth > scroller.clientWidth + 1;
    if (svg.width > col.width + 1 && !(scrollOk && cue))
      problems.push(`${name}: ${Math.round(svg.width)} px wide `
                    + `in a ${Math.round(col.width)} px column`
                    + (scroller ? ' (scrolls sideways without a cue)' : ''));
    const items = [];
    gd.querySelectorAll('svg.main-svg text').forEach((t) => {
      const text = t.textContent.trim();
      if (!text || t.closest('.hoverlayer')) return;
      if (!t.checkVisibility({opacityProperty: true, visibilityProperty: true})) return;
      const b = t.getBBox();
      if (b.width === 0 || b.height === 0) return;
      const m = t.getScreenCTM();
      const size = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      const cls = t.getAttribute('class') || '';
      const note = t.closest('g.annotation');
      const spec = note ? gd._fullLayout.annotations[+note.getAttribute('data-index')] : null;
      const isTitle = /(^| )(gtitle|[xy]\\d*title)( |$)/.test(cls) || !!t.closest('.cbtitle')
        || !!(spec && !spec.showarrow && spec.yref === 'paper' && spec.yanchor === 'bottom');
      const need = isTitle ? titleFloor : floor;
      texts++;
      if (size < need - 0.01)
        problems.push(`${name}: ${isTitle ? 'title' : 'text'} "${text.slice(0, 30)}" `
                      + `is ${size.toFixed(1)} px`);
      const box = corners(t, size);
      const xs = box.map((c) => c.x), ys = box.map((c) => c.y);
      if (Math.min(...xs) < svg.left - 1 || Math.max(...xs) > svg.right + 1
          || Math.min(...ys) < svg.top - 1 || Math.max(...ys) > svg.bottom + 1)
        problems.push(`${name}: "${text.slice(0, 30)}" is cut at the chart's edge`);
      items.push([text, box]);
    });
    items.forEach(([a, p], i) => items.slice(i + 1).forEach(([b, q]) => {
      if (!apart(p, q)) problems.push(`${name}: "${a.slice(0, 30)}" overlaps "${b.slice(0, 30)}"`);
    }));
  });
  return {charts: charts.length, texts, problems};
}"""
# Multi-panel figures: no colour bar or panel title over a panel, no two panel titles over each
# other (boxes of the drawn groups).
PANELS_JS = """() => {
  const problems = [];
  const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const plots = Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
    .filter((gd) => gd.querySelectorAll('.draglayer .nsewdrag').length >= 2);
  plots.forEach((gd) => {
    const name = (gd.querySelector('.gtitle') || {}).textContent || 'a figure';
    const areas = Array.from(gd.querySelectorAll('.draglayer .nsewdrag'))
      .map((e) => e.getBoundingClientRect());
    const bars = Array.from(gd.querySelectorAll('g.colorbar'))
      .map((e) => e.getBoundingClientRect());
    const titles = Array.from(gd.querySelectorAll('g.annotation'))
      .map((e) => [e.textContent, e.getBoundingClientRect()]);
    bars.forEach((b) => {
      if (areas.some((a) => meet(a, b))) problems.push(`${name}: a colour bar over a panel`);
    });
    titles.forEach(([text, t], i) => {
      if (areas.some((a) => meet(a, t)))
        problems.push(`${name}: panel title ${JSON.stringify(text)} over a panel`);
      titles.slice(i + 1).forEach(([other, u]) => {
        if (meet(t, u)) problems.push(`${name}: panel titles ${JSON.stringify(text)} `
          + `and ${JSON.stringify(other)} overlap`
          + ` (${Math.round(t.left)}-${Math.round(t.right)} `
          + `and ${Math.round(u.left)}-${Math.round(u.right)} px)`);
      });
    });
  });
  return {figures: plots.length, problems};
}"""
SIDEBAR_JS = """(open) => {
  const bar = document.querySelector('[data-testid="stSidebar"]');
  if ((bar.getAttribute('data-collapsed') === 'false') === open) return;
  const button = document.querySelector(open ? '[data-testid="stExpandSidebarButton"]'
                                             : '[data-testid="stSidebarCollapseButton"] button');
  button.click();
}"""
# Nothing of the page's fixed header bar over the navigation row's step list.
HEADER_JS = """() => { const h = document.querySelector('[data-testid="stHeader"]');
  const s = document.querySelector('.st-key-lecture_jump');
  return h && s ? h.getBoundingClientRect().bottom - s.getBoundingClientRect().top : 0; }"""


@pytest.fixture(scope="module")
def shipped_app(tmp_path_factory):
    """The app on the shipped checkpoints (both directions and the decoder-only models)."""
    if not (CHECKPOINTS / "de-en" / "config.json").is_file():
        pytest.skip("the shipped checkpoints are missing")
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with serving(CHECKPOINTS, log, SERVER_START_S) as url:
        yield url


def settle(pg) -> None:
    assert pg.evaluate(SETTLED_JS), "the charts kept moving for 10 s"


def set_sidebar(pg, open_: bool) -> None:
    pg.evaluate(SIDEBAR_JS, open_)
    pg.wait_for_function("""(open) => document.querySelector('[data-testid="stSidebar"]')
      .getAttribute('data-collapsed') === String(!open)""", arg=open_, polling=50, timeout=WAIT_MS)


def check(pg, floor: float, title_floor: float, scroll_ok: bool = False) -> list[str]:
    settle(pg)
    return pg.evaluate(CHECK_JS,
                       {"floor": floor, "titleFloor": title_floor,
                        "scrollOk": scroll_ok})["problems"]


def assert_no_problem(found: list[tuple[str, str]]) -> None:
    """No chart of any step or view has a problem; the message lists the first 200."""
    assert not found, (f"{len(found)} problems:\n"
                       + "\n".join(f"{where}: {problem}" for where, problem in found[:200]))


def write_problems(shots: Path, found: list[tuple[str, str]]) -> None:
    """Every problem found, a line each, beside the screenshots (problems.txt)."""
    lines = [f"{where}: {problem}" for where, problem in found]
    (shots / "problems.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_every_lecture_figure_is_whole_and_legible_on_a_projector(browser, shipped_app):  # noqa: F811
    """Each step by the → key on the four sentences at 1280×720 with the sidebar open (the narrowest
    column), and on the two long ones also with it folded (the projector as the class sees it) and
    at 1920×1080 with it open (VIEWS): a short sentence's figures are smaller, and every view costs
    time. The steps go back and forth through the views, so that each step starts in the view the
    step before ended in. A screenshot of each step of each sentence.

    Any problem found fails the test."""
    from transformer_viz.views.lecture import STEPS

    shots = SHOTS / "lecture"
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    found, seen = [], 0
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(COUNT_RUNS_JS)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        for ckpt, sentences in SENTENCES.items():
            for k, sentence in enumerate(sentences):
                query = {"projector": "1", "step": "1", "s": sentence, "ckpt": ckpt}
                views = VIEWS if k == 1 else VIEWS[:1]  # the short one in the narrowest column only
                pg.set_viewport_size({"width": 1280, "height": 720})
                pg.goto(f"{shipped_app}/lecture?" + urllib.parse.urlencode(query))
                for n, step in enumerate(STEPS, start=1):
                    wait_for_lecture_step(pg, n, step.title, sentence)
                    assert_page_healthy(pg, f"{ckpt} {sentence!r} step {n}")
                    for (width, height), open_ in (views if n % 2 else views[::-1]):
                        set_sidebar(pg, open_)
                        pg.set_viewport_size({"width": width, "height": height})
                        where = (f"{ckpt} sentence {k + 1}, {width}×{height}, "
                                 f"sidebar {'open' if open_ else 'folded'}")
                        problems = check(pg, PROJECTOR_FLOOR, PROJECTOR_TITLE_FLOOR)
                        if pg.evaluate(HEADER_JS) > 0:
                            problems.append("the page header covers the step list")
                        found += [(f"step {n} ({step.id})", f"{where}: {p}") for p in problems]
                        seen += 1
                        if (width, open_) in ((1280, False), (1920, True)) or k == 0:
                            name = f"{ckpt}-{k + 1}-step-{n:02d}-{step.id}-{width}"
                            pg.screenshot(
                                path=str(shots / f"{name}{'-sidebar' if open_ else ''}.png"))
                    if n < len(STEPS):
                        pg.keyboard.press("ArrowRight")
    finally:
        context.close()
    write_problems(shots, found)
    print(f"{seen} views checked, {len(found)} problems; screenshots in {shots}")
    assert seen == len(SENTENCES) * len(STEPS) * (len(VIEWS) + 1)
    assert_no_problem(found)


# A page of the app opened by its link in the navigation, as a tap would: the folded sidebar keeps
# its links.
NAV_JS = """(title) => Array.from(document.querySelectorAll('[data-testid="stSidebarNav"] a'))
  .find((a) => a.innerText.trim() === title).click()"""


def test_every_page_and_step_is_legible_on_a_phone(browser, shipped_app):  # noqa: F811
    """At 390×844 with touch, every page and each of its steps, the Lecture's included, on the long
    German sentence. Any problem found fails the test, as on the projector."""
    from transformer_viz.views.lecture import STEPS

    shots = SHOTS / "phone"
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    sentence = SENTENCES["de-en"][1]
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                  is_mobile=True)
    context.add_init_script(COUNT_RUNS_JS)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    found, seen, multi_panel, diagrams = [], 0, 0, 0

    # the first page by its address, with the sentence; the others by their links
    def by_link(info):
        if seen == 0:
            pg.goto(page_url(shipped_app, info) + "?ckpt=de-en&s=" + urllib.parse.quote(sentence))
            wait_for_run(pg, 0, sentence=sentence)
        else:
            act_and_wait(pg, lambda: pg.evaluate(NAV_JS, info["title"]), title=info["title"])

    try:
        for info, n, label in every_step(pg, by_link):
            if info["url_path"] == "lecture":
                for k, step in enumerate(STEPS, start=1):
                    if k > 1:
                        pg.keyboard.press("ArrowRight")
                    wait_for_lecture_step(pg, k, step.title, sentence)
                    found += [(f"Lecture step {k} ({step.id})", p)
                              for p in check(pg, PHONE_FLOOR, PHONE_FLOOR, True)]
                    pg.screenshot(path=str(shots / f"lecture-{k:02d}-{step.id}.png"))
                    seen += 1
                continue
            where = info["title"] + (f" / {label}" if label else "")
            assert_page_healthy(pg, where)
            found += [(where, p) for p in check(pg, PHONE_FLOOR, PHONE_FLOOR, True)]
            panels, drawn = pg.evaluate(PANELS_JS), pg.evaluate(DIAGRAM_TEXT_JS)
            multi_panel, diagrams = multi_panel + panels["figures"], diagrams + drawn["diagrams"]
            found += [(where, p) for p in panels["problems"] + drawn["problems"]]
            pg.screenshot(path=str(shots / (f"{info['url_path']}-{n + 1}.png" if label else
                                            f"{info['url_path']}.png")))
            seen += 1
    finally:
        context.close()
    write_problems(shots, found)
    print(f"{seen} views checked, {len(found)} problems; screenshots in {shots}")
    assert seen >= len(STEPS) + 16
    assert multi_panel >= 5 and diagrams == 3, "the Overview's architecture and Shapes' two flows"
    assert_no_problem(found)
