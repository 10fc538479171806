"""The learning-rate schedule of the paper (no torch: the Training page's plot uses it too)."""

from __future__ import annotations

DEFAULT_WARMUP = 4000  # the paper's warm-up steps


def learning_rate(step: int, d_model: int, warmup: int = DEFAULT_WARMUP,
                  factor: float = 1.0) -> float:
    """lrate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5): linear warm-up for
    ``warmup`` steps, then decay with 1/√step (Vaswani et al., 2017, §5.3)."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
