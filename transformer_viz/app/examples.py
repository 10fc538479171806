"""The example sentences the sidebar and the Masking lab offer, per source language, and the
lecture's own sentences with their reference translations."""

from __future__ import annotations

from transformer_viz.text.lecture_sentences import LECTURE_SENTENCES_EN

# The lecture's sentences (text/lecture_sentences.py) with the translation the lecture gives (its
# reference): offered as examples, and the Overview says how close the model's translation comes to
# it.
LECTURE_SENTENCES_DE = {german: english for english, german in LECTURE_SENTENCES_EN.items()}
LECTURE_SENTENCES = {"en": LECTURE_SENTENCES_EN, "de": LECTURE_SENTENCES_DE}
WRONG_BELOW = 50.0  # chrF against the reference under which a translation counts as wrong


# Picture captions (what Multi30k holds) first, then everyday sentences (what Tatoeba holds), among
# them the lecture's own examples.
EXAMPLES = {
    "de": list(dict.fromkeys([
        "Ein Mann fährt mit dem Fahrrad durch die Stadt.",
        "Zwei Hunde spielen im Schnee.",
        "Eine Frau liest ein Buch.",
        "Ein kleines Mädchen in einem roten Kleid läuft über eine Wiese.",
        "Die Katze schläft.",
        "Komm her bitte.",
        "Ich habe einen großen Hund.",
        "Wo ein Wille ist, ist auch ein Weg.",
        "Tom hat kein Talent.",
        *LECTURE_SENTENCES_DE])),
    "en": list(dict.fromkeys([
        "A man rides a bicycle through the city.",
        "Two dogs are playing in the snow.",
        "A woman is reading a book.",
        "A little girl in a red dress runs across a meadow.",
        "The cat is sleeping.",
        "Please come here.",
        "I have a big dog.",
        "Where there is a will, there is a way.",
        *LECTURE_SENTENCES_EN])),
}


def examples_for(src_lang: str) -> list[str]:
    """The examples in this source language (the German ones for a language without its own)."""
    return EXAMPLES.get(src_lang, EXAMPLES["de"])


def reference_note(src_lang: str, sentence: str, translation: str,
                   meta: dict | None = None) -> str | None:
    """For one of the lecture's sentences, a plain line on the model's translation beside the
    lecture's: their chrF, and that the translation is wrong when the chrF is under WRONG_BELOW or
    the checkpoint's metadata ``meta`` names this translation as a known error (a wrong word that
    chrF scores high). None for other sentences."""
    reference = LECTURE_SENTENCES.get(src_lang, {}).get(sentence.strip())
    if reference is None:
        return None
    from transformer_viz.checkpoints.known_errors import known_error
    from transformer_viz.generation.evaluation import sentence_chrf

    chrf = sentence_chrf(translation, reference)
    line = (f"The lecture translates it as “{reference}” (chrF of this model's translation "
            f"against it: {chrf:.0f}).")
    error = known_error(meta or {}, sentence, translation)
    if error:
        line += (f" **This translation is wrong**: {error} The pages below explain a "
                 "mistranslation. Say so when you show it.")
    elif chrf < WRONG_BELOW:
        line += (" **This translation is wrong**: the model gets this sentence wrong, so the pages "
                 "below explain a mistranslation. Say so when you show it.")
    return line
