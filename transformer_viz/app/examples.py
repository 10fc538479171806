"""The example sentences the sidebar and the Masking lab offer, per source language."""

from __future__ import annotations

# Picture captions (what Multi30k holds) first, then everyday sentences (what Tatoeba holds), among them
# the lecture's own examples.
EXAMPLES = {
    "de": ["Ein Mann fährt mit dem Fahrrad durch die Stadt.",
           "Zwei Hunde spielen im Schnee.",
           "Eine Frau liest ein Buch.",
           "Ein kleines Mädchen in einem roten Kleid läuft über eine Wiese.",
           "Die Katze schläft.",
           "Komm her bitte.",
           "Ich habe einen großen Hund.",
           "Wo ein Wille ist, ist auch ein Weg.",
           "Tom hat kein Talent."],
    "en": ["A man rides a bicycle through the city.",
           "Two dogs are playing in the snow.",
           "A woman is reading a book.",
           "A little girl in a red dress runs across a meadow.",
           "The cat is sleeping.",
           "Please come here.",
           "I have a big dog.",
           "Where there is a will, there is a way.",
           "The kids were scared of the lions, so they left right away."],
}


def examples_for(src_lang: str) -> list[str]:
    """The examples in this source language (the German ones for a language without its own)."""
    return EXAMPLES.get(src_lang, EXAMPLES["de"])
