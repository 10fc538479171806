"""tools/gpu/train_base.sh hands each direction's process its own flags: --compile names the
directions that run compiled, so that one command can compare the compiled loop with the eager
one. A stand-in for Python records the command lines instead of training."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _command_lines(tmp_path: Path, *flags: str) -> dict[str, list[str]]:
    python = tmp_path / "python"
    python.write_text('#!/usr/bin/env bash\necho "$@" >> "$ARGS_LOG"\n')
    python.chmod(0o755)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "corpora.safetensors").write_bytes(b"")
    log = tmp_path / "args.txt"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHON": str(python), "ARGS_LOG": str(log), "OUT": str(tmp_path / "out")}
    done = subprocess.run([str(REPO / "tools/gpu/train_base.sh"), "--data", str(data), "--work",
                           str(tmp_path / "work"), *flags], env=env, capture_output=True,
                          text=True, timeout=60)
    assert "start" in done.stdout, done.stderr  # it got as far as starting the processes
    lines = [line.split() for line in log.read_text().splitlines()]
    return {line[line.index("--direction") + 1]: line for line in lines}


@pytest.mark.parametrize("compiled", ["", "en-de", "de-en", "both"])
def test_compile_reaches_the_directions_it_names(tmp_path, compiled):
    flags = ["--compile", compiled] if compiled else []
    lines = _command_lines(tmp_path, *flags, "--", "--eval-every", "100")
    assert sorted(lines) == ["de-en", "en-de"]
    for direction, line in lines.items():
        assert ("--compile" in line) == (compiled in (direction, "both"))
        assert line[-2:] == ["--eval-every", "100"]  # the flags after -- come last


def test_compile_refuses_a_direction_it_does_not_know(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path / "out")}
    done = subprocess.run([str(REPO / "tools/gpu/train_base.sh"), "--compile", "fr-en"], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stderr.strip() == "--compile must be de-en, en-de or both"
