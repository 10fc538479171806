"""The page "What does a head do?" in headless Chromium: switching heads off in the multiselect
updates the translation area (to what interpret/explain.py decodes with them off) and the URL."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from tests.browser.test_browser import (FIRST_SENTENCE, act_and_wait, app_url, assert_page_healthy,  # noqa: F401
                                        browser, page, wait_for_run)
from tests.support.browser import CHROMIUM
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.ablation import parse_heads
from transformer_viz.interpret.explain import translation_with_heads_off

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

HEADS = ["cross.0.0", "cross.0.1", "cross.0.2", "cross.0.3", "cross.1.0", "cross.1.1", "cross.1.2",
         "cross.1.3"]


def translation_area(pg) -> str:
    return pg.locator(".st-key-heads_off_translation [data-testid='stText']").inner_text()


def test_switching_heads_off_updates_the_translation(page, app_url, tiny_checkpoint):  # noqa: F811
    page.goto(f"{app_url}/heads?step=1&s=" + urllib.parse.quote(FIRST_SENTENCE))
    wait_for_run(page, 0, title="What does a head do?")
    assert_page_healthy(page, "What does a head do?")
    run = run_sentence(tiny_checkpoint, FIRST_SENTENCE)
    assert translation_area(page) == (run.translation or "(empty)")
    box = page.locator(".st-key-heads_off input")
    # every cross-attention head: the decoder no longer reads the source
    for n_off, head in enumerate(HEADS, start=1):
        box.click()
        page.keyboard.type(head)
        act_and_wait(page, lambda: page.keyboard.press("Enter"),
                     text=f"Translation with {n_off} head(s) off")
    page.keyboard.press("Escape")
    _, expected = translation_with_heads_off(tiny_checkpoint, run.src_ids,
                                             parse_heads(HEADS, tiny_checkpoint.config))
    page.wait_for_function("(t) => document.querySelector(\".st-key-heads_off_translation "
                           "[data-testid='stText']\")"
                           "?.innerText === t", arg=expected or "(empty)")
    assert expected != run.translation  # the area really changed
    assert page.get_by_text(f"Translation with {len(HEADS)} head(s) off").count() == 1
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert query["off"] == [",".join(HEADS)]
    assert_page_healthy(page, "What does a head do? (heads off)")
