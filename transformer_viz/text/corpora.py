"""Multi30k task 1: reading the raw gzip files, and batching sentence pairs by token count."""

from __future__ import annotations

import gzip
import os
import random
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import torch

from transformer_viz.text.tokenizer import BOS, EOS, PAD

SPLITS = ("train", "val", "test_2016_flickr", "test_2017_flickr")
LANGUAGES = ("de", "en")
DATA_DIR_ENV = "TRANSFORMER_VIZ_DATA"
# The dataset's public repository (Elliott et al., 2016), raw task-1 files.
DOWNLOAD_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{name}"


class DataError(RuntimeError):
    """A missing or malformed data file; the message says what is expected and how to get it."""


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    chosen = data_dir or os.environ.get(DATA_DIR_ENV)
    if not chosen:
        raise DataError(f"No data directory given: pass --data-dir DIR or set {DATA_DIR_ENV}. It "
                        "must hold Multi30k task 1 raw files such as train.de.gz and train.en.gz; "
                        "'python -m transformer_viz download-data DIR' fetches them.")
    return Path(chosen)


def file_name(split: str, lang: str) -> str:
    return f"{split}.{lang}.gz"


def _read_lines(path: Path) -> list[str]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [line.rstrip("\n").strip() for line in f]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not a readable gzip file of UTF-8 text ({exc}). Re-fetch it "
                        f"with 'python -m transformer_viz download-data {path.parent}'.") from exc


def read_split(data_dir: str | Path | None, split: str, src_lang: str, tgt_lang: str,
               limit: int | None = None) -> list[tuple[str, str]]:
    """(source, target) sentence pairs of one split; line n of one file translates line n of the
    other."""
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    directory = resolve_data_dir(data_dir)
    pairs = _read_aligned(
        [directory / file_name(split, lang) for lang in (src_lang, tgt_lang)],
        f"expected Multi30k task 1 raw files "
        f"({', '.join(file_name(s, lang) for s in SPLITS for lang in LANGUAGES)}); "
        f"fetch them with 'python -m transformer_viz download-data {directory}'.")
    return pairs[:limit] if limit else pairs


def download(directory: str | Path) -> list[Path]:
    """Fetch every split in both languages from the dataset's public repository."""
    import urllib.request

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for split in SPLITS:
        for lang in LANGUAGES:
            name = file_name(split, lang)
            target = directory / name
            if target.is_file():
                written.append(target)
                continue
            url = DOWNLOAD_URL.format(name=name)
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
                    target.write_bytes(response.read())
            except OSError as exc:
                raise DataError(f"could not download {url}: {exc}") from exc
            written.append(target)
    return written


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) source IDs ending in </s>, padded
    tgt_in: torch.Tensor  # (B, T) <s> + target, padded: the decoder input (teacher forcing)
    tgt_out: torch.Tensor  # (B, T) target + </s>, padded: what each position must predict
    n_tokens: int  # real target tokens (non-pad entries of tgt_out)

    def to(self, device) -> "Batch":
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device),
                     self.n_tokens)


def encode_pairs(tokenizer, pairs: list[tuple[str, str]], max_len: int,
                 chunk: int = 20_000) -> list[tuple[list[int], list[int]]]:
    """Tokenize pairs; sentences are cut to fit max_len positions (with </s> or <s>).

    Each distinct sentence is tokenized once and its ID list shared (an upsampled corpus repeats its
    pairs), in chunks, so that 300,000 pairs take a few hundred MB instead of gigabytes.
    """
    eos = tokenizer.eos_token_id  # EOS for ours; an imported Marian vocabulary has its own
    src_of: dict[str, list[int]] = {}
    tgt_of: dict[str, list[int]] = {}
    for side, table, limit, end in ((0, src_of, max_len - 1, [eos]), (1, tgt_of, max_len - 1, [])):
        texts = list(dict.fromkeys(pair[side] for pair in pairs))
        for start in range(0, len(texts), chunk):
            part = texts[start: start + chunk]
            for text, ids in zip(part, tokenizer(part, add_special_tokens=False)["input_ids"]):
                table[text] = ids[:limit] + end
    return [(src_of[s], tgt_of[t]) for s, t in pairs]


