"""``export-lecture``: the lecture's HTML file written with its size reported; bad input (an empty
sentence, a path that cannot be written, a bad checkpoint, a layer the model lacks) as one line on
stderr and exit code 2, before the model runs and without leaving a file behind."""

from __future__ import annotations

import os

import pytest

from tests.unit.test_cli import SENTENCE, run_cli


def one_line_error(result: tuple[int, str, str], words: str) -> None:
    code, out, err = result
    assert code == 2 and not out
    assert err.startswith("error: ") and err.count("\n") == 1 and words in err, err


def test_it_writes_the_file_and_reports_its_size(checkpoint_dir, tmp_path, capsys):
    path = tmp_path / "lecture.html"
    code, out, err = run_cli(capsys, "export-lecture", SENTENCE, "--checkpoint",
                             str(checkpoint_dir), "--notes", "-o", str(path))
    assert code == 0 and not err
    size = path.stat().st_size
    assert out == f"wrote {path}: {size / 1e6:.1f} MB, the title page and 20 steps\n"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "Speaker notes" in text


@pytest.mark.parametrize("sentence", ["", "   \n\t"])
def test_an_empty_sentence_is_one_line_and_exit_code_2(checkpoint_dir, tmp_path, capsys, sentence):
    path = tmp_path / "lecture.html"
    one_line_error(run_cli(capsys, "export-lecture", sentence, "--checkpoint", str(checkpoint_dir),
                           "-o", str(path)), "the sentence is empty")
    assert not path.exists()


def test_a_path_that_cannot_be_written_is_one_line_and_exit_code_2(checkpoint_dir, tmp_path,
                                                                     capsys):
    args = ("export-lecture", SENTENCE, "--checkpoint", str(checkpoint_dir), "-o")
    one_line_error(run_cli(capsys, *args, str(tmp_path / "missing" / "lecture.html")),
                   "does not exist")
    one_line_error(run_cli(capsys, *args, str(tmp_path)), "is a directory")
    (tmp_path / "a-file").write_text("")
    one_line_error(run_cli(capsys, *args, str(tmp_path / "a-file" / "lecture.html")),
                   "does not exist")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        one_line_error(run_cli(capsys, *args, str(locked / "lecture.html")), "permission denied")


def test_a_bad_checkpoint_or_layer_is_one_line_and_exit_code_2(checkpoint_dir, tmp_path, capsys):
    path = tmp_path / "lecture.html"
    one_line_error(run_cli(capsys, "export-lecture", SENTENCE, "--checkpoint",
                           str(tmp_path / "nowhere"), "-o", str(path)), "does not exist")
    one_line_error(run_cli(capsys, "export-lecture", SENTENCE, "--checkpoint", str(checkpoint_dir),
                           "--layer", "99", "-o", str(path)), "layers 0 to")
    assert not path.exists()
