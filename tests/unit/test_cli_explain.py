"""``explain`` and ``translate --heads-off`` on the tiny checkpoint: the numbers of
interpret/explain.py, as JSON."""

from __future__ import annotations

import json

import numpy as np

from tests.unit.test_cli import SENTENCE, run_cli
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.ablation import parse_heads
from transformer_viz.interpret import explain as X
from transformer_viz.interpret.source_share import content_tokens, source_shares


def test_explain_json_per_target_token(checkpoint_dir, tiny_checkpoint, capsys):
    code, out, _ = run_cli(capsys, "explain", "--checkpoint", str(checkpoint_dir), "--json",
                           "--ig-steps", "8", *SENTENCE.split())
    assert code == 0
    got = json.loads(out)
    run = run_sentence(tiny_checkpoint, SENTENCE)
    model = tiny_checkpoint.model
    assert got["translation"] == run.translation and got["ig_steps"] == 8
    rows = got["tokens"]
    assert [r["token"] for r in rows] == run.tgt_tokens[1:] + ["</s>"]
    ig, delta = X.integrated_gradients(model, run.src_ids, run.tgt_ids, 8)
    gxi = X.gradient_x_input(model, run.src_ids, run.tgt_ids)
    lens = X.logit_lens(model, run.src_ids, run.tgt_ids)
    assert [r["most_attributed_ig"] for r in rows] == [run.src_tokens[i] for i in ig.argmax(-1)]
    assert [r["most_attributed_gxi"] for r in rows] == [run.src_tokens[i] for i in gxi.argmax(-1)]
    assert np.array_equal([r["lens_rank"] for r in rows], lens["rank"].T)
    # (T, S), the last layer's head mean
    cross = run.trace["decoder.1.cross_attn.weights"][0].numpy().mean(0)
    assert [r["most_attended"][1] for r in rows] == [run.src_tokens[i] for i in cross.argmax(-1)]
    probs = run.trace["probs"][0].numpy()
    np.testing.assert_allclose([r["p"] for r in rows],
                               probs[np.arange(len(rows)), run.predicted_ids], atol=1e-6)
    assert (abs(got["ig_completeness_gap"] - np.abs(ig.sum(-1) - delta).sum() / np.abs(delta).sum())
            < 1e-5)
    shares = source_shares(model, run.src_ids, run.tgt_ids, 8)
    np.testing.assert_allclose([r["source_share"] for r in rows], shares.source_share, atol=1e-4)
    assert [r["low_source"] for r in rows] == shares.low_source.tolist()
    assert all(0.0 <= r["source_share"] <= 1.0 for r in rows)
    unused = shares.unused_sources(content_tokens(run.src_tokens))
    assert got["unused_source_tokens"] == [t for t, u in zip(run.src_tokens, unused) if u]


def test_translate_with_heads_off(checkpoint_dir, tiny_checkpoint, capsys):
    heads = "cross.0.0,cross.0.1,cross.1.0,cross.1.1,cross.1.2,cross.1.3"
    code, out, _ = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir),
                           "--heads-off", heads, *SENTENCE.split())
    assert code == 0
    run = run_sentence(tiny_checkpoint, SENTENCE)
    expected = X.translation_with_heads_off(tiny_checkpoint, run.src_ids,
                                            parse_heads(heads, tiny_checkpoint.config))
    assert out.strip() == expected[1]
    code, out, err = run_cli(capsys, "translate", "--checkpoint", str(checkpoint_dir),
                             "--heads-off", "cross.5.0", *SENTENCE.split())
    assert code == 2 and "outside the model" in err and not out
