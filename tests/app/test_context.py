"""app/context.py: the page's context and the session's memory, in the open; and a page script
that runs on its own, without the router, because it makes its own context."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.support.apptest import SENTENCE, charts
from transformer_viz.app.context import MEMORY_KEY, PageContext, SessionMemory
from transformer_viz.app.navigation import title_of
from transformer_viz.app.sidebar import Selection

ROOT = Path(__file__).resolve().parents[2]


def test_the_link_step_goes_to_the_page_it_opened_and_only_once():
    memory = SessionMemory()
    memory.open_link("Decoder", "3")
    memory.open_link("Encoder", "5")  # a later run: the session's first link counts
    sel = Selection("tiny", "ein mann .", 0, 0, "de", "en")
    # another page: kept for the Decoder
    assert PageContext("Encoder", sel, memory).link_step() is None
    decoder = PageContext("Decoder", sel, memory)
    assert decoder.link_step() == "3"
    assert decoder.link_step() is None  # once: the session's own choice counts from now on
    assert PageContext("Decoder", sel, memory).link_step() is None


def test_a_link_without_a_step_names_none():
    memory = SessionMemory()
    memory.open_link("Decoder", None)
    assert PageContext("Decoder", None, memory).link_step() is None


def test_the_router_hands_the_context_over_once():
    memory = SessionMemory()
    ctx = PageContext("Encoder", None, memory)
    assert memory.take_handed() is None  # no router ran: the page makes its own
    memory.hand_over(ctx)
    assert memory.take_handed() is ctx
    assert memory.take_handed() is None


def test_a_fresh_context_has_no_notes_and_no_step_written():
    ctx = PageContext("Shapes", None)
    assert ctx.notes is None and not ctx.step_written and isinstance(ctx.memory, SessionMemory)


def test_the_title_of_a_page_file_is_the_navigations():
    assert title_of(str(ROOT / "transformer_viz/app/pages/encoder.py")) == "Encoder"
    assert title_of("transformer_viz/app/pages/patching.py") == "Why this word?"


def test_a_page_script_runs_on_its_own(checkpoint_dir, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(checkpoint_dir.parent))
    at = AppTest.from_file(str(ROOT / "transformer_viz/app/pages/encoder.py"), default_timeout=60)
    at.query_params["s"] = SENTENCE
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Encoder"]
    assert at.text_area(key="sentence").value == SENTENCE  # the page drew the sidebar itself
    assert set(charts(at)) == {"encoder-head-grid", "encoder-head"}
    assert at.query_params["step"] == "1"
    # the session's one place of its own: the memory, which holds no context once the page took it
    memory = at.session_state[MEMORY_KEY]
    assert isinstance(memory, SessionMemory) and memory.handed is None
    assert memory.last_checkpoint == at.session_state["checkpoint"]
    at.session_state["encoder_step"] = at.tabs[2].label
    at.run()
    assert not at.exception and at.query_params["step"] == "3"
    assert set(charts(at)) == {"encoder-ffn-hidden", "encoder-ffn-zeros"}
