"""Figure factories: pure functions, arrays in and a plotly Figure out. No Streamlit, no model."""

from transformer_viz.plots.common import heatmap, safe_label, token_labels  # noqa: F401
