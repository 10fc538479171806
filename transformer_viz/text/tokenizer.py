"""Subword tokenizer (joint German+English BPE) and the input rules shared by the CLI and the
app."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from transformer_viz.core.special_tokens import BOS, EOS, PAD, SPECIAL_TOKENS, UNK, output_ids  # noqa: F401

# Characters removed before tokenizing, because they are invisible and can disguise text: control
# characters (tab, newline and the other whitespace controls become a space), every format character
# (category Cf: zero-width space/joiner, bidi embeddings, overrides, isolates and marks, soft
# hyphen, tag characters, BOM, …), lone surrogates (they cannot even be encoded as UTF-8),
# non-characters, variation selectors and the "filler" letters that render as nothing.
_INVISIBLE_EXTRA = {
    "\u034f",  # combining grapheme joiner
    "\u115f", "\u1160", "\u3164", "\uffa0",  # Hangul fillers: letters that draw nothing
}
_ORDINARY_WHITESPACE = "\t\n\r"
_CATEGORY_NAMES = {"Cc": "control character", "Cf": "format character", "Cs": "lone surrogate",
                   "Cn": "non-character", "Mn": "variation selector"}


def _invisible(ch: str) -> bool:
    o = ord(ch)
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Cs"):
        return True
    # non-characters, never meant for interchange
    if 0xFDD0 <= o <= 0xFDEF or (o & 0xFFFE) == 0xFFFE:
        return True
    # variation selectors
    return ch in _INVISIBLE_EXTRA or 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF


DEFAULT_MAX_CHARS = 1000

# One tokenizer serves every session of the app. transformers reconfigures the shared Rust tokenizer
# (truncation, padding, special-token handling) inside any call that asks for different settings,
# and PyO3 then refuses a concurrent call with "RuntimeError: Already borrowed". Tokenizing a
# sentence takes microseconds, so serialising our calls costs nothing measurable and rules that out.
_TOKENIZER_LOCK = threading.Lock()


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8000,
                    min_frequency: int = 2) -> SubwordTokenizer:
    """Train a BPE vocabulary on the texts (both languages together)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk_token"]))
    tok.normalizer = normalizers.NFKC()
    # Metaspace marks word starts with ▁, so decoding restores spaces exactly
    # (detokenized BLEU needs it); unlike byte-level BPE, a character never seen in training becomes
    # the visible <unk>. Punctuation is split off too, so "Fahrrad." and "Fahrrad" share the subword
    # "▁Fahrrad".
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(),
                                                 pre_tokenizers.Punctuation()])
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[SPECIAL_TOKENS[k]
                        for k in ("pad_token", "bos_token", "eos_token", "unk_token")],
        show_progress=False,
        # Characters typed in markup or special-token look-alikes ("<pad>") stay ordinary text, not
        # <unk>.
        initial_alphabet=list("<>/\\[]{}()#@&*+=%$^~|_"),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return SubwordTokenizer(tok)


