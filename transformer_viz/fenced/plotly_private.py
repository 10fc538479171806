"""plotly's private ``_validate`` switch: a value assigned without plotly's validation.

Validating a template again when it is assigned costs 11-32 ms a figure (plotly 7.1.0, a 13 × 13
heatmap, a busy 2-core machine; ``bench/fenced_gain.py``, two runs), although the template was
validated once when it was built; assigned unvalidated it costs 0.3-1.0 ms, and the figure's JSON is
the same (tests/unit/test_fenced.py). plotly assigns its own default template this way.
"""

from __future__ import annotations

# The version these numbers were measured with; the test fails on another.
MEASURED_WITH = "7.1.0"


def assign_unvalidated(obj, name: str, value) -> None:
    """``obj.<name> = value`` for a plotly object (a layout, say) without validating ``value``: only
    for a value validated before, since plotly will take anything this way."""
    validate = obj._validate
    obj._validate = False
    try:
        setattr(obj, name, value)
    finally:
        obj._validate = validate
