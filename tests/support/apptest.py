"""Driving the app in Streamlit's AppTest and reading what a page drew: its charts as plotly JSON
(read them with tests/support/figures.py) and its formulas. The fixtures that make an AppTest are in
tests/conftest.py."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

SENTENCE = "ein mann spielt im park ."
OTHER_SENTENCE = "zwei kinder sitzen am strand mit einem ball ."


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_page(at: AppTest, page: str) -> AppTest:
    """``at`` after a first run on the default page, then on ``page`` (a file in
    transformer_viz/app/pages/)."""
    rerun(at)
    at.switch_page(page)
    return rerun(at)


def change_sentence(at: AppTest, sentence: str) -> AppTest:
    """Type another sentence into the sidebar, as a reader would."""
    at.text_area(key="sentence").set_value(sentence)
    return rerun(at)


def charts(at: AppTest) -> dict[str, str]:
    """Chart name (the name given to widgets.chart) -> its plotly JSON, for every chart on the
    page."""
    return {c.proto.id.split("-chart-", 1)[1]: c.proto.spec for c in at.get("plotly_chart")}


def chart(at: AppTest, name: str) -> dict:
    """The plotly figure (as a dict) that widgets.chart drew under ``name``."""
    found = charts(at)
    assert name in found, (name, sorted(found))
    return json.loads(found[name])


def latex(at: AppTest) -> str:
    """Every formula on the page, one per line."""
    return "\n".join(el.value for el in at.latex)
