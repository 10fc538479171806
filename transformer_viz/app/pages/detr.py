"""Beyond text: a Detection Transformer — a canvas of handwritten digits (its seed in the URL), each
object query's box and class, where each query looks (decoder cross-attention over the feature map),
where a feature-map cell looks (encoder self-attention), and how training pairs queries with objects
(Hungarian matching)."""

import random

import streamlit as st

from transformer_viz.app import detr_view, frame, loaders, sidebar, steps, url, widgets
from transformer_viz.models.detr.config import CLASSES
from transformer_viz.plots.detr import detections_figure, query_classes_figure
from transformer_viz.vision.canvases import detections

MAX_SEED = 1_000_000

ctx = frame.page_context(__file__)
frame.page_header(
    ctx,
    "Attention can also **find things**. DETR turns an image into a grid of feature vectors with a "
    "small CNN, one encoder token per cell. Its decoder starts from a fixed set of learned "
    "**object queries**; through cross-attention each asks the image for one object: a class (or "
    "∅, nothing) and a box. In training the Hungarian algorithm pairs each true object with one "
    "query. Here: a small DETR trained on this server's CPU, on canvases of scikit-learn's digits; "
    "the digits drawn here are held-out images it never saw.",
    r"\begin{gathered}\text{tokens} = \mathrm{CNN}(x) + E_{pos},\quad "
    r"y = \mathrm{Decoder}\big(Q_{obj},\ \mathrm{Encoder}(\text{tokens})\big),\\ "
    r"\hat p_i = \mathrm{softmax}(W_c\, y_i)\ \ (\text{10 digits} + \varnothing),\quad "
    r"\hat b_i = \sigma\big(\mathrm{MLP}(y_i)\big) = (c_x, c_y, w, h)\end{gathered}",
    run=False)
name, checkpoint = loaders.page_model("detr", "the DETR checkpoint `checkpoints/detr-digits` "
                                      "(`python -m transformer_viz train-detr --run-dir RUN --out "
                                      "checkpoints/detr-digits`)")
cfg = checkpoint.config


def new_canvas() -> None:
    st.session_state["detr_seed"] = random.randint(1, MAX_SEED)


def seed_picker() -> int:
    """The canvas's seed, kept in the URL as seed= (1 … MAX_SEED; seed 0 made the training
    canvases)."""
    state = st.session_state
    if "detr_seed" not in state:  # the session's first run: the link's seed
        state["detr_seed"] = max(1, sidebar.query_index("seed", MAX_SEED
                                                        + 1)) if "seed" in st.query_params else 7
    seed_col, button_col = st.columns([2, 1], vertical_alignment="bottom")
    seed = seed_col.number_input(f"Canvas seed (1–{MAX_SEED:,})", 1, MAX_SEED, key="detr_seed")
    button_col.button("New random canvas", on_click=new_canvas, key="detr_new", width="stretch")
    url.write(seed=str(seed))
    return int(seed)


seed = seed_picker()
canvas, trace = loaders.get_detr_run(name, seed)
logits, boxes = trace["detr.class_logits"][0], trace["detr.boxes"][0]  # (M, C+1), (M, 4)
found = detections(logits, boxes)
test = checkpoint.metadata.get("test", {})
st.markdown(f"Canvas {seed} holds {len(canvas.labels)} "
            f"digit{'s' if len(canvas.labels) > 1 else ''}: "
            f"**{', '.join(str(d) for d in canvas.labels)}**. The model finds "
            f"**{', '.join(CLASSES[d.label] for d in found) or 'nothing'}** with {len(found)} of "
            f"its {cfg.n_queries} "
            f"queries." + (f" On {test.get('canvases', 0):,} new canvases: precision "
                           f"**{100 * test['precision']:.1f} %**, recall "
                           f"**{100 * test['recall']:.1f} %** (IoU ≥ 0.5, right "
                           "class)." if test else ""))
detect_tab, cross_tab, self_tab, match_tab = steps.tabs(ctx, [
    "1 · Queries → objects", "2 · Where a query looks", "3 · Where a feature cell looks",
    "4 · Training: matching"],
    key="detr_step")
query_names = [f"query {q}" for q in range(cfg.n_queries)]

if detect_tab.open:
    with detect_tab:
        texts = [f"q{d.query}: {CLASSES[d.label]} {d.score:.2f}" for d in found]
        fig = widgets.cached_figure(detections_figure, canvas.image, [d.box for d in found],
                                    [d.query for d in found],
                                    texts, title="What the queries found")
        widgets.chart(fig, {"query": [d.query for d in found],
                            "class": [CLASSES[d.label] for d in found],
                            "P": [d.score for d in found],
                            "box (cx, cy, w, h)": [d.box.round(3) for d in found]},
                      "detr-detections", caption="Each box is one query's answer, in its colour, "
                                                 "with the class and its probability; the queries "
                                                 "that say ∅ draw nothing.")
        probs = trace["detr.class_probs"][0].numpy()  # (M, C+1)
        fig = widgets.cached_figure(query_classes_figure, probs, list(CLASSES),
                                    title=f"P(class) of all {cfg.n_queries} queries "
                                    "(detr.class_probs)")
        widgets.chart(fig, widgets.token_frame(probs.T, list(CLASSES), query_names), "detr-classes",
                      caption="Every query answers every time; most say ∅. The queries split the "
                              "canvas by place: over 300 canvases, the shipped model's query 7 "
                              "found the digits at the top left, 2 at the top right, 4 at the "
                              "bottom left, 0 at the bottom right.")

if cross_tab.open:
    with cross_tab:
        detr_view.cross_step(cfg, canvas, trace, found)

if self_tab.open:
    with self_tab:
        detr_view.self_step(cfg, canvas, trace)

if match_tab.open:
    with match_tab:
        detr_view.matching_step(canvas, trace, query_names)
