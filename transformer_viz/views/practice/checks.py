"""How a typed answer is read and checked: numbers within a tolerance, tokens and words whatever
their case, spacing or word-start mark, shapes as their numbers, heads by their kind, layer and
head. Each maker returns an :class:`Answer`, which knows the expected answer as the solution states
it and checks a typed one."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Callable, Iterable

# The marks a tokenizer puts on a piece (word start: ▁ SentencePiece, Ġ byte-level BPE;
# continuation: ##
# WordPiece, @@ subword-nmt), and the visible space the app draws for ▁: a student may copy any of
# them.
PIECE_MARKS = ("▁", "␣", "Ġ", "##", "@@")
QUOTES = "\"'“”„‘’‚«»‹›`"
REL_TOL, ABS_TOL = 0.01, 0.005  # ±1 %, or the last of 2 decimals, whichever is wider
EMPTY_WORDS = {"", "empty", "(empty)", "nothing", "none"}


@dataclass(frozen=True)
class Answer:
    """The expected answer as the solution states it (``shown``) and the check of a typed answer."""
    shown: str
    check: Callable[[str], bool]


def normalise(text: str) -> str:
    """Case, surrounding quotes and spacing do not matter: "  Der  Hund " -> "der hund"."""
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(text.split()).strip(QUOTES + " ")


def normalise_token(text: str) -> str:
    """A token with or without its word-start mark, and its position label ("3 ␣Hund"), is the
    token: "▁Hund", "␣hund", "hund" -> "hund"."""
    text = normalise(text)
    text = re.sub(r"^\d+\s+", "", text)  # the figures' labels put the position first
    for mark in PIECE_MARKS:
        text = text.replace(mark.casefold(), "")
    return text.strip()


def normalise_sentence(text: str) -> str:
    """A whole sentence: spaces before punctuation and around apostrophes do not matter either."""
    text = normalise(text)
    return re.sub(r"\s+([.,!?;:…])", r"\1", re.sub(r"\s*'\s*", "'", text))


def parse_number(text: str, integer: bool = False) -> float | None:
    """The number typed, or None: "2.83", "2,83" (a decimal comma), "1 234", "1,234" or "1_234" for
    a whole number; "≈", a name before "=" and a unit after the number are ignored."""
    text = normalise(text).rsplit("=", 1)[-1]  # "S = 8", "d_k = 8": the number after the name
    text = text.lstrip("≈~ ").replace("−", "-")
    if integer:
        text = re.sub(r"(?<=\d)[\s,_'’.](?=\d{3}\b)", "", text)
    elif text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")
    found = re.match(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", text)
    return float(found.group(0)) if found else None


def within(value: float, expected: float, rel: float = REL_TOL, abs_tol: float = ABS_TOL) -> bool:
    """Within ±``rel`` of the expected value, or ±``abs_tol``, whichever is wider."""
    return math.isfinite(value) and abs(value - expected) <= max(abs_tol, rel * abs(expected))


def number_answer(expected: float, digits: int = 2, exact: bool = False) -> Answer:
    """A number: ``exact`` for a count (a whole number, which must be right), else within
    tolerance."""
    if exact:
        whole = int(round(expected))
        return Answer(f"{whole:,}".replace(",", " "),
                      lambda typed: parse_number(typed, integer=True) == whole)
    shown = f"{expected:.{digits}f}"
    shown = shown.lstrip("-") if float(shown) == 0 else shown  # never "-0.00"
    return Answer(shown,
                  lambda typed: (v := parse_number(typed)) is not None and within(v, expected))


SPACE_WORDS = {"▁", "␣", "_", "space", "(space)", "<space>", "a space"}


def token_key(text: str) -> str:
    """What a token is compared by (:func:`normalise_token`); a piece that is only a word-start mark
    (the tokenizer writes one before some punctuation) would be empty, so it is "<space>", however
    typed."""
    key = normalise_token(text)
    return "<space>" if not key and normalise(text) in SPACE_WORDS else key


def token_answer(accepted: Iterable[str], shown: str) -> Answer:
    """One of the ``accepted`` tokens (several where weights tie within 1 %), shown as ``shown``."""
    wanted = {token_key(t) for t in accepted} - {""}
    return Answer(shown, lambda typed: token_key(typed) in wanted)


def words_answer(accepted: Iterable[str], shown: str) -> Answer:
    """One of the ``accepted`` words (or "none" where there is none), whatever its case and quotes;
    several of them, separated by commas or spaces, are right too (the solution lists them so)."""
    wanted = {normalise_token(w) for w in accepted} or {"none"}

    def check(typed: str) -> bool:
        words = [normalise_token(w) for w in re.split(r"[,;\s]+|\bor\b|\band\b", normalise(typed))]
        words = [w for w in words if w]
        return set(words or ["none"]) <= wanted

    return Answer(shown, check)


def sentence_answer(expected: str) -> Answer:
    """A whole sentence, read by :func:`normalise_sentence`; an empty one may be typed as
    "empty"."""
    want = normalise_sentence(expected)
    if want in EMPTY_WORDS:
        return Answer("(empty)", lambda typed: normalise_sentence(typed) in EMPTY_WORDS)
    return Answer(expected, lambda typed: normalise_sentence(typed) == want)


def shape_answer(shape: tuple[int, ...], batch: int = 1) -> Answer:
    """A shape, by its numbers in order: "(4, 7, 6)", "4 × 7 × 6", "[4,7,6]"; the batch axis in
    front may be written too."""
    want = tuple(int(n) for n in shape)

    def check(typed: str) -> bool:
        numbers = tuple(int(n) for n in re.findall(r"\d+", normalise(typed)))
        return numbers in (want, (batch,) + want)

    return Answer("(" + ", ".join(map(str, want)) + ")", check)


HEAD_KINDS = {"enc": "enc", "encoder": "enc", "dec": "dec", "decoder": "dec", "self": "dec",
              "cross": "cross", "crossattention": "cross", "cross-attention": "cross"}


def head_name(typed: str) -> str | None:
    """cross.1.2", "Cross 1 2", "cross-attention, layer 1, head 2" -> "cross.1.2"; None if not a
    head."""
    text = normalise(typed)
    kind = re.match(r"[a-z-]+", text)
    numbers = re.findall(r"\d+", text)
    if not kind or len(numbers) != 2 or kind.group(0).rstrip("-") not in HEAD_KINDS:
        return None
    return f"{HEAD_KINDS[kind.group(0).rstrip('-')]}.{numbers[0]}.{numbers[1]}"


def head_answer(accepted: Iterable[str], shown: str) -> Answer:
    """One of the ``accepted`` heads ("cross.1.2"), however it is spelt (:func:`head_name`)."""
    wanted = set(accepted)
    return Answer(shown, lambda typed: head_name(typed) in wanted)
