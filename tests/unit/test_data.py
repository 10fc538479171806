"""Corpora: Multi30k and Tatoeba files read and aligned, clear errors, the dev split, the mix."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest

from tests.support.corpora import synthetic_pairs
from transformer_viz.text.corpora import (DataError, Mix, read_any_split, read_tatoeba,
                                          resolve_tatoeba_dir, tatoeba_split)
from transformer_viz.training.translation import Corpora, TrainConfig, load_corpora


def write_pairs(directory: Path, stem: str, pairs: list[tuple[str, str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for k, lang in enumerate(("de", "en")):
        with gzip.open(directory / f"{stem}.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("".join(p[k] + "\n" for p in pairs))


def everyday_pairs(n: int) -> list[tuple[str, str]]:
    # Distinct sentences, plus one source shared by two pairs (Tatoeba has many such duplicates).
    pairs = [(f"Satz {i}.", f"Sentence {i}.") for i in range(n)]
    return pairs + [("Satz 0.", "Clause 0.")]


def test_tatoeba_is_read_aligned_in_both_directions(tmp_path):
    write_pairs(tmp_path / "tatoeba", "train", everyday_pairs(50))
    de_en = read_tatoeba(tmp_path / "tatoeba", "tatoeba_dev", "de", "en")
    en_de = read_tatoeba(tmp_path / "tatoeba", "tatoeba_dev", "en", "de")
    assert [(t, s) for s, t in de_en] == en_de
    assert all(s.startswith("Satz") and t.startswith(("Sentence", "Clause")) for s, t in de_en)


def test_the_dev_split_is_disjoint_from_training_on_both_sides():
    pairs = everyday_pairs(400)
    train, dev = tatoeba_split(pairs, dev_size=40, seed=3)
    assert len(dev) == 40
    assert not {s for s, _ in dev} & {s for s, _ in train}
    assert not {t for _, t in dev} & {t for _, t in train}
    # Only pairs that share a sentence with dev are dropped.
    assert len(train) >= len(pairs) - 40 - 1
    assert tatoeba_split(pairs, dev_size=40, seed=3) == (train, dev)  # deterministic


def test_missing_misaligned_or_half_empty_tatoeba_files_give_clear_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSFORMER_VIZ_TATOEBA", raising=False)
    monkeypatch.delenv("TRANSFORMER_VIZ_DATA", raising=False)
    with pytest.raises(DataError, match="--tatoeba-dir"):
        resolve_tatoeba_dir(None)
    with pytest.raises(DataError, match="missing train.de.gz, train.en.gz"):
        read_tatoeba(tmp_path, "tatoeba_train", "de", "en")
    write_pairs(tmp_path, "train", everyday_pairs(5))
    with gzip.open(tmp_path / "train.en.gz", "wt") as f:
        f.write("one\ntwo\n")
    with pytest.raises(DataError, match="6 lines but train.en.gz has 2"):
        read_tatoeba(tmp_path, "tatoeba_train", "de", "en")
    write_pairs(tmp_path, "train", [("Hallo.", "Hello."), ("", "Nobody."), ("Ja.", "Yes.")])
    with pytest.raises(DataError, match="line 2 is empty"):
        read_tatoeba(tmp_path, "tatoeba_train", "de", "en")
    with pytest.raises(DataError, match="missing test.de.gz"):
        read_tatoeba(tmp_path, "tatoeba_test", "de", "en")


def test_tatoeba_is_found_beside_multi30k_and_through_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSFORMER_VIZ_TATOEBA", raising=False)
    write_pairs(tmp_path / "tatoeba", "test", everyday_pairs(3))
    (tmp_path / "multi30k").mkdir()
    assert resolve_tatoeba_dir(None, tmp_path / "multi30k") == tmp_path / "tatoeba"
    assert len(read_any_split("tatoeba_test", "de", "en", data_dir=tmp_path / "multi30k")) == 4
    monkeypatch.setenv("TRANSFORMER_VIZ_TATOEBA", str(tmp_path / "tatoeba"))
    assert resolve_tatoeba_dir(None) == tmp_path / "tatoeba"


def test_the_mix_repeats_each_corpus_as_configured():
    multi30k = synthetic_pairs(30, seed=1)
    tatoeba = everyday_pairs(20)
    mixed = Mix(multi30k=1, tatoeba=2).combine(multi30k, tatoeba)
    counts = Counter(mixed)
    assert len(mixed) == 30 + 2 * 21
    assert all(counts[p] == 2 * tatoeba.count(p) for p in tatoeba)
    assert sum(counts[p] for p in set(multi30k)) == 30


def test_training_corpora_mix_both_sources_and_validate_on_both():
    pairs = {"train": synthetic_pairs(30, seed=1), "val": synthetic_pairs(5, seed=2),
             "tatoeba_train": everyday_pairs(20), "tatoeba_dev": everyday_pairs(4)}
    corpora = load_corpora(TrainConfig(tatoeba_copies=2, multi30k_copies=1), pairs=pairs)
    assert isinstance(corpora, Corpora)
    assert len(corpora.train) == 30 + 2 * 21
    assert list(corpora.validation) == ["val", "tatoeba_dev"]
    assert corpora.sizes == {"multi30k_train": 30, "tatoeba_train": 21}
    multi30k_only = load_corpora(TrainConfig(), pairs=pairs)
    assert len(multi30k_only.train) == 30 and list(multi30k_only.validation) == ["val"]


def test_a_larger_tatoeba_keeps_the_smaller_ones_training_sentences_out_of_its_dev(tmp_path):
    small = everyday_pairs(2300)  # 2,000 of them go to its own dev split
    larger = small + [(f"Neuer Satz {i}.", f"New sentence {i}.") for i in range(2300)]
    write_pairs(tmp_path / "tatoeba", "train", small)
    write_pairs(tmp_path / "tatoeba-large", "train", larger)
    seen = {x for pair in read_tatoeba(tmp_path / "tatoeba", "tatoeba_train", "de", "en")
            for x in pair}
    assert len(seen) > 500
    train, dev = tatoeba_split(larger)
    assert any(s in seen or t in seen for s, t in dev)  # the plain draw would take some
    from transformer_viz.text.corpora import sentences_to_avoid_in_dev

    avoid = sentences_to_avoid_in_dev(tmp_path / "tatoeba-large")
    assert avoid == seen
    dev = read_tatoeba(tmp_path / "tatoeba-large", "tatoeba_dev", "en", "de")
    train = read_tatoeba(tmp_path / "tatoeba-large", "tatoeba_train", "en", "de")
    assert len(dev) == 2000 and not any(s in seen or t in seen for s, t in dev)
    assert not {s for s, _ in dev} & {s for s, _ in train}
    assert sentences_to_avoid_in_dev(tmp_path / "tatoeba") == frozenset()  # the smaller file itself


def test_encoding_shares_the_ids_of_repeated_sentences_and_matches_one_at_a_time(tokenizer):
    from transformer_viz.text.corpora import encode_pairs

    pairs = [("ein Hund", "a dog"), ("eine Katze", "a cat"), ("ein Hund", "a dog")] * 3
    encoded = encode_pairs(tokenizer, pairs, max_len=4, chunk=2)
    eos = tokenizer.eos_token_id
    for (s, t), (src, tgt) in zip(pairs, encoded):
        assert src == tokenizer(s, add_special_tokens=False)["input_ids"][:3] + [eos]
        assert tgt == tokenizer(t, add_special_tokens=False)["input_ids"][:3]
    assert encoded[0][0] is encoded[2][0]


def test_the_larger_tatoeba_beside_multi30k_is_preferred_and_the_smaller_stays_reachable(
        tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSFORMER_VIZ_TATOEBA", raising=False)
    (tmp_path / "multi30k").mkdir()
    write_pairs(tmp_path / "tatoeba", "train", everyday_pairs(3))
    assert resolve_tatoeba_dir(None, tmp_path / "multi30k") == tmp_path / "tatoeba"
    write_pairs(tmp_path / "tatoeba-large", "train", everyday_pairs(6))
    assert resolve_tatoeba_dir(None, tmp_path / "multi30k") == tmp_path / "tatoeba-large"
    assert resolve_tatoeba_dir(tmp_path / "tatoeba", tmp_path / "multi30k") == tmp_path / "tatoeba"
    assert len(read_tatoeba(None, "tatoeba_dev", "de", "en", data_dir=tmp_path / "multi30k")) == 7
