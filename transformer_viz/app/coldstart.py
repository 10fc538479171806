"""Whether this process started cold, and a way to do work off the script thread while it is.

A fresh server process has not imported torch: its first model costs seconds of imports (torch above
all; the tokenizer needs only the Rust ``tokenizers``) on top of reading the weights, while a page
without the model needs none of them. The router imports this module before anything that could
import torch, so that the answer is taken before the app's own imports change it. A process that had
torch already (a test, a notebook) counts as warm, and its pages load models in the script thread as
they always did.

Standard library only.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import Future
from typing import Callable, TypeVar

STARTED_COLD = "torch" not in sys.modules  # taken once, when the router first imports this module

T = TypeVar("T")


def in_background(name: str, work: Callable[[], T]) -> Future[T]:
    """``work()`` in a new thread (named ``name``); its result, or the exception it raised, in the
    returned future. Not a daemon thread: a process that exits while one is still importing torch
    aborts ("terminate called without an active exception"), so a server stopped during the load
    waits for it to end."""
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work())
        except BaseException as exc:  # handed to whoever waits on the future, which raises it there
            future.set_exception(exc)

    # not inherited from the script thread
    threading.Thread(target=run, name=name, daemon=False).start()
    return future
