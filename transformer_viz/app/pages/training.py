"""Training: the model card's loss and BLEU curves, the warm-up learning-rate schedule, and teacher
forcing with its loss on the current sentence."""

import math

import pandas as pd
import streamlit as st

from transformer_viz.app import frame, loaders, sidebar, widgets
from transformer_viz.views.lecture.figures import lr_curve
from transformer_viz.engine import teacher_forced_logits, teacher_forcing_losses
from transformer_viz.plots.common import safe_label, token_text
from transformer_viz.plots.training import expected_token_figure, history_figure, lr_schedule_figure
from transformer_viz.text.tokenizer import InputError
from transformer_viz.training.schedule import learning_rate
from transformer_viz.training.translation import TrainConfig

# what a model card that records no schedule or smoothing was trained with
TRAINING_DEFAULTS = TrainConfig()


@st.cache_resource(show_spinner="Running teacher forcing…", max_entries=64)
def reference_logits(checkpoint: str, sentence: str, reference: str):
    return teacher_forced_logits(loaders.get_checkpoint(checkpoint), sentence, reference)


# The curves and the schedule come from the model card: they show even when the sentence is refused.
ctx = frame.page_context(__file__)
sel, _ = frame.page_header(
    ctx,
    "The model learns from sentence pairs by **teacher forcing**: the decoder is given the correct "
    "target shifted right by one position and must predict, at every position at once, the next "
    "correct token. The loss is the cross-entropy of those predictions (with label smoothing in "
    "training), minimised by Adam with the paper's warm-up learning-rate schedule.", run=False)
ckpt = loaders.get_checkpoint(sel.checkpoint)
meta, cfg = ckpt.metadata, ckpt.config
training = meta.get("training") or {}
st.markdown(
    f"**Dropout** (rate {cfg.dropout:g} for this model) acts only in training: it zeroes that "
    "share of the entries of each sublayer's output before the residual addition, and of the "
    "embeddings + positional encodings "
    + (f", and of the attention weights (rate {cfg.attn_dropout:g})" if cfg.attn_dropout else "")
    + ". At inference — on every page of this app — it is off, so every number shown is "
    "deterministic.")

# --- curves from the model card ------------------------------------------------------------------
st.header("1 · Loss and BLEU during training")
history = [row for row in meta.get("history") or [] if isinstance(row, dict)]
if not history:
    st.info("This checkpoint's model card has no training history, so there are no curves to draw.")
else:
    if len(history) < 2:
        st.info(f"The model card records only {len(history)} epoch: a single point, not yet a "
                "curve.")
    best = max(history, key=lambda row: row.get("val_bleu") or float("-inf"))
    st.latex(r"\text{%d epochs, %d steps; best validation BLEU } %.2f \text{ at epoch } %d"
             % (len(history), int(history[-1].get("step") or 0), best.get("val_bleu") or 0.0,
                int(best.get("epoch") or 0)))
    fig = widgets.cached_figure(history_figure, history,
                                title="Loss (left) and validation BLEU (right) per epoch")
    widgets.chart(fig, pd.DataFrame(history), "training-history")

# --- learning-rate schedule ----------------------------------------------------------------------
st.header("2 · Learning-rate schedule")
left, right = st.columns(2)
card_warmup = min(max(int(training.get("warmup", TRAINING_DEFAULTS.warmup)), 1), 1_000_000)
card_factor = min(max(float(training.get("lr_factor", TRAINING_DEFAULTS.lr_factor)), 0.01), 100.0)
warmup = left.number_input("warmup steps", 1, 1_000_000, card_warmup, step=500,
                           key="training_warmup")
factor = right.number_input("factor", 0.01, 100.0, card_factor, step=0.1, key="training_factor")
trained_steps = training.get("steps") or (history[-1].get("step") if history else None)
total = max(3 * warmup, int(trained_steps or 0))
peak = learning_rate(warmup, cfg.d_model, warmup, factor)
# Two lines: on one, the formula and its peak were wider than the page.
st.latex(r"lrate = \text{factor} \cdot d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot "
         r"warmup^{-1.5})")
