"""TRANSFORMER_VIZ_RUN_LOG: one JSON line per script run, naming the process and session that ran
it."""

from __future__ import annotations

import json
import os


def test_every_run_is_logged_with_its_process_session_and_cpu(make_app, tmp_path, monkeypatch):
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("TRANSFORMER_VIZ_RUN_LOG", str(log))
    at = make_app()
    at.run()
    at.sidebar.selectbox(key="head").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    first, second = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert first["page"] == second["page"] == "Overview & translation"
    assert first["outcome"] == second["outcome"] == "ok"
    # several processes behind a proxy may share one log
    assert first["pid"] == second["pid"] == os.getpid()
    assert first["session"] and first["session"] == second["session"]
    assert 0 <= second["cpu_s"] and 0 < first["process_cpu_s"] <= second["process_cpu_s"]
    assert second["time"] >= first["time"] and second["seconds"] >= 0