class SubwordTokenizer:
    """Our BPE vocabulary (a Rust ``tokenizers.Tokenizer``) behind the part of transformers'
    fast-tokenizer interface the project uses:
    ``tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)``,
    ``convert_ids_to_tokens``, ``convert_tokens_to_ids``, ``decode``, ``get_vocab``, ``len`` and the
    special tokens and IDs. It gives what
    ``PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL_TOKENS)`` with
    ``split_special_tokens`` gives (tests/unit/test_tokenizer.py compares them), without importing
    transformers: that import is 0.6 CPU-seconds and 20 MiB of a fresh server's first model load,
    and the app never needs the rest of it. :meth:`save_pretrained` writes the files transformers
    would.

    Typed "<pad>", "<s>", "</s>" or "<unk>" stays text: it is split into ordinary subwords, never
    read as the special token. Every method only reads the Rust tokenizer, so sessions may share
    one."""

    def __init__(self, backend) -> None:
        self.backend_tokenizer = backend
        backend.encode_special_tokens = True
        for name, token in SPECIAL_TOKENS.items():
            setattr(self, name, token)
            setattr(self, f"{name}_id", backend.token_to_id(token))
        for token, expected in zip(("<pad>", "<s>", "</s>", "<unk>"), (PAD, BOS, EOS, UNK)):
            if backend.token_to_id(token) != expected:
                raise ValueError(f"tokenizer has {token} at id {backend.token_to_id(token)}, "
                                 f"expected {expected}")

    def __len__(self) -> int:
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    def __call__(self, text: str | list[str], add_special_tokens: bool = True,
                 return_offsets_mapping: bool = False) -> dict:
        """{"input_ids": ids} for a text, or a list of them for a list of texts; with
        ``offset_mapping`` (each token's character span in the text) when asked. Ours adds no
        special tokens either way."""
        single = isinstance(text, str)
        encodings = self.backend_tokenizer.encode_batch([text] if single else list(text),
                                                        add_special_tokens=add_special_tokens)
        out = {"input_ids": [e.ids for e in encodings]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encodings]
        return {key: value[0] for key, value in out.items()} if single else out

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        if isinstance(ids, int):
            return self.backend_tokenizer.id_to_token(ids)
        return [self.backend_tokenizer.id_to_token(int(i)) for i in ids]

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        if isinstance(tokens, str):
            found = self.backend_tokenizer.token_to_id(tokens)
            return self.unk_token_id if found is None else found
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        return self.backend_tokenizer.decode([int(i) for i in ids],
                                             skip_special_tokens=skip_special_tokens)

    def save_pretrained(self, directory: str) -> None:
        """tokenizer.json and tokenizer_config.json, as transformers writes them
        (it is imported here)."""
        from tokenizers import Tokenizer

        # A copy: transformers' wrapper may change the Rust tokenizer it is given, and sessions
        # share this one.
        hf_tokenizer(Tokenizer.from_str(self.backend_tokenizer.to_str())).save_pretrained(directory)


def hf_tokenizer(backend):
    """The same vocabulary as a transformers ``PreTrainedTokenizerFast``, for what hands it to
    transformers (saving, exporting a Marian directory). Typed special tokens stay text there
    too."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL_TOKENS)
    tokenizer.backend_tokenizer.encode_special_tokens = True
    tokenizer.split_special_tokens = True
    return tokenizer


def load_tokenizer(directory: str | Path) -> SubwordTokenizer:
    """Load a tokenizer saved with ``save_pretrained``, reading only its tokenizer.json.

    tokenizer.json is plain JSON parsed by the Rust ``tokenizers`` library: no code runs, nothing is
    fetched from the network, and tokenizer_config.json (which could name other classes) is not
    read.
    """
    from tokenizers import Tokenizer

    path = Path(directory) / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"{Path(directory)} has no tokenizer.json")
    return SubwordTokenizer(Tokenizer.from_file(str(path)))


@dataclass
class CleanText:
    """The result of applying the input rules to user text."""

    text: str
    # descriptions of removed characters, e.g. "U+200B ZERO WIDTH SPACE"
    removed: list[str] = field(default_factory=list)
    truncated_chars: int = 0  # characters cut beyond the length cap
    max_chars: int = 0  # the cap that was applied

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    def messages(self) -> list[str]:
        notes = []
        if self.removed:
            notes.append(removed_note(self.removed))
        if self.truncated_chars:
            notes.append(f"The text is longer than {self.max_chars} characters: the last "
                         f"{self.truncated_chars} character(s) were cut.")
        return notes


def _counted(items: list[str], limit: int, quote: bool = True) -> str:
    """'a' (×3), 'b', … — unique items in order of appearance, with their counts."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    shown = [(repr(k) if quote else k) + (f" (×{n})" if n > 1 else "")
             for k, n in list(counts.items())[:limit]]
    return ", ".join(shown) + (", …" if len(counts) > limit else "")


_C0_NAMES = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN "
             "ETB CAN EM SUB ESC FS GS RS US").split()


def _describe(ch: str) -> str:
    o, category = ord(ch), unicodedata.category(ch)
    name = unicodedata.name(ch, "") or _CATEGORY_NAMES.get(category, category)
    if o < 0x20 or o == 0x7F:
        name = f"{_C0_NAMES[o] if o < 0x20 else 'DEL'} ({name})"
    return f"U+{o:04X} {name}"


