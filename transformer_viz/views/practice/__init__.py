"""The Practice page's exercises as data: each asks a question about the student's own sentence,
answered from the live run (its traced tensors, its model) and checked at once, with three staged
hints (the last with the answer marked on one of the app's figures), the page that explains it and
the glossary terms it uses. Along the lecture's path: tokens, embeddings and positions (inputs.py),
self-attention, masks, heads, Add & Norm and the feed-forward network (layers.py), the decoder,
cross-attention, the output and decoding (output.py). progress.py reads and writes the progress the
URL carries.

No Streamlit here (tests/unit/test_layers.py): the page (app/pages/practice.py) renders any
exercise.
"""

from transformer_viz.views.practice.base import Context, Exercise, Posed, largest
from transformer_viz.views.practice.checks import (Answer, head_name, normalise, normalise_sentence,
                                                   normalise_token, parse_number, within)
from transformer_viz.views.practice.glossary import GLOSSARY, terms
from transformer_viz.views.practice.inputs import INPUT_EXERCISES, word_pieces
from transformer_viz.views.practice.layers import LAYER_EXERCISES
from transformer_viz.views.practice.output import OUTPUT_EXERCISES
from transformer_viz.views.practice.progress import (exercise_number, format_done, parse_done,
                                                     summary)

EXERCISES: tuple[Exercise, ...] = INPUT_EXERCISES + LAYER_EXERCISES + OUTPUT_EXERCISES
HINTS = 3  # two in words, the third with the answer on a figure

__all__ = ["EXERCISES", "GLOSSARY", "HINTS", "Answer", "Context", "Exercise", "Posed",
           "exercise_number", "format_done", "head_name", "largest", "normalise",
           "normalise_sentence", "normalise_token",
           "parse_done", "parse_number", "summary", "terms", "within", "word_pieces"]