st.latex(r"\text{peak at } step = warmup = %d:\ %.3g \cdot %d^{-0.5} \cdot %d^{-0.5} = %.3e"
         % (warmup, factor, cfg.d_model, warmup, peak))
if "warmup" not in training:
    st.caption("The model card does not record the schedule: showing the training defaults (warmup "
               f"{TRAINING_DEFAULTS.warmup}, factor {TRAINING_DEFAULTS.lr_factor}).")
steps, lrs = lr_curve(cfg.d_model, warmup, factor, total)
marker_lr = learning_rate(int(trained_steps), cfg.d_model, warmup,
                          factor) if trained_steps else None
fig = widgets.cached_figure(lr_schedule_figure, steps, lrs, warmup, marker_step=trained_steps,
                            marker_lr=marker_lr,
                            title=f"Learning rate for d_model = {cfg.d_model}")
widgets.chart(fig, {"step": steps, "learning rate": lrs}, "training-lr",
              caption="Linear warm-up while Adam's moment estimates are still unreliable, then "
              "decay with 1/√step.")

# --- teacher forcing -----------------------------------------------------------------------------
st.header("3 · Teacher forcing on this sentence")
run = frame.require_run(ctx)
reference = st.text_input(f"Reference translation ({sel.tgt_name}, optional)",
                          key="training_reference",
                          max_chars=sidebar.MAX_INPUT_CHARS,
                          help="Without one, the target is the model's own greedy translation.")
tokenizer = ckpt.tokenizer
if reference.strip():
    try:
        decoder_input, expected, logits = reference_logits(sel.checkpoint, sel.sentence, reference)
    except InputError as exc:
        st.warning("Reference translation: " + widgets.escape_markdown(str(exc)))
        st.stop()
    st.markdown("Target: **your reference translation**, as a training pair would give it: the "
                "loss below is the training loss on this pair (computed without dropout, which "
                "acts only in training).")
    name = r"\mathcal{L}"
else:
    decoder_input, expected = run.tgt_ids, run.predicted_ids
    logits = run.trace["logits"][0]  # (T, V)
    st.warning("No reference translation: the target is the model's **own greedy output**, so the "
               "loss below is its loss on what it already chose — **not a training loss**, and "
               "lower than on a real reference. Type a reference above to see the training loss.")
    name = r"\mathcal{L}_{\text{own output}}"
smoothing = float(training.get("label_smoothing", TRAINING_DEFAULTS.label_smoothing))
losses = teacher_forcing_losses(logits, expected, smoothing, cfg.pad_id)
input_tokens = [token_text(t) for t in tokenizer.convert_ids_to_tokens(decoder_input)]
expected_tokens = [token_text(t) for t in tokenizer.convert_ids_to_tokens(expected)]
table = pd.DataFrame({"position t": range(len(expected)), "decoder input": input_tokens,
                      "expected output": expected_tokens, "p(expected)": losses["p"],
                      "−log p": losses["nll"]})
st.dataframe(table, hide_index=True)
labels = [f"{t} {safe_label(a)} → {safe_label(b)}" for t,
          (a, b) in enumerate(zip(input_tokens, expected_tokens))]
fig = widgets.cached_figure(expected_token_figure, labels, losses["p"],
                            title="Probability the model gives to each expected token")
widgets.chart(fig, table, "training-teacher-forcing")
n = len(expected)
st.latex(r"%s = -\frac{1}{n}\sum_{t=1}^{n} \log p(y_t \mid y_{<t}, x) = \frac{%.4f}{%d} = %.4f"
         r"\ \text{nats}\quad(\text{perplexity } e^{%s} = %.3g)"
         % (name, losses["nll"].sum(), n, losses["ce"], name, math.exp(min(losses["ce"], 700.0))))
st.latex(r"\text{with label smoothing } \varepsilon_{ls} = %.2g:\ %s_{ls} = "
         r"-\frac{1}{n}\sum_t\Big[(1-\varepsilon_{ls})\log p(y_t) + "
         r"\frac{\varepsilon_{ls}}{V}\sum_v \log p(v)\Big] = %.4f"
         % (smoothing, name, losses["smoothed"]))
