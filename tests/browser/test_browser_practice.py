"""The Practice page in headless Chromium on the tiny checkpoint: an exercise answered wrongly, its
three hints taken one at a time (the last draws the answer on a figure), then answered rightly, and
the URL marking it done; the progress still there after a visit to the page that explains it."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from tests.browser.test_browser import (SERVER_START_S, WAIT_MS, act_and_wait,  # noqa: F401
                                        assert_page_healthy, browser, wait_for_run)
from tests.support.browser import CHROMIUM, counted_page, serving

TITLE = "Practice"
SENTENCE = "zwei kinder sitzen am strand ."
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing"),
]


@pytest.fixture(scope="module")
def tiny_url(checkpoint_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with serving(checkpoint_dir.parent, log, SERVER_START_S) as url:
        yield url


def query_of(pg) -> dict:
    return urllib.parse.parse_qs(urllib.parse.urlparse(pg.url).query)


def check(pg, typed: str, shows: str) -> None:
    """Type an answer and press Enter (the form's Check), then wait for the verdict."""
    field = pg.get_by_label("Your answer")
    field.fill(typed)
    act_and_wait(pg, lambda: field.press("Enter"), text=shows)


def test_a_wrong_answer_three_hints_then_the_right_answer_marked_done(  # noqa: F811
        browser, tiny_url, tokenizer):
    tokens = len(tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]) + 1  # and </s>
    with counted_page(browser, 1400, 1000, WAIT_MS) as pg:
        pg.goto(f"{tiny_url}/practice?ex=1&s=" + urllib.parse.quote(SENTENCE))
        wait_for_run(pg, 0, title=TITLE)
        assert pg.get_by_text("Exercise 1 of 14: How many tokens?").count() == 1
        assert query_of(pg)["ex"] == ["1"] and "done" not in query_of(pg)
        check(pg, str(tokens + 1), "Not quite")
        assert "done" not in query_of(pg)
        for k in (1, 2, 3):
            button = pg.get_by_role("button", name=f"Show hint {k} of 3")
            act_and_wait(pg, button.click, text="Hint 3, the answer." if k == 3 else f"Hint {k}.")
        assert pg.get_by_role("button", name="Show hint").count() == 0
        # the answer's figure
        assert pg.locator('[data-testid="stMain"] .js-plotly-plot').count() == 1
        check(pg, f" {tokens} ", "Right:")
        assert query_of(pg)["done"] == ["1"] and query_of(pg)["s"] == [SENTENCE]
        assert pg.get_by_text("1 of 14 answered correctly: 1.").count() == 1
        assert assert_page_healthy(pg, TITLE) == 1  # the error box of the wrong answer is gone
        # To the page that explains it and back by the navigation: the progress comes back with it.
        act_and_wait(pg, pg.get_by_role("link", name="Explained on: Tokens & embeddings").click,
                     title="Tokens & embeddings")
        assert query_of(pg)["s"] == [SENTENCE]
        nav = pg.locator('[data-testid="stSidebarNav"] a', has_text="Practice")
        act_and_wait(pg, nav.click, title=TITLE)
        assert query_of(pg)["done"] == ["1"] and query_of(pg)["ex"] == ["1"]
