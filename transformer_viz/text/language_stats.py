"""Honest warnings about an input: text that looks like the other language, a sentence far longer
than anything the model was trained on, a fragment rather than a sentence; and the input notes in
plain words.

A model translates whatever it is given, and confidently: English typed into the German→English
model comes back as fluent nonsense. These checks are light on purpose (a table lookup per token, no
model): they only decide whether to say a word, the translation is shown either way.

The per-checkpoint statistics are computed once from the training data (``python -m transformer_viz
language-stats``) and stored beside the weights as ``language_stats.json``, so the app needs no data
at run time. No torch and no Streamlit here.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from transformer_viz.text.tokenizer import encode_source

LANGUAGE_STATS = "language_stats.json"
LANGUAGE_NAMES = {"de": "German", "en": "English"}

# A token "belongs" to a language when at least this share of its occurrences (per million tokens of
# each side, so that a longer side does not win by size) is on that side of the training data, and
# it occurred at least MIN_COUNT times in all. Names, numbers and punctuation occur on both sides
# and belong to neither: they neither raise nor calm a warning.
LEAN_SHARE = 0.9
MIN_COUNT = 3
# The text looks like the other language when, among its tokens that belong to a language, those of
# the other language are at least this share and at least MIN_OTHER of them (one stray loanword such
# as "Café" in a German sentence is not enough on its own unless it is the only evidence).
OTHER_SHARE = 0.6
MIN_OTHER = 1
# Source lengths (in tokens, with </s>) beyond this percentile of the training sources count as "far
# longer than what the model was trained on".
LENGTH_PERCENTILE = 99.9
# A fragment: at most this many words and no sentence-final punctuation ("Hund", "roter Ball").
FRAGMENT_WORDS = 2
_SENTENCE_END = ".!?…\"'»«)"


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def direction_name(src: str, tgt: str) -> str:
    """'German → English' for ('de', 'en')."""
    return f"{language_name(src)} → {language_name(tgt)}"


@dataclass(frozen=True)
class LanguageStats:
    """What a checkpoint knows of its training data: which token IDs belong to which language, and
    how long the training sources were."""

    lean: dict[int, str]  # token ID -> the language it (almost) only occurs in
    # language -> {"p50", "p99", "p99.9", "max", "sentences"}
    source_lengths: dict[str, dict[str, float]]
    corpora: tuple[str, ...] = ()

    def length_threshold(self, lang: str) -> int | None:
        """Source length (tokens, with </s>) above which a sentence is far outside the training
        data."""
        lengths = self.source_lengths.get(lang)
        return int(lengths[f"p{LENGTH_PERCENTILE:g}"]) if lengths else None

    def to_json(self) -> dict:
        by_language: dict[str, list[int]] = {}
        for token_id, lang in sorted(self.lean.items()):
            by_language.setdefault(lang, []).append(token_id)
        return {"lean_share": LEAN_SHARE, "min_count": MIN_COUNT, "corpora": list(self.corpora),
                "tokens": by_language, "source_lengths": self.source_lengths}

    @classmethod
    def from_json(cls, data: dict) -> "LanguageStats":
        lean = {int(i): lang for lang, ids in data.get("tokens", {}).items() for i in ids}
        return cls(lean, {k: dict(v) for k, v in data.get("source_lengths", {}).items()},
                   tuple(data.get("corpora", ())))


def _percentile(sorted_values: list[int], q: float) -> float:
    # nearest-rank: a length some training sentence really had
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def build_language_stats(encoded: dict[str, Iterable[list[int]]],
                         corpora: Iterable[str] = ()) -> LanguageStats:
    """``encoded``: language -> the token IDs (without special tokens) of each of its training
    sentences."""
    counts: dict[str, Counter] = {}
    lengths: dict[str, dict[str, float]] = {}
    for lang, sentences in encoded.items():
        counter, sizes = Counter(), []
        for ids in sentences:
            counter.update(ids)
            sizes.append(len(ids) + 1)  # the model sees </s> too
        counts[lang] = counter
        sizes.sort()
        if sizes:
            lengths[lang] = {"sentences": len(sizes), "p50": _percentile(sizes, 50),
                             "p99": _percentile(sizes, 99),
                             f"p{LENGTH_PERCENTILE:g}": _percentile(sizes, LENGTH_PERCENTILE),
                             "max": float(sizes[-1])}
    totals = {lang: max(1, sum(c.values())) for lang, c in counts.items()}
    lean: dict[int, str] = {}
    for token_id in set().union(*counts.values()) if counts else ():
        raw = sum(c[token_id] for c in counts.values())
        if raw < MIN_COUNT:
            continue
        rates = {lang: counts[lang][token_id] / totals[lang] for lang in counts}
        lang, rate = max(rates.items(), key=lambda kv: kv[1])
        if rate / sum(rates.values()) >= LEAN_SHARE:
            lean[token_id] = lang
    return LanguageStats(lean, lengths, tuple(corpora))


def save_language_stats(directory: str | Path, stats: LanguageStats) -> Path:
    path = Path(directory) / LANGUAGE_STATS
    path.write_text(json.dumps(stats.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def load_language_stats(directory: str | Path | None) -> LanguageStats | None:
    """The checkpoint's ``language_stats.json``, or None when it has none (the checks are then
    skipped)."""
    path = Path(directory) / LANGUAGE_STATS if directory else None
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    return LanguageStats.from_json(data)


@dataclass(frozen=True)
class LanguageVerdict:
    looks_like: str | None  # the other language's code when the text looks like it, else None
    own: int  # tokens that belong to the source language
    other: int  # tokens that belong to the other language


def check_language(stats: LanguageStats, ids: Iterable[int], src_lang: str) -> LanguageVerdict:
    """Whether source IDs look like another language than the model's source language."""
    found = Counter(stats.lean.get(i) for i in ids)
    found.pop(None, None)
    own = found.pop(src_lang, 0)
    if not found:
        return LanguageVerdict(None, own, 0)
    other_lang, other = found.most_common(1)[0]
    looks = other >= MIN_OTHER and other / (own + other) >= OTHER_SHARE
    return LanguageVerdict(other_lang if looks else None, own, other)


