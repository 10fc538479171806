"""Subword tokenizer (joint German+English BPE) and the input rules shared by the CLI and the app."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

SPECIAL_TOKENS = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
# IDs fixed by training order; ModelConfig's pad_id/bos_id/eos_id/unk_id defaults match.
PAD, BOS, EOS, UNK = 0, 1, 2, 3

# Characters removed before tokenizing: control characters (except tab/newline, turned into spaces),
# zero-width characters and bidirectional overrides, which are invisible and can disguise text.
_INVISIBLE = {
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",  # zero-width space/non-joiner/joiner, word joiner, BOM
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # bidi embeddings and overrides
    "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c",  # bidi isolates and marks
}

DEFAULT_MAX_CHARS = 1000


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2):
    """Train a BPE vocabulary on the texts (both languages together) -> transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk_token"]))
    tok.normalizer = normalizers.NFKC()
    # Metaspace marks word starts with ▁, so decoding restores spaces exactly (detokenized BLEU needs it);
    # unlike byte-level BPE, a character never seen in training becomes the visible <unk>.
    # Punctuation is split off too, so "Fahrrad." and "Fahrrad" share the subword "▁Fahrrad".
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()])
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[SPECIAL_TOKENS[k] for k in ("pad_token", "bos_token", "eos_token", "unk_token")],
        show_progress=False,
        # Characters typed in markup or special-token look-alikes ("<pad>") stay ordinary text, not <unk>.
        initial_alphabet=list("<>/\\[]{}()#@&*+=%$^~|_"),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def wrap(backend):
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL_TOKENS)
    protect_special_tokens(tokenizer)
    return tokenizer


def protect_special_tokens(tokenizer) -> None:
    # Typed text such as "<pad>" must stay text: split it into ordinary subwords.
    tokenizer.backend_tokenizer.encode_special_tokens = True
    tokenizer.split_special_tokens = True
    for token, expected in zip(("<pad>", "<s>", "</s>", "<unk>"), (PAD, BOS, EOS, UNK)):
        if tokenizer.convert_tokens_to_ids(token) != expected:
            raise ValueError(f"tokenizer has {token} at id {tokenizer.convert_tokens_to_ids(token)}, expected {expected}")


def load_tokenizer(directory: str | Path):
    """Load a tokenizer saved with ``save_pretrained`` (tokenizer.json: plain JSON, no code)."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(directory))
    protect_special_tokens(tokenizer)
    return tokenizer


@dataclass
class CleanText:
    """The result of applying the input rules to user text."""

    text: str
    removed: list[str] = field(default_factory=list)  # descriptions of removed characters, e.g. "U+200B ZERO WIDTH SPACE"
    truncated_chars: int = 0  # characters cut beyond the length cap

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    def messages(self) -> list[str]:
        notes = []
        if self.removed:
            unique = sorted(set(self.removed))
            notes.append(f"Removed {len(self.removed)} invisible or control character(s): {', '.join(unique[:6])}"
                         + (" …" if len(unique) > 6 else ""))
        if self.truncated_chars:
            notes.append(f"The text was cut to {len(self.text)} characters ({self.truncated_chars} removed).")
        return notes


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'CONTROL CHARACTER')}"


def clean_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> CleanText:
    """Remove control, zero-width and bidi-override characters, collapse whitespace, cap the length."""
    removed: list[str] = []
    kept: list[str] = []
    for ch in text:
        if ch in "\t\n\r":
            kept.append(" ")
        elif ch in _INVISIBLE or unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn"):
            removed.append(_describe(ch))
        else:
            kept.append(ch)
    cleaned = re.sub(r"\s+", " ", "".join(kept)).strip()
    truncated = max(0, len(cleaned) - max_chars)
    if truncated:
        cleaned = cleaned[:max_chars].rstrip()
    return CleanText(cleaned, removed, truncated)


@dataclass
class EncodedSource:
    """Token IDs for the encoder (ending in </s>), with what the user should be told about them."""

    ids: list[int]
    tokens: list[str]
    clean: CleanText
    truncated_tokens: int = 0
    unknown: list[str] = field(default_factory=list)  # the pieces of text that became <unk>

    def messages(self) -> list[str]:
        notes = self.clean.messages()
        if self.truncated_tokens:
            notes.append(f"The sentence was cut to {len(self.ids)} tokens, the model's maximum "
                         f"({self.truncated_tokens} tokens removed).")
        if self.unknown:
            notes.append(f"{len(self.unknown)} piece(s) are not in the vocabulary and became <unk>: "
                         + ", ".join(repr(u) for u in self.unknown[:8]) + (" …" if len(self.unknown) > 8 else ""))
        return notes


class InputError(ValueError):
    """User input that cannot be run (e.g. empty); the message is meant for the user."""


def encode_source(tokenizer, text: str, max_tokens: int, max_chars: int = DEFAULT_MAX_CHARS) -> EncodedSource:
    """Apply the input rules and tokenize: IDs end with </s>, at most ``max_tokens`` in all."""
    clean = clean_text(text, max_chars)
    if clean.empty:
        raise InputError("Please type a sentence: the text is empty"
                         + (" after removing invisible characters." if clean.removed else "."))
    enc = tokenizer(clean.text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    unknown = [clean.text[a:b] or "?" for i, (a, b) in zip(ids, offsets) if i == UNK]
    keep = max_tokens - 1  # room for </s>
    truncated = max(0, len(ids) - keep)
    ids = ids[:keep] + [EOS]
    return EncodedSource(ids, tokenizer.convert_ids_to_tokens(ids), clean, truncated, unknown)


def decode(tokenizer, ids: Iterable[int]) -> str:
    """IDs -> text, dropping special tokens and stopping at </s>."""
    out = []
    for i in ids:
        i = int(i)
        if i == EOS:
            break
        if i not in (PAD, BOS):
            out.append(i)
    return tokenizer.decode(out, skip_special_tokens=False).strip()
