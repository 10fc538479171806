"""The command line, in-process: ``transformer_viz.cli.main([...])`` with captured output."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from transformer_viz.cli import main
from transformer_viz.engine import run_sentence
from transformer_viz.models.transformer.names import trace_names

SENTENCE = "ein mann spielt im park ."


def run_cli(capsys, *argv: str, stdin: str | bytes | None = None,
            monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        data = stdin if isinstance(stdin, bytes) else stdin.encode("utf-8")
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def expected_shape(spec: str, dims: dict[str, int]) -> list[int]:
    """'(B, h, S, d_k)' -> [1, 8, 7, 64] for the given dimension sizes."""
    inside = spec[spec.index("(") + 1: spec.index(")")]
    return [dims[d.strip()] for d in inside.split(",")]


def check_shapes(shapes: dict[str, list[int]], cfg: dict, S: int, T: int) -> None:
    dims = {"B": 1, "S": S, "T": T, "h": cfg["h"], "d_k": cfg["d_model"] // cfg["h"],
            "d_model": cfg["d_model"], "d_ff": cfg["d_ff"], "V": cfg["vocab_size"]}
    names = trace_names(cfg["N"])
    assert list(shapes) == [name for name, _, _ in names]  # every documented name, in order
    for name, spec, _ in names:
        want = expected_shape(spec, dims)
        if spec.startswith("broadcastable"):
            got = shapes[name]
            assert len(got) == len(want) and all(g in (1, w) for g,
                                                 w in zip(got, want)), (name, got, want)
        else:
            assert shapes[name] == want, (name, shapes[name], want)


# --- translate ------------------------------------------------------------------------------------


def test_translate_a_sentence(checkpoint_dir, tiny_checkpoint, capsys):
    code, out, err = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir),
                             *SENTENCE.split())
    assert code == 0 and err == ""
    assert out == run_sentence(tiny_checkpoint, SENTENCE).translation + "\n"


def test_translate_notes_go_to_stderr(checkpoint_dir, capsys):
    code, out, err = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir),
                             "ein\u200bmann 😀")
    assert code == 0 and out.count("\n") == 1
    assert ("note: Removed 1 invisible character: an invisible space (U+200B ZERO WIDTH SPACE)"
            in err)
    assert "became <unk>" in err and "'😀'" in err


def test_translate_stdin_one_line_per_line(checkpoint_dir, tiny_checkpoint, capsys, monkeypatch):
    lines = ["ein mann spielt im park .", "", "zwei kinder sitzen am strand .",
             "\u200b\u202e", "", "  ", "ein hund ."]
    code, out, err = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir),
                             stdin="\n".join(lines) + "\n", monkeypatch=monkeypatch)
    assert code == 0
    outputs = out.split("\n")
    assert outputs[-1] == "" and len(outputs) - 1 == len(lines)
    for i, output in enumerate(outputs[:-1]):
        assert (output == "") == (i in (1, 3, 4, 5)), (lines[i], output)
    # the line that had only invisible characters is named; blank ones are just blank
    assert ("note: line 4: Please type a sentence: the text is empty after removing invisible "
            "characters.") in err
    assert "line 2" not in err and "line 5" not in err and "line 6" not in err


def test_translate_stdin_line_matches_the_argument(checkpoint_dir, tiny_checkpoint, capsys,
                                                   monkeypatch):
    # a single line on stdin is a batch of one: the same greedy translation as on the command line
    code, out, _ = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir), stdin=SENTENCE,
                           monkeypatch=monkeypatch)
    assert code == 0 and out == run_sentence(tiny_checkpoint, SENTENCE).translation + "\n"


def test_translate_stdin_line_endings(checkpoint_dir, capsys, monkeypatch):
    # \r\n is one line end; a form feed, U+2028 or NEL inside a line does not split it; bad UTF-8 is
    # <unk>
    text = "ein mann\r\nzwei\x0ckinder\u2028am strand\x85.\r\n\xff\xfe hund\n".encode("utf-8")
    text = text.replace("\xff\xfe".encode("utf-8"), b"\xff\xfe")
    code, out, err = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir), stdin=text,
                             monkeypatch=monkeypatch)
    assert code == 0 and out.count("\n") == 3
    assert "line 3: 2 token(s) became <unk>" in err and "'\ufffd' (×2)" in err
    # no trailing newline: still one line; nothing at all: no output
    assert run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir), stdin="ein mann",
                   monkeypatch=monkeypatch)[1].count("\n") == 1
    assert run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir), stdin="",
                   monkeypatch=monkeypatch)[:2] == (0, "")


# --- trace ----------------------------------------------------------------------------------------


def test_trace_json(checkpoint_dir, tiny_checkpoint, capsys):
    code, out, _ = run_cli(capsys, "trace", "--checkpoint", str(checkpoint_dir), SENTENCE)
    assert code == 0
    data = json.loads(out)
    run = run_sentence(tiny_checkpoint, SENTENCE)
    assert data["source"] == SENTENCE
    assert data["source_tokens"] == run.src_tokens and data["source_ids"] == run.src_ids
    assert data["target_tokens"] == run.tgt_tokens and data["target_ids"] == run.tgt_ids
    assert data["translation"] == run.translation
    assert data["source_ids"][-1] == 2 and data["target_ids"][0] == 1
    check_shapes(data["shapes"], tiny_checkpoint.config.to_dict(), len(run.src_ids),
                 len(run.tgt_ids))
    assert "values" not in data


def test_trace_in_bfloat16(checkpoint_dir, tiny_checkpoint, capsys):
    code, out, _ = run_cli(capsys, "trace", "--checkpoint", str(checkpoint_dir), "--dtype",
                           "bfloat16", "--values", SENTENCE)
    assert code == 0
    data = json.loads(out)
    run = run_sentence(tiny_checkpoint, SENTENCE)  # float32
    assert data["source_ids"] == run.src_ids
    check_shapes(data["shapes"], tiny_checkpoint.config.to_dict(), len(run.src_ids),
                 len(data["target_ids"]))
    # same translation: the probabilities differ by bfloat16 rounding only
    if data["target_ids"] == run.tgt_ids:
        np.testing.assert_allclose(np.asarray(data["values"]["probs"]),
                                   run.trace["probs"].numpy(), atol=2e-2)


def test_trace_values(checkpoint_dir, tiny_checkpoint, capsys):
    code, out, _ = run_cli(capsys, "trace", "--checkpoint", str(checkpoint_dir),
                           "--values", SENTENCE)
    assert code == 0
    data = json.loads(out)
    run = run_sentence(tiny_checkpoint, SENTENCE)
    assert list(data["values"]) == list(data["shapes"])
    for name, values in data["values"].items():
        assert list(np.asarray(values).shape) == data["shapes"][name], name
    assert data["values"]["src.token_ids"] == [run.src_ids]
    np.testing.assert_allclose(np.asarray(data["values"]["probs"]),
                               run.trace["probs"].numpy(), rtol=1e-6)
    weights = np.asarray(data["values"]["decoder.0.self_attn.weights"])[0, 0]  # (T, T), causal
    assert np.allclose(weights.sum(-1), 1.0) and np.all(np.triu(weights, 1) == 0)
    assert data["values"]["encoder.0.self_attn.mask"][0][0][0] == [True] * len(run.src_ids)


# --- shapes ---------------------------------------------------------------------------------------


def test_shapes_tiny(capsys):
    code, out, _ = run_cli(capsys, "shapes", "--config", "tiny", "ein", "Hund", "läuft")
    assert code == 0
    data = json.loads(out)
    assert data["config"]["d_model"] == 32 and data["config"]["N"] == 2
    assert data["source_tokens"] == ["ein", "Hund", "läuft", "</s>"]
    assert len(data["target_ids"]) == 6  # <s> + 5: longer than the source, so that T != S
    check_shapes(data["shapes"], data["config"], S=4, T=6)


def test_shapes_base_matches_the_paper(capsys):
    code, out, _ = run_cli(capsys, "shapes", "--config", "base")
    assert code == 0
    data = json.loads(out)
    S, T = len(data["source_ids"]), len(data["target_ids"])
    assert T == S + 2  # T != S: cross-attention (1, h, T, S) cannot pass for (1, h, T, T)
    shapes = data["shapes"]
    assert shapes["encoder.0.self_attn.q"] == [1, 8, S, 64]
    assert shapes["decoder.5.cross_attn.weights"] == [1, 8, T, S]
    assert shapes["encoder.5.ffn.hidden"] == [1, S, 2048]
    assert shapes["logits"] == [1, T, 8000]
    check_shapes(shapes, data["config"], S, T)


# --- bad input: exit code 2, one message, no traceback --------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["translate", "--checkpoint", "{ckpt}", ""], "error: Please type a sentence"),
    (["translate", "--checkpoint", "{ckpt}", "   ", "\u200b"], "error: Please type a sentence"),
    (["trace", "--checkpoint", "{ckpt}", "\x00\x01"], "error: Please type a sentence"),
    (["translate", "--checkpoint", "{ckpt}", "--beam", "0", "ein"], "--beam: must be between 1"),
    (["translate", "--checkpoint", "{ckpt}", "--beam", "1000", "ein"], "--beam: must be between 1"),
    (["trace", "--checkpoint", "{ckpt}", "--beam", "two", "ein"], "--beam: not a whole number"),
    (["trace", "--checkpoint", "{ckpt}"], "the following arguments are required: sentence"),
    (["translate", "--checkpoint", "/nonexistent/checkpoint", "ein"], "does not exist"),
    (["translate", "--checkpoint", "{ckpt}/config.json", "ein"],
     "is a file, not a checkpoint directory"),
    (["shapes", "--config", "huge"], "invalid choice: 'huge'"),
    (["shapes", "--config", "tiny", " \u202e "], "error: Please type a sentence"),
    (["frobnicate"], "invalid choice"),
    ([], "the following arguments are required: command"),
])
def test_bad_input(argv, message, checkpoint_dir, capsys):
    code, out, err = run_cli(capsys, *[a.replace("{ckpt}", str(checkpoint_dir)) for a in argv])
    assert code == 2 and out == ""
    assert message in err


def test_help_exits_cleanly(capsys):
    code, out, _ = run_cli(capsys, "translate", "--help")
    assert code == 0 and "--beam" in out


def test_a_sentence_too_long_for_the_model_is_a_one_line_error(checkpoint_dir, capsys):
    """The command line refuses what the model cannot read whole (the app cuts it and says so)."""
    from transformer_viz.cli import main

    for command in ("translate", "trace"):
        assert main([command, "--checkpoint", str(checkpoint_dir), "ein " * 600]) == 2
        err = capsys.readouterr().err
        assert (err.startswith("error: the sentence is too long: 2,399 characters")
                and err.count("\n") == 1), err
        # 80 tokens > 64 positions
        assert main([command, "--checkpoint", str(checkpoint_dir), "ein mann " * 40]) == 2
        assert "the model reads at most 64" in capsys.readouterr().err
    assert (main(["complete", "--checkpoint", str(checkpoint_dir.parent / "gpt-tiny"), "ein " * 30])
            == 2)
    assert "the model reads at most 23" in capsys.readouterr().err