def make_batch(examples: list[tuple[list[int], list[int]]], pad_id: int = PAD, bos_id: int = BOS,
               eos_id: int = EOS) -> Batch:
    """Pad (source, target) ID lists into one batch. The IDs of all rows go in with one masked
    write per tensor rather than a tensor per row: a GPU training batch holds a thousand short
    sentences, and the per-row way took 18 ms of CPU time per batch against 3.5 ms
    (bench/batch_speed.py)."""
    src_len = torch.tensor([len(s) for s, _ in examples])  # (B,)
    tgt_len = torch.tensor([len(t) for _, t in examples])  # (B,)
    B, S, T = len(examples), int(src_len.max()), int(tgt_len.max()) + 1
    src_ids = torch.tensor(list(chain.from_iterable(s for s, _ in examples)), dtype=torch.long)
    tgt_ids = torch.tensor(list(chain.from_iterable(t for _, t in examples)), dtype=torch.long)
    # A row-major boolean mask takes each row's IDs in order: row b's first len(b) positions.
    src = torch.full((B, S), pad_id, dtype=torch.long)
    src[torch.arange(S) < src_len[:, None]] = src_ids
    tgt_in = torch.full((B, T), pad_id, dtype=torch.long)
    tgt_in[:, 0] = bos_id
    tgt_in[:, 1:][torch.arange(T - 1) < tgt_len[:, None]] = tgt_ids
    tgt_out = torch.full((B, T), pad_id, dtype=torch.long)
    tgt_out[torch.arange(T) < tgt_len[:, None]] = tgt_ids
    tgt_out[torch.arange(B), tgt_len] = eos_id
    return Batch(src, tgt_in, tgt_out, int((tgt_out != pad_id).sum()))


def token_batches(examples: list[tuple[list[int], list[int]]], max_tokens: int,
                  shuffle: bool = True, seed: int = 0) -> list[list[int]]:
    """Group example indices into batches of about ``max_tokens`` (padded source + target) tokens.

    Sorting by length before cutting keeps padding small; the batches themselves are then shuffled.
    """
    rng = random.Random(seed)
    order = list(range(len(examples)))
    if shuffle:
        rng.shuffle(order)  # random tie-break among equal lengths
    order.sort(key=lambda i: (len(examples[i][1]), len(examples[i][0])))
    batches, current, longest = [], [], 0
    for i in order:
        length = max(len(examples[i][0]), len(examples[i][1]) + 1)
        if current and (len(current) + 1) * max(longest, length) * 2 > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, length)
    if current:
        batches.append(current)
    if shuffle:
        rng.shuffle(batches)
    return batches


# --- Tatoeba: everyday sentence pairs -------------------------------------------------------------

TATOEBA_DIR_ENV = "TRANSFORMER_VIZ_TATOEBA"
TATOEBA_SPLITS = ("tatoeba_train", "tatoeba_dev", "tatoeba_test")
# pairs carved out of train.{de,en}.gz for choices (seeded, see tatoeba_split)
TATOEBA_DEV_SIZE = 2000
TATOEBA_DEV_SEED = 20261123
TATOEBA_CREDIT = ("Tatoeba (tatoeba.org, the German–English pairs as published by "
                  "manythings.org/anki), sentences under CC-BY 2.0 FR: everyday sentence pairs")
MULTI30K_CREDIT = ("Multi30k task 1 (Elliott et al., 2016): Flickr30k image captions and their "
                   "translations, for research and non-commercial use")


# looked for in this order beside the Multi30k directory
TATOEBA_BESIDE_MULTI30K = ("tatoeba-large", "tatoeba")


def resolve_tatoeba_dir(tatoeba_dir: str | Path | None, data_dir: str | Path | None = None) -> Path:
    """The Tatoeba directory: given, or from the environment, or beside Multi30k: ``tatoeba-large``
    (150,626 pairs of every length, what the shipped checkpoints learned from) when it is there,
    else ``tatoeba`` (the 42,984 short pairs of the earlier checkpoints; name it with --tatoeba-dir
    to use it beside the other)."""
    chosen = tatoeba_dir or os.environ.get(TATOEBA_DIR_ENV)
    if chosen:
        return Path(chosen)
    multi30k = data_dir or os.environ.get(DATA_DIR_ENV)
    for name in TATOEBA_BESIDE_MULTI30K if multi30k else ():
        if (Path(multi30k).parent / name).is_dir():
            return Path(multi30k).parent / name
    raise DataError(f"No Tatoeba directory: pass --tatoeba-dir DIR or set {TATOEBA_DIR_ENV} (or "
                    "keep it as 'tatoeba-large' or 'tatoeba' beside the Multi30k directory). It "
                    "must hold train.de.gz and train.en.gz, one sentence a line, the two files "
                    "aligned.")


