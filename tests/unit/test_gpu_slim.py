"""tools/gpu/slim.sh on a small repository of its own: hide moves the tracked weights out of the
working tree and says what travels, restore puts back the same bytes, and the checks refuse what
they should (a tree over the limit, a second hide, a restore over a changed file)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MiB = 2**20

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("sha256sum") is None,
                                reason="needs git and sha256sum")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                   check=True, capture_output=True)


def _tree(root: Path) -> dict[str, str]:
    """Every file under root but .git -> its SHA-256."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two checkpoints whose weights are 3 MiB and 2 MiB, each with a tokenizer, a screenshot, a
    source file, an ignored gpu-data folder of 1 MiB and an ignored log; the script copied to
    where it lives."""
    root = tmp_path / "repo"
    (root / "tools/gpu").mkdir(parents=True)
    shutil.copy(REPO / "tools/gpu/slim.sh", root / "tools/gpu/slim.sh")
    for name, size in (("de-en", 3), ("gpt-en", 2)):
        (root / "checkpoints" / name / "tokenizer").mkdir(parents=True)
        (root / "checkpoints" / name / "model.safetensors").write_bytes(os.urandom(size * MiB))
        (root / "checkpoints" / name / "tokenizer" / "tokenizer.json").write_text('{"v": 1}\n')
    (root / "docs/screenshots").mkdir(parents=True)
    (root / "docs/screenshots/app.png").write_bytes(os.urandom(1000))
    (root / "docs/guide.md").write_text("# guide\n")
    (root / "code.py").write_text("print('hello')\n")
    (root / ".gitignore").write_text("/gpu-data/\n/gpu-init/\n*.log\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    (root / "gpu-data").mkdir()
    (root / "gpu-data" / "corpora.safetensors").write_bytes(os.urandom(MiB))
    (root / "train.log").write_text("ignored\n")
    return root


def _slim(root: Path, *args: str, limit_mib: int = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLIM_STASH": str(root.parent / "stash"), "SLIM_LIMIT_MIB": str(limit_mib)}
    return subprocess.run(["bash", str(root / "tools/gpu/slim.sh"), *args], env=env, text=True,
                          capture_output=True, timeout=60)


def _row(output: str, name: str) -> str:
    """The value of a line of check's table."""
    return next(line[len(name) + 2:].strip() for line in output.splitlines()
                if line.startswith(f"  {name} "))


def test_hide_then_restore_gives_back_the_same_bytes(repo: Path):
    before = _tree(repo)
    hidden = _slim(repo, "hide")
    assert hidden.returncode == 0, hidden.stderr
    assert not list(repo.glob("checkpoints/*/model.safetensors"))
    # What gpu_run prepare reads stays, and so do the texts under docs/.
    assert (repo / "checkpoints/de-en/tokenizer/tokenizer.json").is_file()
    assert (repo / "docs/guide.md").is_file() and not (repo / "docs/screenshots/app.png").exists()
    assert not (repo / "checkpoints/gpt-en/tokenizer/tokenizer.json").exists()
    stash = repo.parent / "stash"
    assert sorted(str(p.relative_to(stash)) for p in stash.rglob("*.safetensors")) == [
        "checkpoints/de-en/model.safetensors", "checkpoints/gpt-en/model.safetensors"]
    # What travels: the tracked files left (a few kB) and gpu-data (1 MiB).
    assert "4 tracked files not in the tree" in hidden.stdout
    assert _row(hidden.stdout, "carried gpu-data") == "1.0 MiB"
    assert _row(hidden.stdout, "in all") == "1.0 MiB"
    assert "within 60 MiB" in hidden.stdout
    assert _slim(repo, "hide").returncode == 2  # a second hide would mix two lists
    restored = _slim(repo, "restore")
    assert restored.returncode == 0, restored.stderr
    assert "restored 4 files" in restored.stdout
    assert _tree(repo) == before and not stash.exists()


def test_check_refuses_a_tree_over_the_limit(repo: Path):
    checked = _slim(repo, "check", limit_mib=5)  # 5 MiB of weights + 1 MiB of gpu-data
    assert checked.returncode == 1 and "over 5 MiB" in checked.stderr
    assert _row(checked.stdout, "tracked, in the tree").startswith("5.0 MiB (9 files; 0 tracked")
    assert _row(checked.stdout, "in all") == "6.0 MiB"
    hidden = _slim(repo, "hide", "--carry", "gpu-data", limit_mib=5)
    assert hidden.returncode == 0 and _row(hidden.stdout, "in all") == "1.0 MiB"
    assert _slim(repo, "restore").returncode == 0


def test_restore_keeps_both_copies_when_the_tree_holds_another_file(repo: Path):
    weights = repo / "checkpoints/de-en/model.safetensors"
    original = weights.read_bytes()
    assert _slim(repo, "hide").returncode == 0
    weights.write_bytes(b"not the weights")
    restored = _slim(repo, "restore")
    assert restored.returncode == 1 and "differs from the hidden copy" in restored.stderr
    stashed = repo.parent / "stash" / "checkpoints/de-en/model.safetensors"
    assert stashed.read_bytes() == original and (repo.parent / "stash/hidden.sha256").is_file()
    weights.unlink()
    assert _slim(repo, "restore").returncode == 0 and weights.read_bytes() == original


def test_check_counts_every_carried_folder(repo: Path):
    (repo / "gpu-init/de-en").mkdir(parents=True)
    (repo / "gpu-init/de-en/de-en.weights-1-of-1.safetensors").write_bytes(os.urandom(2 * MiB))
    checked = _slim(repo, "check", "--carry", "gpu-data", "--carry", "gpu-init/de-en")
    assert checked.returncode == 0, checked.stderr
    assert _row(checked.stdout, "carried gpu-init/de-en") == "2.0 MiB"
    assert _row(checked.stdout, "in all").startswith("8.0 MiB")  # 5 MiB of weights, 1 + 2 carried
