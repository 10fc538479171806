"""A checkpoint's known errors (checkpoints/known_errors.py): the Overview's note, the Lecture's
verdict and the model card say that a translation the metadata names is wrong, and why, even where
chrF scores it high; any other translation of the sentence is judged as before."""

from __future__ import annotations

from transformer_viz.app.examples import reference_note
from transformer_viz.checkpoints.cards import model_card
from transformer_viz.checkpoints.known_errors import known_error
from transformer_viz.models.transformer.config import ModelConfig

SOURCE = "The kids were scared of the lions, so they left right away."
WRONG = "Die Kinder hatten Angst vor den Lippen, also sind sie gleich weggegangen."
META = {"known_errors": [{"source": SOURCE, "translation": WRONG,
                          "error": "“Lippen” (lips) where the sentence says lions (“Löwen”)."}]}


def test_only_the_named_translation_of_the_named_sentence_is_a_known_error():
    assert known_error(META, f" {SOURCE} ", f"{WRONG} ").startswith("“Lippen” (lips)")
    right = "Die Kinder hatten Angst vor den Löwen, also gingen sie sofort."
    assert known_error(META, SOURCE, right) is None
    assert known_error(META, "A dog runs.", WRONG) is None
    assert known_error({}, SOURCE, WRONG) is None


def test_the_overview_says_a_known_error_is_wrong_although_chrf_is_high():
    before = reference_note("en", SOURCE, WRONG)  # no metadata: chrF alone (about 63) says nothing
    assert "chrF of this model's translation against it: 6" in before and "wrong" not in before
    note = reference_note("en", SOURCE, WRONG, META)
    assert "**This translation is wrong**: “Lippen” (lips) where" in note
    right = reference_note("en", SOURCE, "Die Kinder hatten Angst vor den Löwen, also gingen sie "
                                         "sofort.", META)
    assert "wrong" not in right


def test_the_model_card_lists_the_known_errors():
    card = model_card(ModelConfig(), {"name": "x", **META})
    assert "## Known errors" in card
    assert f"- “{SOURCE}” → “{WRONG}”: “Lippen” (lips)" in card
    assert "## Known errors" not in model_card(ModelConfig(), {"name": "x"})
