"""``patch`` and ``explain --contrast``: the numbers of interpret/patching.py and
interpret/contrast.py as JSON, and bad input as one line on stderr with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.unit.test_cli import SENTENCE, run_cli
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.contrast import contrastive_ig

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "en-de"
CLEAN, CORRUPTED = "The doctor said that she was tired.", "The doctor said that he was tired."


def _one_line_error(code: int, out: str, err: str, words: str) -> None:
    assert code == 2 and not out
    assert err.count("\n") == 1 and words in err, err


@pytest.mark.skipif(not (SHIPPED / "model.safetensors").is_file(), reason="no shipped checkpoint")
def test_patch_json_on_the_shipped_model(capsys):
    code, out, _ = run_cli(capsys, "patch", CLEAN, CORRUPTED, "--checkpoint", str(SHIPPED),
                           "--json")
    assert code == 0
    got = json.loads(out)
    # the translations part at position 4: "Der Arzt sagte, dass sie …" / "Der Arzt sagte, er sei …"
    assert (got["position"], got["clean_token"], got["corrupted_token"]) == (4, "▁dass", "▁er")
    assert got["changed_positions"] == [4]
    enc, dec = np.array(got["encoder"]), np.array(got["decoder"])
    assert enc.shape == (3, 9) and dec.shape == (3, len(got["target_tokens"]))
    assert enc[:, 4].min() > 0.9  # the pronoun's position carries it at every encoder layer
    np.testing.assert_allclose(got["encoder_all_positions"], 1.0, atol=1e-4)
    np.testing.assert_allclose(dec[:, 5:], 0.0, atol=1e-5)  # after t: the causal mask
    assert dec[2, 4] == pytest.approx(1.0, abs=1e-4)
    assert len(got["heads"]) == 3 * 3 * 8 and {k.split(".")[0] for k in got["heads"]} == {
        "enc", "dec", "cross"}
    assert got["logit_difference"]["clean"] > 0 > got["logit_difference"]["corrupted"]
    assert "decided by “she”" in got["summary"]


def test_patch_refuses_sentences_of_different_lengths_or_the_same_translation(checkpoint_dir,
                                                                               capsys):
    ckpt = ["--checkpoint", str(checkpoint_dir)]
    code, out, err = run_cli(capsys, "patch", SENTENCE, SENTENCE.replace("mann", "kind"), *ckpt)
    _one_line_error(code, out, err, "same number of tokens")
    code, out, err = run_cli(capsys, "patch", SENTENCE, SENTENCE, *ckpt, "--json")
    _one_line_error(code, out, err, "the same tokens")
    # the random tiny model writes the same token whatever it reads
    code, out, err = run_cli(capsys, "patch", SENTENCE, SENTENCE.replace("mann", "frau"), *ckpt)
    _one_line_error(code, out, err, "both sentences translate to")


def test_explain_contrast_json_and_an_unknown_token(checkpoint_dir, tiny_checkpoint, capsys):
    ckpt = ["--checkpoint", str(checkpoint_dir), "--ig-steps", "8"]
    code, out, err = run_cli(capsys, "explain", *ckpt, "--contrast", "no-such-token-here", SENTENCE)
    _one_line_error(code, out, err, "not a token of this vocabulary")
    code, out, _ = run_cli(capsys, "explain", *ckpt, "--json", "--contrast", "park", "--position",
                           "1", SENTENCE)
    assert code == 0
    got = json.loads(out)["contrastive"]
    run = run_sentence(tiny_checkpoint, SENTENCE)
    vocab = tiny_checkpoint.tokenizer.get_vocab()
    c = contrastive_ig(tiny_checkpoint.model, run.src_ids, run.tgt_ids, 1, run.predicted_ids[1],
                       vocab["▁park"], 8)
    assert got["contrast"] == "▁park" and got["position"] == 1
    np.testing.assert_allclose([v for _, v in got["source"]], c.source, atol=1e-5)
    np.testing.assert_allclose([v for _, v in got["target_prefix"]], c.target, atol=1e-5)
    assert [t for t, _ in got["target_prefix"]] == run.tgt_tokens[:2]
    code, out, err = run_cli(capsys, "explain", *ckpt, "--contrast", "park", "--position", "99",
                             SENTENCE)
    _one_line_error(code, out, err, "outside the translation")
