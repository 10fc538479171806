"""Hostile and odd input through every door: the CLI, the engine and the app (AppTest).

Each case either gives a clear message (empty input) or a normal result; never an exception or a
traceback. Script and markup strings stay literal text: they reach the page through st.text only.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_h
from streamlit.testing.v1 import AppTest

from tests.support.apptest import rerun
from transformer_viz.cli import main
from transformer_viz.engine import run_sentence
from transformer_viz.text.tokenizer import (BOS, DEFAULT_MAX_CHARS, EOS, PAD, UNK, InputError,
                                            _invisible, encode_source)


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    empty: bool = False  # expected: a message, no model run
    # typed special-token strings: no ID below 4 may appear except the final </s>
    special: bool = False
    app: bool = True  # a browser cannot send it (lone surrogates are not UTF-8)


CASES = [
    Case("empty", "", empty=True),
    Case("spaces", "     ", empty=True),
    Case("whitespace-mix", "\t\n \r\n\u3000\u2028", empty=True),
    Case("only-zero-width", "\u200b\u200c\u200d\ufeff\u2060", empty=True),
    Case("only-control", "\x00\x01\x02\x07\x1b\x7f", empty=True),
    Case("only-bidi", "\u202e\u202d\u2066\u2069", empty=True),
    Case("10000-chars", "ein mann " * 1111 + "x"),
    Case("600-tokens", " ".join(["ein", "mann", "spielt"] * 200)),
    Case("one-word-500", "hund " * 500),
    Case("single-char", "a"),
    Case("emoji", "😀 ein hund 🚲 👨‍👩‍👧 🇩🇪"),
    Case("rtl-arabic", "مرحبا بالعالم"),
    Case("rtl-hebrew-mixed", "ein mann שלום עולם im park"),
    Case("mixed-scripts", "ein Mann 男人 человек ἄνθρωπος 🙂 straße"),
    Case("nul", "ein\x00mann\x00"),
    Case("control-ansi", "\x1b[31mrot\x1b[0m \x07\x08 blau"),
    Case("zero-width-inside", "ein\u200bmann\u200c spielt\u2060 im\ufeff park"),
    Case("bidi-override", "\u202eknarp mi tleips nnam nie\u202c"),
    Case("bidi-isolates", "\u2066ein\u2069 \u2067mann\u2069 \u2068\u200f"),
    Case("script-tag", "<script>alert(1)</script>"),
    Case("img-onerror", "<img src=x onerror=alert(1)>"),
    Case("html-entities", "&lt;b&gt; &amp; &#60;script&#62; &nbsp;"),
    Case("pad", "<pad>", special=True),
    Case("bos", "<s>", special=True),
    Case("eos", "</s>", special=True),
    Case("unk", "<unk>", special=True),
    Case("all-specials", "ein <pad> mann <s></s><unk> </s></s>", special=True),
    Case("fullwidth-specials", "＜ｐａｄ＞ ＜／ｓ＞", special=True),
    Case("numbers", "1234567890 3.14159 -42 1e10"),
    Case("punctuation", "!?.,;:-()[]{}...!!! ??? ---"),
    Case("markdown", "**bold** [link](http://x) # heading `code` ~~strike~~"),
    Case("streamlit-directives", ":red[ein mann] :smile: :material/home: $$x^2$$"),
    Case("latex", r"$\frac{1}{0}$ \begin{align} x \end{align}"),
    Case("newlines-markdown", "ein mann\n\n# heading\n- item\n> quote"),
    Case("javascript-url", "javascript:alert(document.cookie)"),
    Case("sql", "'; DROP TABLE users; --"),
    Case("format-strings", "{0} %s %(x)s {__class__} ${HOME} $(ls)"),
    Case("backslashes", "C:\\Windows\\System32 \\n \\x00 \\u202e"),
    Case("zalgo", "e" + "\u0301\u0302\u0303" * 100 + " mann"),
    Case("private-use", "\ue000\uf8ff ein"),
    Case("non-characters", "ein\ufffe\uffff mann"),
    Case("tag-characters", "ein \U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065 mann"),
    Case("variation-selectors", "ein\ufe0f mann\ufe0e"),
    Case("lone-surrogate", "ein \ud800 mann \udfff", app=False),
    Case("replacement-char", "ein \ufffd mann"),
]
assert len(CASES) >= 30
BY_ID = {c.id: c for c in CASES}


def check_source_ids(ids: list[int], max_len: int, special: bool) -> None:
    """The encoder input: at most max_len IDs, exactly one </s> at the end, no <pad> or <s>."""
    assert 2 <= len(ids) <= max_len
    assert ids[-1] == EOS
    assert not {PAD, BOS, EOS} & set(ids[:-1])
    if special:  # typed special-token strings stay text: not even <unk>
        assert min(ids[:-1]) > UNK


def shown_source(ckpt, text: str) -> str:
    """The text the model is given (cleaned, cut), which the CLI and the app show as the source."""
    return encode_source(ckpt.tokenizer, text, max_tokens=ckpt.config.max_len).clean.text


# --- the engine ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_engine(case, tiny_checkpoint):
    cfg = tiny_checkpoint.config
    if case.empty:
        with pytest.raises(InputError, match="Please type a sentence"):
            run_sentence(tiny_checkpoint, case.text)
        return
    run = run_sentence(tiny_checkpoint, case.text)
    check_source_ids(run.src_ids, cfg.max_len, case.special)
    assert run.trace["src.token_ids"][0].tolist() == run.src_ids
    assert run.trace["tgt.token_ids"][0].tolist() == run.tgt_ids
    assert len(run.tgt_ids) <= cfg.max_len
    assert len(run.source_text) <= DEFAULT_MAX_CHARS
    assert not any(_invisible(ch) for ch in run.source_text)
    if UNK in run.src_ids:  # every <unk> is explained to the user
        assert any("<unk>" in m for m in run.messages)


def test_cuts_are_reported(tiny_checkpoint):
    long = run_sentence(tiny_checkpoint, BY_ID["10000-chars"].text)
    assert any("longer than 1000 characters" in m for m in long.messages)
    many = run_sentence(tiny_checkpoint, BY_ID["600-tokens"].text)
    assert len(many.src_ids) == tiny_checkpoint.config.max_len
    assert any(f"cut to {tiny_checkpoint.config.max_len} tokens" in m for m in many.messages)
    # the text shown is the text the model saw: no more, no less
    assert many.source_text.split()[:3] == ["ein", "mann", "spielt"]
    assert len(many.source_text) < len(BY_ID["600-tokens"].text)
    hidden = run_sentence(tiny_checkpoint, BY_ID["zero-width-inside"].text)
    assert hidden.source_text == "einmann spielt im park"
    assert any("U+200B ZERO WIDTH SPACE" in m for m in hidden.messages)
    assert any("Removed 4 invisible" in m for m in hidden.messages)


def test_special_token_strings_stay_text(tokenizer):
    for text in ("<pad>", "<s>", "</s>", "<unk>", "<pad><s></s><unk>"):
        encoded = encode_source(tokenizer, text, max_tokens=64)
        assert min(encoded.ids[:-1]) > UNK, (text, encoded.tokens)
        assert "".join(encoded.tokens[:-1]).replace("▁", "") == text
    # a genuinely unknown character is <unk>, and named
    encoded = encode_source(tokenizer, "ein 😀", max_tokens=64)
    assert encoded.ids.count(UNK) == 1 and encoded.unknown == ["😀"]


# --- the CLI --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cli_trace(case, checkpoint_dir, tiny_checkpoint, capsys):
    code = main(["trace", "--checkpoint", str(checkpoint_dir), "--", case.text])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if case.empty:
        assert code == 2 and out == ""
        assert err.startswith("error: Please type a sentence")
        return
    encoded = encode_source(tiny_checkpoint.tokenizer, case.text,
                            max_tokens=tiny_checkpoint.config.max_len)
    # the app cuts it; the command line refuses it
    if encoded.clean.truncated_chars or encoded.truncated_tokens:
        assert code == 2 and out == ""
        assert err.startswith("error: the sentence is too long") and err.count("\n") == 1, err
        return
    assert code == 0, err
    data = json.loads(out)
    check_source_ids(data["source_ids"], tiny_checkpoint.config.max_len, case.special)
    assert data["shapes"]["src.token_ids"] == [1, len(data["source_ids"])]
    assert data["source"] == shown_source(tiny_checkpoint, case.text)
    if case.id in ("script-tag", "img-onerror"):
        assert data["source"] == case.text  # literal, untouched


def test_cli_translate_stdin_all_cases(checkpoint_dir, monkeypatch, capsys):
    """Every case as one line of standard input: exactly one output line each, empty ones stay
    empty."""
    lines = [c.text.replace("\n", " ").replace("\r", " ").replace("\u2028", " ") for c in CASES]
    data = ("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    assert main(["translate", "--checkpoint", str(checkpoint_dir)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    outputs = out.split("\n")
    assert outputs[-1] == "" and len(outputs) - 1 == len(CASES)
    for case, output in zip(CASES, outputs):
        if case.empty:
            assert output == "", case.id
    # notes go to stderr and name their line
    number = CASES.index(BY_ID["zero-width-inside"]) + 1
    assert f"note: line {number}: Removed 4 invisible characters" in err
    number = CASES.index(BY_ID["empty"]) + 1
    assert f"line {number}:" not in err  # an empty line is simply an empty line


@pytest.mark.parametrize("case_id", ["empty", "spaces", "only-zero-width", "script-tag", "emoji"])
def test_cli_translate_argument(case_id, checkpoint_dir, capsys):
    case = BY_ID[case_id]
    code = main(["translate", "--checkpoint", str(checkpoint_dir), "--", case.text])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if case.empty:
        assert (code, out) == (2, "") and "error: Please type a sentence" in err
    else:
        assert code == 0 and out.count("\n") == 1


# --- the app --------------------------------------------------------------------------------------


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _elements(at: AppTest):
    for root in (at.main, at.sidebar):
        yield from (n for n in _walk(root) if getattr(n, "proto", None) is not None)


_RAW_TAG = re.compile(r"(?<!\\)<\s*(script|img)", re.IGNORECASE)


@pytest.fixture()
def open_overview(make_app):
    """open_overview(text) -> a fresh session on the Overview, the text given in the URL (?s=…) as a
    shared link gives it: what a first run makes of it."""
    return lambda text: rerun(make_app(text))


@pytest.mark.parametrize("case", [c for c in CASES if c.app], ids=[c.id for c in CASES if c.app])
def test_app_overview(case, open_overview, tiny_checkpoint):
    at = open_overview(case.text)
    assert at.text_area(key="sentence").value == case.text[:DEFAULT_MAX_CHARS]
    warnings = [w.value for w in at.warning]
    texts = [t.value for t in at.text]
    if case.empty:
        assert any("Please type a sentence" in w for w in warnings)
        assert not at.get("plotly_chart")
        return
    assert not any("Please type a sentence" in w for w in warnings)
    expected = shown_source(tiny_checkpoint, case.text[:DEFAULT_MAX_CHARS])
    assert expected in texts  # the source, shown as plain text
    if case.id in ("script-tag", "img-onerror", "markdown", "streamlit-directives",
                   "html-entities"):
        assert case.text in texts
    for el in _elements(at):
        body = getattr(el.proto, "body", "")
        if el.type == "html":
            assert "alert(" not in body and "onerror" not in body
        if getattr(el.proto, "allow_html", False):
            assert "alert(" not in body and "onerror" not in body, body
        if isinstance(body, str) and el.type != "text":
            assert not _RAW_TAG.search(body), (el.type, body)
    for chart in at.get("plotly_chart"):
        assert not _RAW_TAG.search(chart.proto.spec)


def test_app_tells_what_was_cut(open_overview):
    at = open_overview("ein mann " * 1200)
    assert any("cut to its first 1000 characters" in w.value for w in at.warning)
    at = open_overview(BY_ID["zero-width-inside"].text)
    assert any("Removed 4 invisible" in i.value for i in at.info)
    assert "einmann spielt im park" in [t.value for t in at.text]


# --- random Unicode -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st_h.text(st_h.characters(exclude_categories=()), max_size=2000))
def test_random_unicode(tiny_checkpoint, text):
    cfg = tiny_checkpoint.config
    try:
        run = run_sentence(tiny_checkpoint, text)
    except InputError:
        assert not "".join(ch for ch in text[: DEFAULT_MAX_CHARS * 20]
                           if not _invisible(ch) and not ch.isspace()).strip()
        return
    check_source_ids(run.src_ids, cfg.max_len, special=False)
    assert run.trace["src.token_ids"].shape == (1, len(run.src_ids))
    assert (run.trace["encoder.0.self_attn.weights"].shape
            == (1, cfg.h, len(run.src_ids), len(run.src_ids)))
    T = len(run.tgt_ids)
    assert run.trace["logits"].shape == (1, T, cfg.vocab_size) and T <= cfg.max_len
    assert run.trace["decoder.0.cross_attn.weights"].shape == (1, cfg.h, T, len(run.src_ids))
    assert len(run.source_text) <= DEFAULT_MAX_CHARS
    assert unicodedata.is_normalized("NFC", run.source_text)
    assert not any(_invisible(ch) for ch in run.source_text)
