"""Server time of the "Before the Transformer: RNNs" page for a NEW sentence, models cached.

Streamlit's AppTest runs the app in this process. The page is opened (loading the three models, the
Transformer and the two RNNs, and measuring the time per sentence once), then for each of its steps
a series of sentences never seen before is typed: each rerun runs both RNNs and the Transformer on
the sentence (greedy translation + traced pass) and builds that step's figures. The median and the
maximum are reported per step. Target: <= 300 ms.

    .venv/bin/python bench/rnn_page_speed.py                       # checkpoints/ of the project
    .venv/bin/python bench/rnn_page_speed.py --checkpoints DIR --sentences 8
"""

from __future__ import annotations

from page_steps import main

SENTENCES = [
    "Ein Mann fährt mit dem Fahrrad durch die Stadt.", "Zwei Hunde spielen im Schnee.",
    "Eine Frau liest ein Buch auf einer Bank im Park.",
    "Kinder spielen am Strand mit einem roten Ball.",
    "Ein Junge springt von einem Felsen ins Wasser.", "Drei Männer arbeiten auf einer Baustelle.",
    "Eine Gruppe von Menschen steht vor einem großen Gebäude.", "Ein kleines Mädchen isst ein Eis.",
    "Ein Hund rennt über eine grüne Wiese.", "Zwei Frauen unterhalten sich in einem Café.",
    "Ein Mann in einem blauen Hemd spielt Gitarre auf der Straße.",
    "Die Katze schläft auf dem Sofa.",
]


PREFIXES = ["", "Heute: ", "Hier: ", "Dort: ", "Gestern: ", "Morgen: "]


def new_sentence(k: int) -> str:
    """The k-th sentence, different from every other one (so no cache has its run): 72 of them."""
    return PREFIXES[k // len(SENTENCES) % len(PREFIXES)] + SENTENCES[k % len(SENTENCES)]


if __name__ == "__main__":
    main(__doc__, "transformer_viz/app/pages/rnn.py", "rnn_step", "sentences", 6,
         lambda at, k: at.text_area(key="sentence").set_value(new_sentence(k)),
         {"s": "Komm her bitte."})
