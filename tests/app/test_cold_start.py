"""A fresh server process: the Overview draws everything that needs no model while a background
thread loads the first one, then fills in the translation; other pages wait for that same model. And
what every script run reuses instead of making again: the checkpoint listing and the navigation's
pages."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from tests.support.apptest import charts, rerun

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture()
def cold_process(monkeypatch):
    """The loaders as in a server process whose first run found torch not imported: no model loaded
    or cached, a background load allowed. Every load waits until the test sets the returned event
    (or raises what the test puts in ``fail``); ``calls`` lists the checkpoints read."""
    from transformer_viz.app import loaders

    release, calls, fail = threading.Event(), [], []
    load_listed = loaders.load_listed

    def slow_load(arch, name):
        calls.append(name)
        assert release.wait(60), "the test never released the load"
        if fail:
            raise fail[0]
        return load_listed(arch, name)

    monkeypatch.setattr(loaders, "load_listed", slow_load)
    monkeypatch.setattr(loaders, "_LOADED", set())
    monkeypatch.setattr(loaders, "_BACKGROUND", {})
    monkeypatch.setattr(loaders, "_background_allowed", True)
    loaders.get_checkpoint.clear()
    loaders.get_run.clear()
    loaders.get_translation.clear()
    yield release, calls, fail
    release.set()
    for future in list(loaders._BACKGROUND.values()):
        future.exception(timeout=60)  # no thread left running into the next test
    loaders.get_checkpoint.clear()
    loaders.get_run.clear()
    loaders.get_translation.clear()


def wait_until_loaded(name: str) -> None:
    from transformer_viz.app import loaders

    deadline = time.monotonic() + 60
    while loaders.loading_in_background(name):
        assert time.monotonic() < deadline, "the background load did not finish"
        time.sleep(0.02)


def texts(at) -> list[str]:
    return [t.value for t in at.text]


def test_the_overview_draws_before_the_model_has_loaded_then_fills_in(make_app, cold_process):
    from transformer_viz.app import loaders

    release, calls, _ = cold_process
    at = rerun(make_app())
    name = at.session_state["checkpoint"]
    assert loaders.loading_in_background(name) and calls == [name]
    assert "Loading the model…" in texts(at) and "ein mann spielt im park ." in texts(at)
    assert any(c.value.startswith("Translation (English, greedy") for c in at.caption)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(specs) == 1 and "(1, S, " in specs[0]  # the architecture, S and T as symbols
    assert not at.latex and any(h.value == "Model card" for h in at.subheader)

    release.set()
    wait_until_loaded(name)
    rerun(at)  # what the page's fragment asks for once the load is over
    assert "Loading the model…" not in texts(at)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(specs) == 1 and "(1, 8, 32)" in charts(at)["architecture"]  # S = 7 words + </s>
    # the thread's model, not read a second time
    assert loaders.model_loaded(name) and calls == [name]


def test_another_page_waits_for_the_model_the_background_thread_is_loading(make_app, cold_process):
    release, calls, _ = cold_process
    at = rerun(make_app())
    name = at.session_state["checkpoint"]
    threading.Timer(0.3, release.set).start()
    at.switch_page("transformer_viz/app/pages/decoder.py")
    rerun(at)
    assert at.title[0].value == "Decoder" and at.get("plotly_chart")
    assert calls == [name]


def test_a_model_that_fails_to_load_in_the_background_is_reported_on_the_page(
        make_app, cold_process):
    from transformer_viz.checkpoints import CheckpointError

    release, calls, fail = cold_process
    at = rerun(make_app())
    name = at.session_state["checkpoint"]
    fail.append(CheckpointError("weights do not match the config"))
    release.set()
    wait_until_loaded(name)
    rerun(at)
    assert ([e.value for e in at.error]
            == ["This checkpoint cannot be loaded: weights do not match the config"])
    assert not at.get("plotly_chart")
    fail.clear()
    rerun(at)  # the error was the thread's, once: the next run reads the checkpoint itself
    assert not at.error and "(1, 8, 32)" in charts(at)["architecture"] and calls == [name, name]


def test_a_process_that_had_torch_already_loads_in_the_script_thread(make_app, monkeypatch):
    from transformer_viz.app import coldstart, loaders

    assert not coldstart.STARTED_COLD  # the tests import torch before the app
    monkeypatch.setattr(loaders, "_LOADED", set())
    assert not loaders.loading_in_background("tiny") and not loaders._BACKGROUND


def run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_the_router_notes_a_cold_process_before_its_imports_bring_torch():
    assert run_python("import transformer_viz.app.router\n"
                      "from transformer_viz.app import coldstart\n"
                      "print(coldstart.STARTED_COLD)") == "True"
    assert run_python("import torch\n"
                      "from transformer_viz.app import coldstart\n"
                      "print(coldstart.STARTED_COLD)") == "False"


def test_the_first_page_imports_no_torch_and_all_of_pandas():
    """What the router and the Overview import (the app's modules, the architecture figure): no
    torch, so that a fresh server draws its first page while a background thread imports it; and
    pandas whole, before any page runs, so that no script thread's figure finds it half imported by
    another (router.py says why)."""
    assert run_python("import sys\n"
                      "import transformer_viz.app.router, transformer_viz.app.examples, "
                      "transformer_viz.app.about\n"
                      "import transformer_viz.plots.architecture, transformer_viz.plots.blocks\n"
                      "print(sorted(m for m in ('torch', 'transformers', 'pandas') if m in "
                      "sys.modules), "
                      "sys.modules['pandas'].__spec__._initializing, "
                      "hasattr(sys.modules['pandas'], 'Series'))"
                      ) == "['pandas'] False True"


# --- what a script run reuses ---------------------------------------------------------------------

def test_the_checkpoint_listing_is_reused_until_a_root_changes_or_it_is_old(
        checkpoint_dir, tmp_path, monkeypatch):
    import shutil

    from transformer_viz.app import catalogue

    root = tmp_path / "root"
    shutil.copytree(checkpoint_dir, root / "a")
    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, str(root))
    reads = []
    checkpoint_arch = catalogue.checkpoint_arch
    monkeypatch.setattr(catalogue, "checkpoint_arch",
                        lambda path: reads.append(path.name) or checkpoint_arch(path))
    first = catalogue.list_checkpoints()
    assert list(first) == ["a"] and reads == ["a"]
    first["b"] = root  # a caller's copy: the next listing does not have it
    # no config.json read again
    assert list(catalogue.list_checkpoints()) == ["a"] and reads == ["a"]

    shutil.copytree(checkpoint_dir, root / "b")  # a new directory changes the root: listed at once
    assert list(catalogue.list_checkpoints()) == ["a", "b"]
    # a change inside one: only once the listing is old
    (root / "b" / "config.json").write_text("{}")
    reads.clear()
    assert list(catalogue.list_checkpoints()) == ["a", "b"] and reads == []
    monkeypatch.setattr(catalogue, "LISTING_TTL_S", 0.0)
    # "{}": the default family
    assert list(catalogue.list_checkpoints()) == ["a", "b"] and reads == ["a", "b"]


def test_a_session_keeps_its_navigation_pages_and_another_gets_its_own(make_app):
    from transformer_viz.app.router import _SESSION_PAGES

    at = rerun(make_app())
    pages = at.session_state[_SESSION_PAGES]
    rerun(at)
    assert at.session_state[_SESSION_PAGES] is pages
    other = rerun(make_app())
    assert other.session_state[_SESSION_PAGES] is not pages
    assert [p.title for p in other.session_state[_SESSION_PAGES]] == [p.title for p in pages]
