"""The Streamlit glue (transformer_viz.webapp) on its own: the page header, the figure cache, the
CSV layouts, stale choices, and what loading a model does to the garbage collector."""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.support.apptest import open_page
from transformer_viz.app import widgets as webapp


def test_a_page_without_a_selection_stops_before_its_title():
    def page():
        from transformer_viz.app import frame as webapp

        # as app.py does when no checkpoint could be offered
        ctx = webapp.open_page("Encoder", None)
        webapp.page_header(ctx, "never shown")
        import streamlit as st

        st.write("after the header")

    at = AppTest.from_function(page).run()
    assert not at.exception and not at.title and not at.markdown


def test_the_header_draws_the_title_and_the_intro_it_is_given():
    def page():
        from transformer_viz.app import frame as webapp

        ctx = webapp.open_page("Decoder", webapp.Selection("tiny", "ein mann .", 1, 2, "de", "en"))
        sel, run = webapp.page_header(ctx, "What this page shows.", r"x = y", run=False)
        import streamlit as st

        st.write(f"layer {sel.layer}, head {sel.head}, run {run}")

    at = AppTest.from_function(page).run()
    assert [t.value for t in at.title] == ["Decoder"]
    assert [m.value for m in at.markdown] == ["What this page shows.", "layer 1, head 2, run None"]
    assert len(at.latex) == 1 and "x = y" in at.latex[0].value


def test_cached_figure_builds_each_input_once():
    calls = []

    def figure(values, title=None):
        calls.append((tuple(values), title))
        return {"values": list(values), "title": title}

    first = webapp.cached_figure(figure, np.array([1.0, 2.0]), title="a")
    assert webapp.cached_figure(figure, np.array([1.0, 2.0]), title="a") is first
    other = webapp.cached_figure(figure, np.array([1.0, 3.0]), title="a")
    titled = webapp.cached_figure(figure, np.array([1.0, 2.0]), title="b")
    assert other["values"] == [1.0, 3.0] and titled["title"] == "b"
    assert len(calls) == 3


def test_long_form_has_one_line_per_cell():
    weights = np.array([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]])  # 2 queries × 3 keys
    table = webapp.long_form(["q0", "q1"], ["k0", "k1", "k2"],
                             {"weight": weights, "twice": 2 * weights}, ("target", "source"))
    assert list(table["target"]) == ["q0"] * 3 + ["q1"] * 3
    assert list(table["source"]) == ["k0", "k1", "k2"] * 2
    for n, (q, k) in enumerate(zip(table["target"], table["source"])):
        assert table["weight"][n] == weights[int(q[1]), int(k[1])]
    np.testing.assert_array_equal(table["twice"], 2 * table["weight"])


def test_a_stale_label_as_choice_goes_back_to_0():
    # After a new sentence the browser sends back the old label of a choice; when that label (it
    # names tokens and lengths) is no longer an option, Streamlit returns the label itself, a str,
    # where the page expects an index. A browser run of 20 sessions found this on the Masking lab.
    def script():
        import streamlit as st

        from transformer_viz.app import widgets as webapp

        for key, value in (("a", "row 2: 9 source tokens + 0 <pad>"), ("b", 5),
                           ("c", -1), ("d", 1)):
            st.session_state.setdefault(key, value)
            webapp.reset_stale_index(key, 3)
            st.write(f"{key}={st.session_state[key]!r}")

    at = AppTest.from_function(script).run()
    assert [m.value for m in at.markdown] == ["a=0", "b=0", "c=0", "d=1"]


def test_loading_a_model_freezes_the_long_lived_objects_but_new_garbage_is_still_collected(
        make_app):
    import gc
    import weakref

    from transformer_viz.app import loaders as webapp

    webapp.get_checkpoint.clear()
    webapp.get_run.clear()
    webapp.get_translation.clear()
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    # loads the model: torch, plotly and the weights are alive now
    at = open_page(make_app(), "transformer_viz/app/pages/shapes.py")
    frozen = gc.get_freeze_count()
    # so Streamlit's full collection after every run no longer walks them
    assert frozen > 100_000, frozen
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


def test_the_open_step_travels_in_the_url_and_a_shared_link_reopens_it(make_app, open_step):
    from tests.support.apptest import charts, rerun

    at = open_page(make_app(), "transformer_viz/app/pages/decoder.py")
    assert at.query_params["step"] == "1" and list(charts(at)) == ["decoder-masked-self-attention"]
    open_step(at, "decoder_step", 1)  # 2 · Cross-attention
    assert at.query_params["step"] == "2"
    link = {k: at.query_params[k] for k in ("s", "ckpt", "layer", "head", "step")}
    # a new session from that link, straight onto the Decoder (as a shared link opens it)
    other = make_app(link["s"])
    for k, v in link.items():
        other.query_params[k] = v
    other.switch_page("transformer_viz/app/pages/decoder.py")
    rerun(other)
    assert other.session_state["decoder_step"] == at.tabs[1].label
    assert set(charts(other)) == {"decoder-cross-grid", "decoder-cross-head"}
    assert other.query_params["step"] == "2"
    # a page without steps drops the parameter, so a link to it names no step
    other.switch_page("transformer_viz/app/pages/shapes.py")
    assert "step" not in rerun(other).query_params


def test_the_app_without_any_checkpoint_says_where_to_put_one(tmp_path, monkeypatch):
    from pathlib import Path

    from transformer_viz.app import catalogue

    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, str(tmp_path))  # an empty root
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"),
                           default_timeout=120).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "No checkpoint found. Put checkpoint directories in `checkpoints/` or name a directory "
        f"in the {catalogue.CHECKPOINTS_ENV} environment variable."]
    assert not at.selectbox  # no model to pick, so no sidebar beyond the message
