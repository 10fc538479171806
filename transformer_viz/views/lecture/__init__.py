"""The lecture as data: an ordered list of steps (steps.py), one per idea, from why translation
needs more than an RNN encoder–decoder to attention beyond text. Each step names its figure builder
(figures.py) and its text (texts.py, a pure function of the live run that fills in the run's own
numbers), its formula, the page it links to and its speaker notes; presets.py holds the slides'
example sentences. The Lecture page (transformer_viz/app/pages/lecture.py) renders any step.

No Streamlit here: the texts and the figure builders are plain functions of a :class:`Context`,
tested on a tiny model's run, and every client may import them (tests/unit/test_layers.py).
"""

from transformer_viz.views.lecture.context import (
    BEAM_K, LOOKUP_KEYS, Context, encoder_weights, padded_length)
from transformer_viz.views.lecture.figures import (
    FIGURES, PROJECTOR_HEIGHT, FigureSpec, draw, drawer, for_projector, lr_curve)
from transformer_viz.views.lecture.presets import (
    PRESETS, UNSURE, Preset, chosen_probabilities, preset_for, preset_verdict)
from transformer_viz.views.lecture.steps import STEPS, Notes, Step, lines, step_context, step_number
from transformer_viz.views.lecture.texts import (
    FOCUS_WORDS, focus_query, pct, strongest_link, text_add_norm, text_cross, text_detr,
    text_embeddings, text_encoder_stack, text_inference, text_lookup, text_masked_self,
    text_multihead, text_output, text_positional, text_qkv, text_rnn, text_scores, text_tokens,
    text_training, text_vit, word)

__all__ = ["BEAM_K", "FIGURES", "FOCUS_WORDS", "LOOKUP_KEYS", "PRESETS",
           "PROJECTOR_HEIGHT", "STEPS", "UNSURE", "Context", "FigureSpec", "Notes",
           "Preset", "Step", "chosen_probabilities", "draw", "drawer",
           "encoder_weights", "focus_query", "for_projector", "lines", "lr_curve",
           "padded_length", "pct", "preset_for", "preset_verdict", "step_context",
           "step_number", "strongest_link", "text_add_norm", "text_cross", "text_detr",
           "text_embeddings", "text_encoder_stack", "text_inference", "text_lookup",
           "text_masked_self", "text_multihead", "text_output", "text_positional",
           "text_qkv", "text_rnn", "text_scores", "text_tokens", "text_training",
           "text_vit", "word"]
