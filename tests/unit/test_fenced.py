"""transformer_viz/fenced/: the only place that uses a library's private internals. Each piece fails
here, loudly, when the installed library is another version than the one it was measured with, or
when it stops doing what it did."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import plotly
import plotly.graph_objects as go
import streamlit
import torch
from torch import nn

from transformer_viz.fenced import plotly_private, streamlit_private, torch_private
from transformer_viz.plots.common import TEMPLATE

PACKAGE = Path(__file__).resolve().parents[2] / "transformer_viz"
PRIVATE = re.compile(r"_plotly_utils|\._validate\b|streamlit\.(runtime|watcher|web|elements)"
                     r"|gc\.get_objects|\._modules\b|\._parameters\b")


def test_plotly_is_the_version_the_fence_was_measured_with():
    assert plotly.__version__ == plotly_private.MEASURED_WITH, (
        f"plotly {plotly.__version__}: measure fenced/plotly_private.py again "
        f"(bench/fenced_gain.py), then set MEASURED_WITH")


def test_streamlit_is_the_version_the_fence_was_written_against():
    assert streamlit.__version__ == streamlit_private.MEASURED_WITH, (
        f"Streamlit {streamlit.__version__}: check fenced/streamlit_private.py, then set "
        f"MEASURED_WITH")


def test_a_template_assigned_unvalidated_gives_the_same_figure_as_validated():
    z = np.arange(12.0).reshape(3, 4)
    validated, unvalidated = go.Figure(go.Heatmap(z=z)), go.Figure(go.Heatmap(z=z))
    validated.layout.template = TEMPLATE
    plotly_private.assign_unvalidated(unvalidated.layout, "template", TEMPLATE)
    assert json.loads(unvalidated.to_json()) == json.loads(validated.to_json())
    assert unvalidated.layout._validate  # switched back on
    assert unvalidated.layout.template.layout.font.family == TEMPLATE.layout.font.family


def test_the_session_id_is_none_outside_a_run():
    assert streamlit_private.session_id() is None


def test_nothing_outside_the_fence_uses_private_internals():
    users = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
             if "fenced" not in p.parts and PRIVATE.search(p.read_text(encoding="utf-8"))]
    assert users == []


def test_torch_is_the_version_the_fence_was_measured_with():
    assert torch.__version__.split("+")[0] == torch_private.MEASURED_WITH, (
        f"torch {torch.__version__}: measure fenced/torch_private.py again, then set "
        f"MEASURED_WITH")


def test_a_submodule_at_hand_is_the_registered_one_and_follows_a_replacement():
    block = nn.Sequential()
    block.proj = nn.Linear(2, 2)
    torch_private.submodules_at_hand(block)
    assert "proj" in vars(block) and block.proj is block._modules["proj"]
    replacement = nn.Linear(2, 2)
    block.proj = replacement
    assert block.proj is replacement and dict(block.named_children())["proj"] is replacement


def test_the_norm_parameters_are_the_layer_norms_own():
    norm = nn.LayerNorm(4)
    weight, bias = torch_private.norm_parameters(norm)
    assert weight is norm.weight and bias is norm.bias
