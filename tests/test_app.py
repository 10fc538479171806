"""Every page through Streamlit's AppTest, on a tiny checkpoint made by the fixtures."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

PAGES = ["app_pages/overview.py", "app_pages/tokens.py", "app_pages/positional.py", "app_pages/attention.py", "app_pages/encoder.py",
         "app_pages/decoder.py", "app_pages/masking.py", "app_pages/shapes.py", "app_pages/decoding.py", "app_pages/training.py"]


@pytest.fixture()
def app(make_app):
    return make_app("ein mann spielt im park .")


def open_page(at: AppTest, page: str) -> AppTest:
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plotly_specs(at: AppTest) -> list[str]:
    return [c.proto.spec for c in at.get("plotly_chart")]


def test_first_visit_draws_the_architecture_before_the_model_loads(app, monkeypatch):
    from transformer_viz import webapp

    monkeypatch.setattr(webapp, "_LOADED", set())  # as on a fresh server: nothing loaded, nothing cached
    webapp.get_checkpoint.clear()
    webapp.get_run.clear()
    at = app
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # The preview (S and T as symbols) was replaced in place by the figure with the sentence's shapes.
    specs = plotly_specs(at)
    assert len(specs) == 1 and "(1, S, " not in specs[0] and "(1, 8, 32)" in specs[0]  # S = 7 words + </s>
    assert webapp.model_loaded(at.session_state["checkpoint"])
    at.run()  # a rerun with the model in memory draws no preview
    assert len(plotly_specs(at)) == 1 and not at.exception


def test_overview_shows_translation_and_architecture(app):
    at = open_page(app, "app_pages/overview.py")
    assert at.title[0].value == "Overview & translation"
    assert len(at.get("plotly_chart")) >= 1
    assert any("ein mann spielt im park" in t.value for t in at.text)
    assert "(1, 7, 32)" in plotly_specs(at)[0] or "32)" in plotly_specs(at)[0]


def test_loading_a_model_freezes_the_long_lived_objects_but_new_garbage_is_still_collected(app):
    import gc
    import weakref

    from transformer_viz import webapp

    webapp.get_checkpoint.clear()
    webapp.get_run.clear()
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    at = open_page(app, "app_pages/shapes.py")  # loads the model: torch, plotly and the weights are alive now
    frozen = gc.get_freeze_count()
    assert frozen > 100_000, frozen  # so Streamlit's full collection after every run no longer walks them
    assert gc.get_count()[2] < frozen // 10

    class Node:  # a reference cycle made after the freeze, like a plotly figure of a later run
        pass

    node = Node()
    node.me = node
    alive = weakref.ref(node)
    del node
    gc.collect()
    assert alive() is None
    at.run()
    assert not at.exception