# Text beyond this many times the cap is not even looked at: a pasted megabyte costs nothing.
_SCAN_FACTOR = 20


def clean_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> CleanText:
    """Remove control, zero-width and bidi characters, normalise (NFC) and collapse whitespace, cap
    the length."""
    text = str(text)
    scan = max_chars * _SCAN_FACTOR
    unscanned = max(0, len(text) - scan)
    removed: list[str] = []
    kept: list[str] = []
    for ch in text[:scan]:
        if ch in _ORDINARY_WHITESPACE:
            kept.append(" ")
        elif _invisible(ch):
            removed.append(_describe(ch))
            if ch.isspace():  # vertical tab, form feed, NEL, …: still separate words
                kept.append(" ")
        else:
            kept.append(ch)
    # NFC only composes (e + U+0301 -> é): what is shown looks the same, and offsets line up with
    # it.
    cleaned = re.sub(r"\s+", " ", unicodedata.normalize("NFC", "".join(kept))).strip()
    truncated = max(0, len(cleaned) - max_chars)
    if truncated:
        cleaned = cleaned[:max_chars].rstrip()
    return CleanText(cleaned, removed, truncated + unscanned, max_chars)


@dataclass
class EncodedSource:
    """Token IDs for the encoder (ending in </s>), with what the user should be told about them.

    ``clean.text`` is the text the IDs stand for: when the token cap cuts the sentence, the part
    that was not used is in ``dropped_text`` and no longer in ``clean.text``.
    """

    ids: list[int]
    tokens: list[str]
    clean: CleanText
    truncated_tokens: int = 0
    unknown: list[str] = field(default_factory=list)  # the piece of text behind each <unk> token
    dropped_text: str = ""  # text after the token cap, not given to the model
    unk_id: int = UNK  # the vocabulary's <unk> (an imported Marian vocabulary has its own IDs)

    def messages(self) -> list[str]:
        notes = self.clean.messages()
        if self.truncated_tokens:
            notes.append(f"The sentence was cut to {len(self.ids)} tokens, the model's maximum "
                         f"number of positions: {self.truncated_tokens} token(s) "
                         f"({len(self.dropped_text)} characters at the end) were not used.")
        if self.unknown:
            notes.append(f"{self.ids.count(self.unk_id)} token(s) became <unk> because the "
                         "vocabulary lacks these characters: " + _counted(self.unknown, 8))
        return notes


class InputError(ValueError):
    """User input that cannot be run (e.g. empty); the message is meant for the user."""


def encode_source(tokenizer, text: str, max_tokens: int,
                  max_chars: int = DEFAULT_MAX_CHARS) -> EncodedSource:
    """Apply the input rules and tokenize: IDs end with </s>, at most ``max_tokens`` in all.

    Typed "<pad>", "<s>", "</s>" or "<unk>" is ordinary text (see :class:`SubwordTokenizer`);
    the only special IDs in the result are the final </s> and an <unk> for each piece of text the
    vocabulary lacks.
    """
    if max_tokens < 2:
        raise ValueError(f"max_tokens must leave room for a token and </s>, got {max_tokens}")
    clean = clean_text(text, max_chars)
    if clean.empty:
        if clean.truncated_chars:
            raise InputError(f"Please type a sentence: the first {max_chars * _SCAN_FACTOR} "
                             "characters of the text hold nothing visible, and the rest is beyond "
                             "the length limit.")
        raise InputError("Please type a sentence: the text is empty"
                         + (" after removing invisible characters." if clean.removed else "."))
    with _TOKENIZER_LOCK:
        enc = tokenizer(clean.text, add_special_tokens=False, return_offsets_mapping=True)
        pad, bos, eos, unk = special_ids(tokenizer)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    if not ids:
        raise InputError("Please type a sentence: nothing in the text can be turned into tokens.")
    # A vocabulary could in principle merge typed characters into a special token; never pass one
    # on.
    ids = [unk if i in (pad, bos, eos) else i for i in ids]
    keep = max_tokens - 1  # room for </s>
    truncated = max(0, len(ids) - keep)
    dropped = ""
    if truncated:
        cut = offsets[keep][0]
        dropped = clean.text[cut:]
        clean = CleanText(clean.text[:cut].rstrip(), clean.removed, clean.truncated_chars,
                          clean.max_chars)
        ids, offsets = ids[:keep], offsets[:keep]
    unknown = [clean.text[a:b] or "?" for i, (a, b) in _unique_spans(ids, offsets, unk) if i == unk]
    ids = ids + [eos]
    with _TOKENIZER_LOCK:
        tokens = tokenizer.convert_ids_to_tokens(ids)
    return EncodedSource(ids, tokens, clean, truncated, unknown, dropped, unk)


