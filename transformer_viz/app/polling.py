"""No polling of Streamlit's config files in a server that does not watch its files.

Streamlit's server polls every config.toml it might read (``~/.streamlit/config.toml`` and the one in the
working directory, present or not) five times a second, whatever ``server.fileWatcherType`` says, so that
an edit takes effect without a restart. Each poll is a thread waking up to stat a file: about 0.0035
CPU-seconds per second per process, measured on an idle server (two files), which the process pays all
day, with or without students. This app's server reads its settings once, like its source files
(``fileWatcherType = "none"`` in .streamlit/config.toml): a changed setting needs a restart either way.

Standard library and Streamlit only; the router calls it once per process.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path

_lock = threading.Lock()
_done = False


def stop_config_file_polling() -> int:
    """Stop the pollers of Streamlit's config files when ``server.fileWatcherType`` is "none", once per
    process. Returns how many were stopped (0 on every later call, or where the option is another)."""
    global _done
    with _lock:
        if _done:
            return 0
        _done = True
    from streamlit import config
    from streamlit.watcher.polling_path_watcher import PollingPathWatcher

    if config.get_option("server.fileWatcherType") != "none":
        return 0
    config_files = {Path(p).resolve() for p in config.get_config_files("config.toml")}
    # Streamlit keeps no list of its pollers: each lives in the task it has queued for its next poll. The
    # collector's list of objects finds them (one pass, tens of milliseconds, on the process's first run).
    stopped = 0
    for obj in gc.get_objects():
        # type(), not isinstance(): the latter asks some objects for their __class__, which a deprecated
        # alias (torch.distributed.reduce_op) answers with a warning.
        if type(obj) is PollingPathWatcher and Path(obj._path).resolve() in config_files:
            obj.close()  # its next poll sees it closed and schedules no other
            stopped += 1
    return stopped
