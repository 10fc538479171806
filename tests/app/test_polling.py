"""app/polling.py: the pollers of Streamlit's config files stop in a server that watches no files, and only
those pollers."""

from __future__ import annotations

import time

import pytest
from streamlit import config
from streamlit.watcher.polling_path_watcher import PollingPathWatcher

from transformer_viz.app import polling


@pytest.fixture
def pollers(tmp_path, monkeypatch):
    """A poller of a config file and one of another file, as Streamlit's server makes them."""
    config_file, other_file = tmp_path / "config.toml", tmp_path / "notes.txt"
    config_file.write_text("[server]\n")
    other_file.write_text("x")
    monkeypatch.setattr(config, "get_config_files", lambda name: [str(config_file), str(tmp_path / "absent.toml")])
    monkeypatch.setattr(polling, "_done", False)
    changes: list[str] = []
    watchers = [PollingPathWatcher(str(path), changes.append) for path in (config_file, other_file)]
    yield watchers, changes, config_file
    for watcher in watchers:
        watcher.close()


def test_config_file_pollers_stop_once(pollers, monkeypatch):
    (config_watcher, other_watcher), changes, config_file = pollers
    other_file = other_watcher._path
    monkeypatch.setattr(config, "get_option", lambda name: "none")
    assert polling.stop_config_file_polling() == 1
    assert not config_watcher._active and other_watcher._active
    assert polling.stop_config_file_polling() == 0  # once per process
    # A stopped poller no longer sees an edit; the other one still does.
    time.sleep(0.3)
    config_file.write_text("[server]\nheadless = true\n")
    other_file.write_text("y")
    time.sleep(0.8)
    assert changes == [str(other_file)]


def test_pollers_stay_where_files_are_watched(pollers, monkeypatch):
    (config_watcher, other_watcher), _, _ = pollers
    monkeypatch.setattr(config, "get_option", lambda name: "poll")
    assert polling.stop_config_file_polling() == 0
    assert config_watcher._active and other_watcher._active
