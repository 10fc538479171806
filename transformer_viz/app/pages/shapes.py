"""Shapes: the size of every tensor on the way through, for the loaded model and for the paper's
base model."""

import pandas as pd
import streamlit as st

from transformer_viz import engine, views
from transformer_viz.app import frame, widgets
from transformer_viz.models.transformer.names import trace_names
from transformer_viz.plots import shapes as plots
from transformer_viz.plots.blocks import DIAGRAM_CAPTION


@st.cache_data(show_spinner="Tracing the paper's base model (random weights)…", max_entries=32)
def base_config_shapes(n_words: int, _sentence: str) -> tuple[dict[str, tuple[int, ...]], dict,
                                                              int]:
    # The shapes depend only on the number of words, so that is the whole cache key (Streamlit does
    # not hash "_" arguments): a new sentence of a length already seen costs nothing. Only the
    # shapes are kept: the traced tensors of a 48M-parameter model are not worth caching.
    base = engine.random_model_run("base", _sentence)
    return base.trace.shapes(), base.config.to_dict(), engine.random_model_parameters("base")


def dims_latex(cfg: dict, S: int, T: int) -> str:
    return (r"B = 1,\ S = %d,\ T = %d,\ d_{model} = %d,\ h = %d,\ d_k = %d,\ d_{ff} = %d,\ N = "
            r"%d,\ V = %d"
            % (S, T, cfg["d_model"], cfg["h"], cfg["d_model"] // cfg["h"], cfg["d_ff"], cfg["N"],
               cfg["vocab_size"]))


def flow_latex(steps: list[dict]) -> str:
    # The encoder's path, then the decoder's to the logits, with the numbers of this run.
    chosen = [s for s in steps if s["name"] in ("src.token_ids", "src.input",
                                                "encoder.0.self_attn.q",
                                                 "encoder.0.self_attn.weights", "encoder.out",
                                                 "decoder.0.cross_attn.weights", "logits")]
    return r" \to ".join(s["shape"] for s in chosen)


ctx = frame.page_context(__file__)
sel, run = frame.page_header(
    ctx,
    "Following the sizes is the quickest way to understand the architecture: the sentence becomes "
    "a (B, S) block of IDs, and every encoder sublayer keeps the (B, S, d_model) shape of its "
    "residual stream; the decoder's stream, over the target so far, is (B, T, d_model). Attention "
    "briefly splits the stream into h heads of d_k and builds a table of weights per head: S × S "
    "in encoder self-attention, T × T (causally masked) in decoder self-attention, T × S in "
    "cross-attention (decoder queries, encoder keys). The decoder ends in one score per vocabulary "
    "entry. B is the batch (1 here), S the source and T the target length.",
    r"\begin{aligned}\text{encoder: }& (B, S) \to (B, S, d_{model}) \to (B, h, S, d_k) \to (B, h, "
    r"S, S) \to (B, S, d_{model})\\ \text{decoder: }& (B, T, d_{model}) \to (B, h, T, T) \to (B, "
    r"h, T, S) \to (B, T, V)\end{aligned}")

cfg = run.config.to_dict()
loaded_shapes = run.trace.shapes()
base_shapes, base_cfg, base_parameters = base_config_shapes(len(run.source_text.split()),
                                                            run.source_text)
S, T = len(run.src_ids), len(run.tgt_ids)
S_base, T_base = base_shapes["src.token_ids"][1], base_shapes["tgt.token_ids"][1]
names = trace_names(max(cfg["N"], base_cfg["N"]))

st.subheader(f"Loaded model: {widgets.escape_markdown(sel.checkpoint)}")
st.latex(dims_latex(cfg, S, T))
loaded_flow = views.shapes(run)
st.latex(flow_latex(loaded_flow.data))
widgets.view_chart(loaded_flow, "shapes-flow-loaded", caption=DIAGRAM_CAPTION)

st.subheader("The paper's base model (random weights)")
V, d = base_cfg["vocab_size"], base_cfg["d_model"]
st.markdown(
    "Built from the paper's configuration with random weights, only for its shapes. It has no "
    "trained vocabulary, so each whitespace-separated word counts as one token: S differs from the "
    f"loaded model's subword count. Its made-up target is {engine.RANDOM_EXTRA_TARGET} tokens "
    f"longer than the source, so T = {T_base} ≠ S = {S_base} and cross-attention is visibly T × "
    f"S.\n\nWith V = {V:,} (this project's vocabulary size) it has **{base_parameters:,} "
    "parameters**. The paper used a shared BPE vocabulary of about 37,000 tokens and reports about "
    "65M. V enters only through the one embedding matrix that source, target and output projection "
    f"share: V · d_model = V · {d}, so the count is {base_parameters - V * d:,} + {d}·V, e.g. "
    f"{base_parameters - V * d + 37000 * d:,} for V = 37,000.")
st.latex(dims_latex(base_cfg, S_base, T_base))
base_flow = views.shape_flow(base_shapes, base_cfg["N"], "Paper base model, layer 0")
st.latex(flow_latex(base_flow.data))
widgets.view_chart(base_flow, "shapes-flow-base")

st.subheader("Every traced tensor")
st.markdown("One row per name recorded in the forward pass (see docs/trace_names.md). "
            "A model with fewer layers has no entry (—) for the deeper ones.")
rows = plots.shape_table(names, {f"loaded ({sel.checkpoint})": loaded_shapes,
                                 "paper base": base_shapes})
# Tall enough for about 25 rows at once; the columns of names wide enough for the longest
# ("broadcastable to (B, h, T, S)", "decoder.5.cross_attn.masked_scores"), the four within 1280 px.
st.dataframe(pd.DataFrame(rows), hide_index=True, height=900, width="stretch",
             column_config={"name": st.column_config.TextColumn(width=270),
                            "shape (symbols)": st.column_config.TextColumn(width=210)})
st.markdown("What each tensor is: the same formulas in every layer i.")
# A static table: its long formulas wrap instead of being cut at the edge of a cell.
st.table(pd.DataFrame(plots.formula_table(names)), hide_index=True)
