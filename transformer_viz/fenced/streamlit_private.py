"""Streamlit's script-run context: which session a run of a page belongs to.

Streamlit has no public id of a session (``st.context`` offers headers, cookies, the URL, ...). The
optional run log (app/runlog.py) writes the session beside each run, so that an operator can tell
the sessions of one process apart. No speed piece.
"""

from __future__ import annotations

MEASURED_WITH = "1.67.0"  # the version this was written against; the test fails on another


def session_id() -> str | None:
    """The id of the session whose script is running in this thread; None outside a run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else None
