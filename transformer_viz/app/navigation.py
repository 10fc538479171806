"""The app's pages, in navigation order: the one list that the router (router.py), the tests and the
benchmarks read.

The order is the lecture's: after the overview, where the Transformer came from (recurrent
encoder–decoders), then the inputs (tokens, embeddings, positions), attention (self-attention, its
mask and heads), the encoder (Add & Norm, feed-forward), the decoder (cross-attention, the output),
the masks tried out, then training (teacher forcing) before inference (decoding), then attention
beyond text (a Vision Transformer on handwritten digits, a Detection Transformer finding them on a
canvas). Shapes, a reference for every step, comes last.

Before them all, the Lecture: the whole lecture as a guided walkthrough, one step per idea, each
linking to the page that shows it in full. The root URL still opens the Overview (DEFAULT_PAGE): it
is what a student typing the address should see first (the sentence and its translation), and it
draws its figure before the model has loaded; the lecturer opens /lecture (a link with ?step=N opens
that step). Right after it, Practice: exercises along the same path on the student's own sentence
(/practice?ex=N opens exercise N).

Plain data and the standard library only, so that a benchmark or a browser test can list the pages
without importing Streamlit, torch or plotly.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    file: str  # the page script, relative to the project root
    title: str  # shown in the navigation and as the page's title
    url_path: str  # the page's address: http://host/<url_path>


PAGES: tuple[Page, ...] = (
    Page("transformer_viz/app/pages/lecture.py", "Lecture", "lecture"),
    Page("transformer_viz/app/pages/practice.py", "Practice", "practice"),
    Page("transformer_viz/app/pages/overview.py", "Overview & translation", "overview"),
    Page("transformer_viz/app/pages/rnn.py", "Before the Transformer: RNNs", "rnn"),
    Page("transformer_viz/app/pages/tokens.py", "Tokens & embeddings", "tokens"),
    Page("transformer_viz/app/pages/positional.py", "Positional encoding", "positional"),
    Page("transformer_viz/app/pages/attention.py", "Attention, step by step", "attention"),
    Page("transformer_viz/app/pages/encoder.py", "Encoder", "encoder"),
    Page("transformer_viz/app/pages/decoder.py", "Decoder", "decoder"),
    Page("transformer_viz/app/pages/masking.py", "Masking lab", "masking"),
    Page("transformer_viz/app/pages/training.py", "Training", "training"),
    Page("transformer_viz/app/pages/decoding.py", "Decoding", "decoding"),
    Page("transformer_viz/app/pages/heads.py", "What does a head do?", "heads"),
    Page("transformer_viz/app/pages/patching.py", "Why this word?", "why"),
    Page("transformer_viz/app/pages/complete.py", "Complete the sentence: decoder-only models",
         "complete"),
    Page("transformer_viz/app/pages/vit.py", "Beyond text: a Vision Transformer", "vit"),
    Page("transformer_viz/app/pages/detr.py", "Beyond text: a Detection Transformer", "detr"),
    Page("transformer_viz/app/pages/shapes.py", "Shapes", "shapes"),
)
# what the root URL opens (its url_path too)
DEFAULT_PAGE = next(p for p in PAGES if p.url_path == "overview")


def title_of(page_file: str) -> str:
    """The title of the page whose script is ``page_file`` (any path that ends in a page's file)."""
    path = page_file.replace("\\", "/")
    return next(p.title for p in PAGES if path.endswith(p.file))