def _read_aligned(paths: list[Path], what: str) -> list[tuple[str, str]]:
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DataError(f"missing {', '.join(missing)} in {paths[0].parent}: {what}")
    src, tgt = (_read_lines(p) for p in paths)
    # A trailing empty line is a file ending, not a sentence.
    while src and not src[-1]:
        src.pop()
    while tgt and not tgt[-1]:
        tgt.pop()
    if len(src) != len(tgt):
        raise DataError(f"{paths[0].name} has {len(src)} lines but {paths[1].name} has {len(tgt)}: "
                        f"the files must be line-aligned translations.")
    empty = [n for n, (s, t) in enumerate(zip(src, tgt), start=1) if not s or not t]
    if empty:
        raise DataError(f"{paths[0].parent}: line {empty[0]} is empty in one language "
                        f"({len(empty)} such line(s)); every line must hold a sentence in both "
                        "files.")
    return list(zip(src, tgt))


def tatoeba_split(pairs: list[tuple[str, str]], dev_size: int = TATOEBA_DEV_SIZE,
                  seed: int = TATOEBA_DEV_SEED, avoid: frozenset[str] = frozenset()
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, dev): ``dev_size`` pairs drawn at random; every training pair that shares its source
    or its target sentence with a dev pair is dropped, so dev is disjoint from train on both sides
    (as the held-back test set is disjoint from the whole file). Pairs with a sentence in ``avoid``
    are never drawn for dev (they stay in train)."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    if avoid:
        # stable: drawable ones first
        order.sort(key=lambda i: pairs[i][0] in avoid or pairs[i][1] in avoid)
    dev = [pairs[i] for i in sorted(order[:dev_size])]
    dev_src, dev_tgt = {s for s, _ in dev}, {t for _, t in dev}
    train = [pairs[i] for i in sorted(order[dev_size:]) if pairs[i][0] not in dev_src
             and pairs[i][1] not in dev_tgt]
    return train, dev


def sentences_to_avoid_in_dev(directory: Path) -> frozenset[str]:
    """The sentences of the smaller ``tatoeba/`` corpus's training split when ``directory`` is
    another Tatoeba directory beside it (such as ``tatoeba-large/``, which contains most of it): a
    model warm-started from checkpoints trained on that split has seen them, so they must not be in
    this directory's dev split. Empty when there is no such neighbour."""
    small = directory.parent / "tatoeba"
    if small.resolve() == directory.resolve() or not all(
            (small / f"train.{lang}.gz").is_file() for lang in LANGUAGES):
        return frozenset()
    pairs = _read_aligned([small / f"train.{lang}.gz" for lang in LANGUAGES], "")
    train, _ = tatoeba_split(pairs)
    return frozenset(s for pair in train for s in pair)


def read_tatoeba(tatoeba_dir: str | Path | None, split: str, src_lang: str, tgt_lang: str,
                 limit: int | None = None,
                 data_dir: str | Path | None = None) -> list[tuple[str, str]]:
    """(source, target) pairs of ``tatoeba_train`` / ``tatoeba_dev`` (both carved from train.*.gz)
    or ``tatoeba_test`` (test.*.gz, a held-back file, when present)."""
    if split not in TATOEBA_SPLITS:
        raise DataError(f"unknown Tatoeba split {split!r}; choose one of "
                        f"{', '.join(TATOEBA_SPLITS)}")
    directory = resolve_tatoeba_dir(tatoeba_dir, data_dir)
    stem = "test" if split == "tatoeba_test" else "train"
    pairs = _read_aligned([directory / f"{stem}.{lang}.gz" for lang in (src_lang, tgt_lang)],
                          f"expected Tatoeba files {stem}.de.gz and {stem}.en.gz (one sentence a "
                          "line, aligned)")
    if split != "tatoeba_test":
        train, dev = tatoeba_split(pairs, avoid=sentences_to_avoid_in_dev(directory))
        pairs = train if split == "tatoeba_train" else dev
    return pairs[:limit] if limit else pairs


def read_any_split(split: str, src_lang: str, tgt_lang: str, data_dir=None, tatoeba_dir=None,
                   limit: int | None = None) -> list[tuple[str, str]]:
    """A Multi30k split (train, val, test_2016_flickr, …) or a Tatoeba one (tatoeba_dev, …)."""
    if split in TATOEBA_SPLITS:
        return read_tatoeba(tatoeba_dir, split, src_lang, tgt_lang, limit=limit, data_dir=data_dir)
    return read_split(data_dir, split, src_lang, tgt_lang, limit=limit)


@dataclass(frozen=True)
class Mix:
    """How many times each corpus's training pairs appear in one epoch (upsampling by
    repetition)."""

    multi30k: int = 1
    tatoeba: int = 0

    def combine(self, multi30k: list[tuple[str, str]],
                tatoeba: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return multi30k * self.multi30k + tatoeba * self.tatoeba
