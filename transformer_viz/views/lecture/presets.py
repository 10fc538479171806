"""The lecture's own example sentences (the slides'), and an honest verdict on the model's
translation of one beside the slide's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from transformer_viz.checkpoints.known_errors import known_error
from transformer_viz.text.lecture_sentences import LECTURE_SENTENCES_EN
from transformer_viz.views.lecture.texts import pct, word

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun


@dataclass(frozen=True)
class Preset:
    label: str
    src_lang: str
    sentence: str
    reference: str  # the translation the lecture's slide gives


PRESETS: tuple[Preset, ...] = (
    Preset("RNN slide (de→en)", "de", "Komm her bitte.", "Please come here."),
    Preset("RNN slide (en→de)", "en", "Please come here.", "Komm her bitte."),
    *(Preset(label, "en", sentence, LECTURE_SENTENCES_EN[sentence]) for label, sentence in (
        ("What does “they” attend to? (en→de)",
         "The kids were scared of the lions, so they left right away."),
        ("Masking slide (en→de)", "Where there is a will, there is a way."))),
)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def chosen_probabilities(run: SentenceRun) -> np.ndarray:
    """The probability the model gave each token it wrote (and the final </s>), from the traced
    pass. (T,)"""
    probs = run.trace["probs"][0].numpy()  # (T, V)
    return probs[np.arange(len(run.predicted_ids)), run.predicted_ids]


UNSURE = 0.25  # a written token with less probability than this: the model was guessing there


def preset_verdict(preset: Preset, run: SentenceRun,
                   id_to_token: Callable[[list[int]], list[str]], meta: dict | None = None) -> str:
    """An honest line on the model's translation of a preset: the slide's translation beside it, how
    many of the slide's words it shares, and the word the model was least sure of. When the
    checkpoint's metadata ``meta`` names this translation as a known error, it says that it is wrong
    and why; else, when it shares under 60 % of the words and some word was written with
    p < UNSURE, that the translation is likely wrong."""
    wanted = _words(preset.reference)
    shared = len(wanted & _words(run.translation))
    p = chosen_probabilities(run)
    weakest = int(p.argmin())
    token = word(id_to_token([run.predicted_ids[weakest]])[0])
    line = (f"The slide translates it as “{preset.reference}”; this model writes "
            f"“{run.translation}” ({shared} of the slide's {len(wanted)} words; its least sure "
            f"word, “{token}”, had p = {pct(p[weakest])}).")
    error = known_error(meta or {}, preset.sentence, run.translation)
    if error:
        line += f" This translation is wrong: {error} Say so."
    elif shared < 0.6 * len(wanted) and p[weakest] < UNSURE:
        line += (" This translation is likely wrong in places, and the model was unsure there: say "
                 "so. It is a small model trained on picture captions and everyday sentences.")
    elif shared < 0.6 * len(wanted):
        line += (" Other words than the slide's, written confidently: another wording, or a "
                 "mistake? Ask the class.")
    return line


def preset_for(sentence: str) -> Preset | None:
    return next((p for p in PRESETS if p.sentence == sentence.strip()), None)
