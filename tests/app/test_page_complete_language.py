"""The "Complete the sentence" page on the shipped models, with the sidebar on German→English: the
lecture's English prompt opens the English model, and a prompt in the other language than the chosen
model's is said to be so, as the translation pages say it."""

from __future__ import annotations

import pytest

from tests.support.apptest import open_page
from tests.support.browser import ROOT

PAGE = "transformer_viz/app/pages/complete.py"
SHIPPED = ROOT / "checkpoints"
pytestmark = pytest.mark.skipif(not (SHIPPED / "gpt-en" / "config.json").is_file()
                                or not (SHIPPED / "de-en" / "language_stats.json").is_file(),
                                reason="the shipped checkpoints are missing")


@pytest.fixture()
def shipped_app(make_app, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(SHIPPED))

    def make(query: dict):
        at = make_app("Die Katze schläft auf dem Sofa, weil sie müde ist.")
        at.query_params.update({"ckpt": "de-en", "T": "0", "n": "3", **query})
        return open_page(at, PAGE)

    return make


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_the_english_prompt_opens_the_english_model_although_the_sidebar_translates_german(
        shipped_app):
    at = shipped_app({"prompt": "Where there is a will, there"})
    assert at.selectbox(key="complete_model").value == "gpt-en"
    assert not any("looks like" in w for w in warnings(at)), warnings(at)


def test_a_prompt_in_the_other_language_than_the_chosen_model_is_named(shipped_app):
    at = shipped_app({"prompt": "Where there is a will, there", "gpt": "gpt-de"})
    assert at.selectbox(key="complete_model").value == "gpt-de"  # the link's choice is kept
    said = [w for w in warnings(at) if "looks like English" in w]
    assert said and "writes German" in said[0] and "gpt-en" in said[0], warnings(at)
    german = shipped_app({"prompt": "Wo ein Wille ist, ist auch"})
    assert german.selectbox(key="complete_model").value == "gpt-de"
    assert not any("looks like" in w for w in warnings(german))
