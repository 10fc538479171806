"""The page "Why this word?" in headless Chromium on the shipped checkpoints: it opens on the
sidebar's direction's first preset, another preset picked in the selectbox draws its heatmaps, and
the URL names it."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from tests.browser.test_browser import (CHART_SVGS_JS, SERVER_START_S, WAIT_MS,  # noqa: F401
                                        act_and_wait, assert_page_healthy, browser, wait_for_run)
from tests.support.browser import CHROMIUM, COUNT_RUNS_JS, ROOT, serving
from transformer_viz.interpret.patching import PRESETS

SHIPPED = ROOT / "checkpoints"
TITLE = "Why this word?"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing"),
    pytest.mark.skipif(not all((SHIPPED / p.checkpoint / "model.safetensors").is_file()
                               for p in PRESETS), reason="the shipped checkpoints are missing"),
]


@pytest.fixture(scope="module")
def shipped_url(tmp_path_factory):
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with serving(SHIPPED, log, SERVER_START_S) as url:
        yield url


def query_of(pg) -> dict:
    return urllib.parse.parse_qs(urllib.parse.urlparse(pg.url).query)


def heatmaps_drawn(pg) -> int:
    """How many heatmap images plotly drew in the page's charts."""
    return pg.locator('[data-testid="stMain"] .js-plotly-plot image').count()


def test_picking_a_preset_draws_its_heatmaps(browser, shipped_url, tmp_path):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_RUNS_JS)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        pg.goto(f"{shipped_url}/why?ckpt=de-en&s=" + urllib.parse.quote("Ein Hund läuft."))
        wait_for_run(pg, 0, title=TITLE)
        assert query_of(pg)["pair"] == ["singular / plural"]  # the sidebar's direction's first
        # the encoder, decoder and head grids, the contrastive attribution and "Source or prefix?"
        assert assert_page_healthy(pg, TITLE) == 5
        preset = next(p for p in PRESETS if p.name == "nicht / draußen")  # the same model
        pg.locator(".st-key-why_pair input").click()
        act_and_wait(pg, lambda: pg.get_by_role("option", name=preset.name, exact=True).click(),
                     text=preset.clean)
        assert assert_page_healthy(pg, f"{TITLE} ({preset.name})") == 5
        # encoder, decoder (colours and the grey cone) and three head panels
        assert heatmaps_drawn(pg) >= 6
        assert query_of(pg)["pair"] == [preset.name]
        pg.screenshot(path=str(tmp_path / "why.png"), full_page=True)
    finally:
        context.close()
