"""The Lecture page's "Download this lecture as one HTML file": views/lecture/export.py's file for
the page's checkpoint, sentence, layer and head, with the speaker notes folded. Streamlit makes it
only when the button is clicked (the callable runs then, in a thread of its own), from the runs the
page already has; the last few files are kept for the next reader of the same lecture."""

from __future__ import annotations

import threading
from collections import OrderedDict

import streamlit as st

from transformer_viz.views.lecture import BEAM_K, STEPS, step_context
from transformer_viz.views.lecture.export import lecture_html_of

KEPT = 4  # files of about 6 MB each: a lecture hall shares one or two sentences
_FILES: OrderedDict[tuple, bytes] = OrderedDict()
_LOCK = threading.Lock()


def lecture_file(name: str, sentence: str, layer: int, head: int, ckpt, run) -> bytes:
    """The lecture's HTML file for checkpoint ``name``'s run of ``sentence`` (``ckpt`` and ``run``:
    the page's, loaded and traced), made once per (name, sentence, layer, head). The beam search is
    run here as loaders.get_run runs it for the page: Streamlit's caches are not called from the
    download's thread."""
    from transformer_viz.engine import run_sentence

    key = (name, sentence, layer, head)
    with _LOCK:
        if key in _FILES:
            _FILES.move_to_end(key)
            return _FILES[key]
    beam = run_sentence(ckpt, sentence, beam_size=BEAM_K, trace=False)
    ctxs = [step_context(step, ckpt, run, layer, head, beam=lambda: beam) for step in STEPS]
    data = lecture_html_of(ckpt, run, ctxs, layer, head, notes=True).encode("utf-8")
    with _LOCK:
        _FILES[key] = data
        while len(_FILES) > KEPT:
            _FILES.popitem(last=False)
    return data


def download_button(sel, ckpt, run) -> None:
    """The button, under the step; nothing is made until it is clicked."""
    st.download_button(
        "Download this lecture as one HTML file",
        lambda: lecture_file(sel.checkpoint, sel.sentence, sel.layer, sel.head, ckpt, run),
        file_name="lecture.html", mime="text/html", key="lecture_download", icon="⬇",
        help=f"All {len(STEPS)} steps on this sentence, layer and head, with the speaker notes "
             "folded: about 6 MB that open in a browser with no network and no server. The arrow "
             "keys, PageUp and PageDown (a clicker) move between the steps.")
