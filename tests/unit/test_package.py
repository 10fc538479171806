"""The package as a user installs it: pyproject.toml's wheel in a fresh virtual environment outside
the repository, its `transformer-viz` command (a translation, a one-line error, the app answering
its health check), and the command's `app` options against the repository's
.streamlit/config.toml."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from transformer_viz.cli import build_parser
from transformer_viz.cli.app import APP_OPTIONS, APP_SCRIPT, streamlit_command

ROOT = Path(__file__).resolve().parents[2]
SENTENCE = "Ein Hund läuft im Park."


def test_the_app_options_are_the_repositorys_streamlit_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    flat = {f"{section}.{name}": value for section, options in config.items() for name,
            value in options.items()}
    assert APP_OPTIONS == flat


def test_the_wheel_ships_every_checkpoint_directory():
    data_files = tomllib.loads(
        (ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["data-files"]
    shipped = {Path(target).relative_to("share/transformer-viz") for target in data_files}
    on_disk = {d.relative_to(ROOT) for d in (ROOT / "checkpoints").rglob("*") if d.is_dir()
               and any(d.iterdir())}
    assert on_disk <= shipped, ("add these to pyproject.toml's "
                                f"[tool.setuptools.data-files]: {sorted(on_disk - shipped)}")
    for target, patterns in data_files.items():
        assert all(list(ROOT.glob(pattern)) for pattern in patterns), target


def test_the_app_command_runs_the_packaged_entry_script_with_the_users_options_last():
    assert APP_SCRIPT == ROOT / "transformer_viz" / "app" / "main.py" and APP_SCRIPT.is_file()
    assert (ROOT / "app.py").read_text().count("from transformer_viz.app.router import main") == 1
    command = streamlit_command(["--server.port", "8502", "--server.headless=false"])
    assert (command[:4] == [sys.executable, "-m", "streamlit", "run"]
            and command[-1] == str(APP_SCRIPT))
    # the user's wins
    assert "--server.headless=false" in command and "--server.headless=true" not in command
    # defaults first
    assert command.index("--client.toolbarMode=viewer") < command.index("--server.port")
    args = build_parser("transformer-viz").parse_args(["app", "--server.headless",
                                                       "true", "--help"])
    # all of them reach streamlit
    assert args.streamlit_args == ["--server.headless", "true", "--help"]


def test_help_lists_every_command_on_one_line(capsys):
    from transformer_viz.cli import main

    assert main(["--help"], prog="transformer-viz") == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: transformer-viz")
    commands = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001 (argparse keeps them there)
    lines = out.splitlines()
    for name in commands:
        assert sum(line.split()[:1] == [name] for line in lines) == 1, name
    assert {"app", "translate", "trace", "shapes", "evaluate"} <= set(commands)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args: list, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_environment_and_runs_from_anywhere(tmp_path):
    # The sources a wheel is built from, copied, so that the build leaves nothing in the repository.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "transformer_viz", "checkpoints"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                           if (ROOT / name).is_dir() else {}))
    # With this environment's setuptools when it has one (pyproject.toml's only build requirement),
    # else pip fetches setuptools into an isolated build environment.
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w",
                  tmp_path / "dist", source],
                 tmp_path)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob("transformer_viz-*.whl"))

    env_dir, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _run([sys.executable, "-m", "venv", env_dir], tmp_path).returncode == 0
    python, command = env_dir / "bin" / "python", env_dir / "bin" / "transformer-viz"
    # requirements.txt as constraints: the wheel's own dependencies at the app's pins (torch 2.13.0,
    # the CPU build).
    installed = _run([python, "-m", "pip", "install", "-q", "--constraint",
                      ROOT / "requirements.txt", wheel], tmp_path)
    assert installed.returncode == 0, installed.stderr
    listed = _run([python, "-m", "pip", "list", "--format=freeze"], tmp_path).stdout.lower()
    assert "torch==2.13.0+cpu" in listed and "nvidia" not in listed, listed

    translated = _run([command, "translate", SENTENCE], elsewhere)
    assert translated.returncode == 0 and translated.stdout.strip(), translated.stderr
    no_model = elsewhere / "no-model"  # a config.json without its weights
    no_model.mkdir()
    shutil.copy2(ROOT / "checkpoints" / "de-en" / "config.json", no_model)
    # one line on stderr, exit code 2, as the module says
    for checkpoint in (elsewhere / "missing", no_model):
        bad = _run([command, "translate", "--checkpoint", checkpoint, SENTENCE], elsewhere)
        assert (bad.returncode == 2 and bad.stderr.startswith("error: ")
                and bad.stderr.count("\n") == 1), bad.stderr
    # Too long: a one-line error and exit code 2, as `python -m transformer_viz` gives.
    long = _run([command, "translate", "Hund" + "!" * 1000], elsewhere)
    assert long.returncode == 2 and long.stderr.startswith("error: the sentence is too long"), long
    assert len(long.stderr.strip().splitlines()) == 1, long.stderr

    # The installed app's first page, run from elsewhere on the installed checkpoints.
    page = _run([python, "-c",
                 "import pathlib, transformer_viz; from streamlit.testing.v1 import AppTest; "
                 "at = AppTest.from_file(str(pathlib.Path(transformer_viz.__file__).parent / 'app' "
                 "/ 'main.py'), "
                 f"default_timeout=120); at.query_params['s'] = {SENTENCE!r}; at.run(); "
                 "assert not at.exception, [e.value for e in at.exception]; "
                 "print(at.title[0].value)"], elsewhere)
    assert page.returncode == 0 and page.stdout.strip() == "Overview & translation", page.stderr

    port = _free_port()
    server = subprocess.Popen([str(command), "app", "--server.headless", "true",
                               "--server.port", str(port)],
                              cwd=elsewhere, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline, answer = time.monotonic() + 120, None
        while time.monotonic() < deadline and server.poll() is None and answer is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=5) as response:
                    answer = response.read().decode()
            except OSError:
                time.sleep(0.5)
        assert answer == "ok", server.stderr.read() if server.poll() is not None else "no answer"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

    # An editable install of the same sources: the command and the checkpoints come from the source
    # tree.
    assert _run([python, "-m", "pip", "uninstall", "-q", "-y", "transformer-viz"],
                tmp_path).returncode == 0
    isolation = (["--no-build-isolation"]
                 if _run([python, "-c", "import setuptools"], tmp_path).returncode == 0 else [])
    editable = _run([python, "-m", "pip", "install", "-q", "--no-deps", *isolation, "-e",
                     source], tmp_path)
    assert editable.returncode == 0, editable.stderr
    found = _run([python, "-c",
                  "from transformer_viz.core.paths import CHECKPOINTS_DIR; print(CHECKPOINTS_DIR)"],
                 elsewhere)
    assert found.stdout.strip() == str(source / "checkpoints"), found
    assert _run([command, "--help"], elsewhere).returncode == 0