def special_ids(tokenizer) -> tuple[int, int | None, int, int]:
    """(<pad>, <s>, </s>, <unk>) IDs of a tokenizer: PAD, BOS, EOS, UNK for ours; an imported Marian
    vocabulary has its own and no <s> (None; its decoder starts with <pad>)."""
    return (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id,
            tokenizer.unk_token_id)


def _unique_spans(ids: list[int], offsets: list[tuple[int, int]], unk: int = UNK):
    # NFKC can expand one character into several <unk> tokens with the same span: report it once.
    last = None
    for i, span in zip(ids, offsets):
        span = tuple(span)
        if i == unk and span == last:
            continue
        last = span if i == unk else None
        yield i, span


def decode(tokenizer, ids: Iterable[int]) -> str:
    """IDs -> text, stopping at </s> and dropping the special tokens."""
    with _TOKENIZER_LOCK:
        pad, bos, eos, _ = special_ids(tokenizer)
    # a <s> the model wrote is no text either
    kept = [i for i in output_ids(ids, eos, pad) if i != bos]
    with _TOKENIZER_LOCK:
        return tokenizer.decode(kept, skip_special_tokens=False).strip()


# --- input notes in plain words -------------------------------------------------------------------

_PLAIN_NAMES = [
    (re.compile(r"VARIATION SELECTOR"), "an emoji or text variation mark"),
    (re.compile(r"ZERO WIDTH (NO-BREAK )?SPACE|BYTE ORDER MARK"), "an invisible space"),
    (re.compile(r"ZERO WIDTH (NON-)?JOINER|WORD JOINER|GRAPHEME JOINER"), "an invisible joiner"),
    (re.compile(r"SOFT HYPHEN"), "a hidden hyphenation point"),
    (re.compile(r"(LEFT|RIGHT)-TO-(LEFT|RIGHT)|DIRECTIONAL|POP DIRECTIONAL"),
     "a text-direction mark"),
    (re.compile(r"^TAG "), "an invisible tag character"),
    (re.compile(r"control character"), "a control character"),
]


def plain_character(description: str) -> str:
    """'U+FE0F VARIATION SELECTOR-16' -> 'an emoji or text variation mark (U+FE0F VARIATION
    SELECTOR-16)'."""
    name = description.split(" ", 1)[1] if " " in description else description
    for pattern, plain in _PLAIN_NAMES:
        if pattern.search(name):
            return f"{plain} ({description})"
    category = (unicodedata.category(chr(int(description[2:].split()[0], 16)))
                if description.startswith("U+") else "")
    return (f"{'a control character' if category == 'Cc' else 'an invisible character'} "
            f"({description})")


def removed_note(removed: list[str]) -> str:
    """'Removed 1 invisible character: an emoji or text variation mark (U+FE0F VARIATION
    SELECTOR-16).' for the characters clean_text removed: what it was in plain words, the code point
    for those who want it."""
    counts = Counter(removed)
    parts = [plain_character(d) + (f" ×{n}" if n > 1 else "") for d, n in counts.items()]
    shown = parts[:6] + (["…"] if len(parts) > 6 else [])
    noun = "character" if len(removed) == 1 else "characters"
    return f"Removed {len(removed)} invisible {noun}: {', '.join(shown)}."
