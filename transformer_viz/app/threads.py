"""torch's thread count for a server process in which every browser session runs the same shared
model."""

from __future__ import annotations

import os

TORCH_THREADS_ENV = "TRANSFORMER_VIZ_TORCH_THREADS"  # intra-op threads per model call (default 1)


def configure_torch_threads() -> int:
    """Set torch's intra-op thread count for this server process, once, from
    TRANSFORMER_VIZ_TORCH_THREADS.

    Streamlit runs every session's script in its own thread, and they all call the one shared model.
    torch releases the GIL inside its kernels, so sessions already run in parallel on different
    cores; if every call also spread each matrix product over all cores, n concurrent sessions would
    start n × cores OpenMP threads fighting over the same cores (slower for everyone, and the
    latency of a single short sentence hardly gains from it: the matrices are tiny). One thread per
    call makes the number of busy cores equal to the number of sessions running the model at that
    moment. Raise it only on a machine with more cores than simultaneous users (e.g. a demo laptop:
    2-4).
    """
    import torch

    raw = os.environ.get(TORCH_THREADS_ENV, "").strip()
    try:
        threads = max(1, int(raw)) if raw else 1
    except ValueError:
        threads = 1
    if torch.get_num_threads() != threads:
        # process-wide; threads created later pick it up on their first op
        torch.set_num_threads(threads)
    return threads
