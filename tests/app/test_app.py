"""The app as a whole through Streamlit's AppTest: every page of the navigation, on the tiny
checkpoint. Each page's own behaviour is tested in tests/test_page_<page>.py."""

from __future__ import annotations

import re

from tests.support.apptest import SENTENCE, charts, rerun
from transformer_viz.app.navigation import DEFAULT_PAGE, PAGES


def test_every_page_of_the_navigation_opens_under_its_title(make_app):
    at = rerun(make_app())
    assert at.title[0].value == DEFAULT_PAGE.title  # the root URL
    for page in PAGES:
        at.switch_page(page.file)
        rerun(at)
        # drawn once, as the navigation names it
        assert [t.value for t in at.title] == [page.title], page.file
        assert charts(at) or at.dataframe, f"{page.file} shows neither a chart nor a table"


def test_a_page_follows_the_sidebar(make_app, tokenizer):
    def source_tokens(sentence: str) -> int:
        return len(tokenizer(sentence, add_special_tokens=False)["input_ids"]) + 1  # and </s>

    at = rerun(make_app(SENTENCE))
    at.switch_page("transformer_viz/app/pages/encoder.py")
    rerun(at)
    assert f"S = {source_tokens(SENTENCE)} source tokens" in at.caption[0].value
    at.text_area(key="sentence").set_value("zwei kinder .")
    rerun(at)
    assert at.title[0].value == "Encoder"
    assert f"S = {source_tokens('zwei kinder .')} source tokens" in at.caption[0].value
    at.selectbox(key="layer").set_value(1)
    rerun(at)
    assert at.caption[0].value.startswith("Layer 1 of N = 2")
    # mirrored in the URL
    assert at.query_params["layer"] == "1" and at.query_params["s"] == "zwei kinder ."


def test_pages_follow_the_lecture_and_students_get_the_viewer_toolbar():
    from pathlib import Path

    import tomllib
    from streamlit import config

    order = [p.url_path for p in PAGES]
    # inputs before attention, the encoder before the decoder, training before inference, Shapes
    # last
    assert (order.index("tokens") < order.index("attention") < order.index("encoder")
            < order.index("decoder"))
    assert order.index("training") < order.index("decoding") and order[-1] == "shapes"
    # the Lecture first, its exercises (Practice) right after it; then the overview (the root URL)
    # and the lecture's first idea, where the Transformer came from
    assert (order[:4] == ["lecture", "practice", "overview", "rnn"]
            and DEFAULT_PAGE.url_path == "overview")
    settings = tomllib.loads(
        (Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    # "viewer" hides the Deploy button; the option must be one the installed Streamlit knows
    assert settings["client"]["toolbarMode"] == "viewer"
    assert "client.toolbarMode" in config.get_config_options()


def test_every_chart_of_every_page_has_its_sentence_for_screen_readers(make_app):
    at = rerun(make_app())
    for page in PAGES:
        at.switch_page(page.file)
        rerun(at)
        sentences = [h.proto.body for h in at.get("html") if 'class="chart-alt"' in h.proto.body]
        assert len(sentences) == len(charts(at)), page.file
        # each names a kind of chart and, for a chart of values, a number
        assert all(re.search(r"heatmap|bar chart|line chart|diagram", s)
                   for s in sentences), sentences
        assert all(re.search(r"\d", s) for s in sentences if "diagram" not in s), page.file
