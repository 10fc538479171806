"""The house rules as a tool: `ruff check` with the rule set in pyproject.toml ([tool.ruff]) finds
nothing in the tree: no line over 100 characters, one statement a line, no unused import or
undefined name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_ruff_is_the_pinned_version():
    pinned = next(line.split("==")[1]
                  for line in (ROOT / "requirements.txt").read_text().splitlines()
                  if line.startswith("ruff=="))
    assert ruff("--version").stdout.split()[1] == pinned


def test_ruff_finds_nothing():
    result = ruff("check", "--output-format", "concise", "--no-cache", ".")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_sees_a_long_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "long.py").write_text("x = " + "1 + " * 30 + "1\n")
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "E501" in result.stdout
