"""The sentences a Transformer lecture is made of, with the translation the lecture gives
(its reference). Plain data, below both the app (its examples, app/examples.py) and the lecture's
presets (views/lecture/presets.py), which the command line's lecture export also reads."""

LECTURE_SENTENCES_EN = {
    "The animal didn't cross the street because it was too tired.":
        "Das Tier überquerte die Straße nicht, weil es zu müde war.",
    "The animal didn't cross the street because it was too wide.":
        "Das Tier überquerte die Straße nicht, weil sie zu breit war.",
    "The kids were scared of the lions, so they left right away.":
        "Die Kinder hatten Angst vor den Löwen, also gingen sie sofort.",
    "Where there is a will, there is a way.": "Wo ein Wille ist, ist auch ein Weg.",
    "Although the sky is cloudy, it may not rain.": "Obwohl der Himmel bewölkt ist, regnet es "
                                                    "vielleicht nicht.",
    "I love machine learning.": "Ich liebe maschinelles Lernen.",
    "The computer translates the sentence into German.": "Der Computer übersetzt den Satz ins "
                                                         "Deutsche.",
    "The sun rises in the east.": "Die Sonne geht im Osten auf.",
}