def words(text: str) -> list[str]:
    """Whitespace-separated pieces that hold a letter or a digit."""
    return [w for w in text.split() if any(ch.isalnum() for ch in w)]


def is_fragment(text: str) -> bool:
    """A word or two without a sentence end ("Hund", "roter Ball"): the model was trained on
    sentences and tends to make one up ("Hund" -> "Dogs are running."). Short sentences such as "Tom
    lügt." are sentences."""
    stripped = text.strip()
    return (0 < len(words(stripped)) <= FRAGMENT_WORDS
            and not stripped.endswith(tuple(_SENTENCE_END)))


def input_warnings(stats: LanguageStats | None, text: str, ids: list[int], src_lang: str,
                   tgt_lang: str) -> list[str]:
    """One plain line per problem with the input, for the top of a page; empty when there is none.

    ``ids``: the source IDs as the encoder sees them (ending in </s>); ``text``: the cleaned
    text."""
    notes = []
    if stats is not None:
        verdict = check_language(stats, ids, src_lang)
        if verdict.looks_like:
            notes.append(f"This text looks like {language_name(verdict.looks_like)}, but this "
                         f"model translates {direction_name(src_lang, tgt_lang)}: expect a "
                         "confident translation that makes no sense.")
        threshold = stats.length_threshold(src_lang)
        if threshold and len(ids) > threshold:
            notes.append(f"This sentence has {len(ids)} tokens; {LENGTH_PERCENTILE:g} % of the "
                         f"sentences the model was trained on have at most {threshold}: expect "
                         "parts to be dropped or made up.")
    if is_fragment(text):
        notes.append("This looks like a word or a fragment, not a sentence: the model was trained "
                     "on whole sentences and may make one up.")
    return notes


# --- the statistics from a checkpoint's training data, and how often the warnings fire ------------


def trained_corpora(metadata: dict) -> list[str]:
    """The training corpora a checkpoint's metadata.json names (cards of Multi30k-only models
    describe the corpus in a "corpus" entry instead of naming it as a key)."""
    return ["multi30k", "tatoeba"] if "Tatoeba" in metadata.get("data", {}) else ["multi30k"]


def stats_from_pairs(tokenizer, pairs: list[tuple[str, str]], languages: tuple[str, str],
                     corpora: Iterable[str] = ()) -> LanguageStats:
    """The statistics of training sentence pairs, ordered as ``languages``, read by the checkpoint's
    tokenizer."""
    encoded = {lang: tokenizer([pair[i] for pair in pairs], add_special_tokens=False)["input_ids"]
               for i, lang in enumerate(languages)}
    return build_language_stats(encoded, corpora)


def warning_report(stats: LanguageStats, tokenizer, split: str, pairs: list[tuple[str, str]],
                   src_lang: str, tgt_lang: str) -> list[dict]:
    """How often each warning fires on a held-out split when either side is typed in as the source:
    one row per side (the source side should rarely look like the other language, the target side
    nearly always)."""

    rows = []
    for side, lang in enumerate((src_lang, tgt_lang)):
        flagged = {"other language": 0, "too long": 0, "fragment": 0}
        for pair in pairs:
            encoded_source = encode_source(tokenizer, pair[side], max_tokens=10_000)
            flagged["other language"] += check_language(stats, encoded_source.ids,
                                                        src_lang).looks_like is not None
            flagged["too long"] += len(encoded_source.ids) > (stats.length_threshold(src_lang)
                                                              or 10_000)
            flagged["fragment"] += is_fragment(encoded_source.clean.text)
        rows.append({"checkpoint": f"{src_lang}-{tgt_lang}", "split": split, "sentences_in": lang,
                     "n": len(pairs), **{k: round(v / len(pairs), 4) for k, v in flagged.items()}})
    return rows
