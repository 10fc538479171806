"""``st.cache_resource`` for a function with default arguments: one entry per call, however it is
written.

Streamlit keys a cached call by the arguments the caller wrote, not by the values the function
receives:
``get_run(name, sentence)`` and ``get_run(name, sentence, 1, True)`` were two entries, and the
second call ran the model again for a run the process already had (a page header asks with every
argument, the sidebar, the RNN page and "What does a head do?" with two). :func:`shared_resource`
fills in the defaults before the cache sees the call.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable

import streamlit as st


def shared_resource(**cache_options) -> Callable:
    """``st.cache_resource(**cache_options)``, keyed by the call with its defaults filled in and
    every argument given by position. The wrapper keeps the cache's ``clear``."""

    def decorate(func: Callable) -> Callable:
        cached = st.cache_resource(**cache_options)(func)
        signature = inspect.signature(func)

        @functools.wraps(func)
        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return cached(*bound.args, **bound.kwargs)

        call.clear = cached.clear
        return call

    return decorate
