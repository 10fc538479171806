"""plots/training.py: the learning-rate schedule and its figure."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.figures import traces
from transformer_viz.views.lecture.figures import lr_curve
from transformer_viz.plots.training import lr_schedule_figure
from transformer_viz.training.schedule import learning_rate


def test_lr_schedule_peaks_at_warmup():
    steps, lrs = lr_curve(d_model=512, warmup=4000, factor=2.0, total_steps=20000)
    assert steps[lrs.argmax()] == 4000
    assert lrs.max() == pytest.approx(2.0 * 512**-0.5 * 4000**-0.5)
    assert np.all(np.diff(lrs[steps <= 4000]) > 0) and np.all(np.diff(lrs[steps >= 4000]) < 0)
    assert lrs[-1] == pytest.approx(learning_rate(20000, 512, 4000, 2.0))
    fig = lr_schedule_figure(steps, lrs, 4000, marker_step=10000,
                             marker_lr=learning_rate(10000, 512, 4000, 2.0))
    peak = traces(fig, "peak")[0]
    assert list(peak.x) == [4000]
    assert fig.layout.shapes[0].x0 == 4000


def test_history_loss_and_bleu_in_separate_panels():
    from transformer_viz.plots.training import history_figure

    history = [{"epoch": e, "step": 100 * e, "train_loss": 5.0 - e, "val_loss": 5.2 - e,
                "val_bleu": 8.0 * e}
               for e in (1, 2, 3)]
    fig = history_figure(history)
    bleu = traces(fig, "validation BLEU")[0]
    loss = traces(fig, "training loss")[0]
    assert ((bleu.xaxis, bleu.yaxis) == ("x2", "y2")
            and (loss.xaxis or "x", loss.yaxis or "y") == ("x", "y"))
    assert fig.layout.yaxis2.overlaying is None  # its own panel, not a second axis over the loss
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]  # side by side, not overlapping
    assert list(bleu.y) == [8.0, 16.0, 24.0]


def test_a_long_history_leaves_the_epoch_ticks_to_plotly():
    """A tick per epoch for a short run; fifteen epochs' labels overlapped on a phone."""
    from transformer_viz.plots.training import history_figure

    def history(n):
        return [{"epoch": e, "train_loss": 3.0, "val_loss": 3.1, "val_bleu": 40.0}
                for e in range(1, n + 1)]

    short, long = history_figure(history(10)), history_figure(history(15))
    assert short.layout.xaxis.dtick == 1 and short.layout.xaxis2.dtick == 1
    assert long.layout.xaxis.dtick is None and long.layout.xaxis2.dtick is None


def test_the_learning_rate_legend_stands_inside_the_plot_off_the_step_numbers():
    """Under the axis, at a projector's sizes, the legend covered the step numbers."""
    from transformer_viz.plots.training import lr_schedule_figure

    steps = np.arange(1, 1001)
    fig = lr_schedule_figure(steps, np.minimum(steps / 100, (100 / steps) ** 0.5), 100, 900, 0.3)
    legend = fig.layout.legend
    assert 0 <= legend.y <= 1 and legend.x == 1 and legend.xanchor == "right"
