"""SubwordTokenizer against transformers' PreTrainedTokenizerFast over the same vocabulary: the
app's tokenizer gives what the transformers wrapper it replaces gave (IDs, spans, tokens, text), and
saves the same files."""

from __future__ import annotations

import json
import sys
import subprocess

import pytest
from tokenizers import Tokenizer

from transformer_viz.core.paths import PROJECT_ROOT as ROOT
from transformer_viz.text.tokenizer import (SPECIAL_TOKENS, SubwordTokenizer, decode, encode_source,
                                            hf_tokenizer, load_tokenizer)

TEXTS = [
    "Ein Mann fährt Fahrrad.", "a man rides a bike", "", " ", "Zwei  Hunde\tspielen im Schnee!",
    "<pad> <s></s><unk> typed as text", "</s>", "Ｆｕｌｌｗｉｄｔｈ ﬁ ligature ½",
    "emoji 🙂 and 漢字 unseen",
    "Straße, Äpfel; Öl: Übermut?", "numbers 1234567 and dates 12.03.2024", "x" * 300,
    "The kids were scared of the lions, because they were roaring.",
]


def shipped_dirs():
    return sorted(p for p in (ROOT / "checkpoints").glob("*/tokenizer")
                  if (p / "tokenizer.json").is_file())


def pairs(trained):
    """(ours, transformers') for the test vocabulary and for every shipped one."""
    copy = Tokenizer.from_str(trained.backend_tokenizer.to_str())
    yield trained, hf_tokenizer(copy)
    for directory in shipped_dirs():
        yield load_tokenizer(directory), hf_tokenizer(
            Tokenizer.from_file(str(directory / "tokenizer.json")))


def test_subword_tokenizer_equals_the_transformers_wrapper(tokenizer):
    assert isinstance(tokenizer, SubwordTokenizer)
    compared = 0
    for ours, theirs in pairs(tokenizer):
        assert len(ours) == len(theirs) and ours.get_vocab() == theirs.get_vocab()
        for kind in SPECIAL_TOKENS:
            assert getattr(ours, f"{kind}_id") == getattr(theirs, f"{kind}_id")
        for text in TEXTS:
            a = ours(text, add_special_tokens=False, return_offsets_mapping=True)
            b = theirs(text, add_special_tokens=False, return_offsets_mapping=True)
            assert a["input_ids"] == b["input_ids"] and [tuple(o) for o in a["offset_mapping"]] == \
                [tuple(o) for o in b["offset_mapping"]], text
            assert ours(text)["input_ids"] == theirs(text)["input_ids"]
            ids = a["input_ids"]
            assert ours.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
            assert ours.convert_tokens_to_ids(ours.convert_ids_to_tokens(ids)) == ids
            assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=False)
            with_specials = [1] + ids + [2, 0, 0]
            assert (ours.decode(with_specials)
                    == theirs.decode(with_specials, skip_special_tokens=False))
            assert ours.decode(with_specials, skip_special_tokens=True) == \
                theirs.decode(with_specials, skip_special_tokens=True)
            assert decode(ours, ids + [2]) == decode(theirs, ids + [2])
            if text.strip():
                assert encode_source(ours, text, 64) == encode_source(theirs, text, 64)
            compared += 1
        batch = ours(TEXTS, add_special_tokens=False)["input_ids"]
        assert batch == theirs(TEXTS, add_special_tokens=False)["input_ids"]
        assert ours.convert_ids_to_tokens(5) == theirs.convert_ids_to_tokens(5)
        assert (ours.convert_tokens_to_ids("no-such-token")
                == theirs.convert_tokens_to_ids("no-such-token") == 3)
    assert compared >= len(TEXTS) * 3  # the test vocabulary and at least two shipped ones


def test_typed_special_tokens_stay_text(tokenizer):
    ids = tokenizer("<pad> </s>", add_special_tokens=False)["input_ids"]
    assert ids and not set(ids) & {0, 1, 2}


def test_saved_files_are_what_transformers_writes_and_load_back_equal(tokenizer, tmp_path):
    tokenizer.save_pretrained(str(tmp_path / "ours"))
    hf_tokenizer(Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())).save_pretrained(
        str(tmp_path / "hf"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "hf" / name).read_bytes()
    loaded = load_tokenizer(tmp_path / "ours")
    assert loaded.get_vocab() == tokenizer.get_vocab()
    assert loaded(TEXTS, add_special_tokens=False) == tokenizer(TEXTS, add_special_tokens=False)
    assert json.loads((tmp_path / "ours" / "tokenizer.json").read_text())["model"]["type"] == "BPE"


def test_loading_a_checkpoint_does_not_import_transformers():
    directory = next(iter(shipped_dirs()), None)
    if directory is None:
        pytest.skip("no shipped checkpoint")
    code = ("import sys; from transformer_viz.checkpoints.load import load_checkpoint; "
            f"ckpt = load_checkpoint({str(directory.parent)!r}); "
            "print(ckpt.tokenizer('ein Test', add_special_tokens=False)['input_ids'], "
            "any(m == 'transformers' or m.startswith('transformers.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip().endswith("False"), out.stdout + out.stderr
