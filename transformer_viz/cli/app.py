"""``app``: start the Streamlit app from any directory, ``streamlit run <the installed entry
script>``.

Every argument after ``app`` goes to ``streamlit run`` unchanged (``--server.port 8502``,
``--server.headless true``, ``--help``). The settings of the repository's ``.streamlit/config.toml``
are passed as flags too (Streamlit reads that file only from the directory it starts in), unless
given on the command line; tests/unit/test_package.py checks that the two agree.

The command line never imports the app (both are clients of the library): it only names the script's
path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# transformer_viz/app/main.py: the entry script an installed package runs (the repository's app.py
# is the same).
APP_SCRIPT = Path(__file__).resolve().parents[1] / "app" / "main.py"

# The repository's .streamlit/config.toml, flattened: "section.option" -> value.
APP_OPTIONS: dict[str, object] = {
    "server.headless": True,
    "server.enableXsrfProtection": True,
    "server.enableCORS": True,
    "server.maxUploadSize": 1,
    "server.maxMessageSize": 32,
    "server.runOnSave": False,
    "server.fileWatcherType": "none",
    "runner.postScriptGC": False,
    "global.minCachedMessageSize": 2000,
    "browser.gatherUsageStats": False,
    "client.toolbarMode": "viewer",
}


def _flag_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def streamlit_command(extra: list[str]) -> list[str]:
    """The command that starts the app: ``python -m streamlit run``, the default options the command
    line does not set itself, then the command line's own arguments, then the entry script."""
    given = {arg[2:].split("=", 1)[0] for arg in extra if arg.startswith("--")}
    defaults = [f"--{name}={_flag_value(value)}" for name, value in APP_OPTIONS.items()
                if name not in given]
    return [sys.executable, "-m", "streamlit", "run", *defaults, *extra, str(APP_SCRIPT)]


def cmd_app(args) -> int:
    command = streamlit_command(args.streamlit_args)
    sys.stdout.flush()
    # the server takes this process's place: a signal to it stops the server itself
    if os.name == "posix":
        os.execv(sys.executable, command)
    return subprocess.call(command)


def add_commands(sub) -> None:
    # "+" as the prefix: no argument after `app` looks like an option of ours, so all of them reach
    # streamlit.
    p = sub.add_parser("app", help="start the Streamlit app (arguments go to `streamlit run`, e.g. "
                                   "--server.port 8502)", prefix_chars="+", add_help=False)
    p.add_argument("streamlit_args", nargs="...", help="options of `streamlit run`")
    p.set_defaults(func=cmd_app)
