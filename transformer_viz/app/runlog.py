"""The run log: one JSON line per script run, for an operator (and bench/load_test.py) to see
whether the server keeps up. Off unless TRANSFORMER_VIZ_RUN_LOG names a file."""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager

# a file to append one JSON line per script run to (off when unset)
RUN_LOG_ENV = "TRANSFORMER_VIZ_RUN_LOG"

_RUN_LOG_LOCK = threading.Lock()


@contextmanager
def logged_run(page_title: str):
    """Time one script run (sidebar and page) and append it to the file named by
    TRANSFORMER_VIZ_RUN_LOG.

    The server's own share of a rerun, apart from the browser's drawing: what an operator (and
    bench/load_test.py) reads to see whether the server keeps up. Nothing is written when it is
    unset. Each line also says which process and session ran it (several processes may share one
    file behind a proxy), the CPU time of the run's own thread (`cpu_s`), and the whole process's
    CPU time so far (`process_cpu_s`): its difference between two lines is the server's CPU for
    everything in between, including what other threads did (sending messages, other sessions).
    """
    path = os.environ.get(RUN_LOG_ENV)
    if not path:
        yield
        return
    from transformer_viz.fenced.streamlit_private import session_id

    session = session_id()
    start, cpu_start, outcome = time.perf_counter(), time.thread_time(), "ok"
    try:
        yield
    except BaseException as exc:  # st.stop() and reruns end a run by raising; they are not failures
        outcome = type(exc).__name__
        raise
    finally:
        record = {"time": round(time.time(), 3), "page": page_title, "outcome": outcome,
                  "seconds": round(time.perf_counter() - start, 4),
                  "cpu_s": round(time.thread_time() - cpu_start, 4),
                  "process_cpu_s": round(time.process_time(), 3),
                  "pid": os.getpid(), "session": session}
        with _RUN_LOG_LOCK, open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
