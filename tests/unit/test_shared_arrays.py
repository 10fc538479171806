"""The arrays that a page and the notebook (transformer_viz.notebook) both draw, from one helper
each: one attention head's arrays (plots.attention.head_arrays), a greedy step's candidates and the
beam tree (text.analysis.step_candidates, beam_tree_data)."""

from __future__ import annotations

import numpy as np

from tests.support.apptest import SENTENCE
from transformer_viz.engine import run_sentence
from transformer_viz.plots import attention as att
from transformer_viz.text.analysis import beam_hypothesis, beam_tree_data, step_candidates


def test_head_arrays_are_the_heads_slices_and_its_mask(sentence_trace):
    src_ids, tgt_ids, trace = sentence_trace
    S, T = len(src_ids), len(tgt_ids)
    arrays = att.head_arrays(trace, "decoder.1.cross_attn", 1, T, S)
    assert set(arrays) == set(att.HEAD_ARRAYS) | {"mask"}
    for name in att.HEAD_ARRAYS:
        np.testing.assert_array_equal(arrays[name],
                                      att.head_slice(trace[f"decoder.1.cross_attn.{name}"], 1))
    assert (arrays["weights"].shape == (T, S) and arrays["q"].shape[0] == T
            and arrays["k"].shape[0] == S)
    causal = att.head_arrays(trace, "decoder.0.self_attn", 0, T, T)["mask"]
    np.testing.assert_array_equal(causal, np.tril(np.ones((T, T), dtype=bool)))


def test_step_candidates_name_the_token_each_greedy_step_wrote(tiny_checkpoint):
    run = run_sentence(tiny_checkpoint, SENTENCE)
    to_tokens = tiny_checkpoint.tokenizer.convert_ids_to_tokens
    for t, step in enumerate(run.decoding.steps[: len(run.tgt_ids) - 1], start=1):
        c = step_candidates(step, to_tokens)
        assert c["chosen_id"] == run.tgt_ids[t] and c["chosen_token"] == run.tgt_tokens[t]
        assert c["tokens"] == to_tokens(c["ids"]) and len(c["probs"]) == len(c["ids"])
        if c["chosen"] is not None:
            assert c["ids"][c["chosen"]] == c["chosen_id"]


def test_beam_tree_data_marks_the_beam_of_the_chosen_translation(tiny_checkpoint):
    run = run_sentence(tiny_checkpoint, SENTENCE, beam_size=3)
    tree = beam_tree_data(run.decoding.steps, run.decoding.tokens[0],
                          tiny_checkpoint.tokenizer.convert_ids_to_tokens)
    n = len(run.decoding.steps)
    assert (len(tree["text"]) == len(tree["parents"]) == len(tree["scores"])
            == len(tree["finished"]) == n)
    assert all(len(row) == 3 for row in tree["text"])
    assert tree["best_beam"] is not None
    tokens = [s.tokens[0] for s in run.decoding.steps]
    assert beam_hypothesis(tokens, tree["parents"], tree["best_beam"]) == run.decoding.tokens[0]
    assert beam_tree_data([], [], str)["best_beam"] is None
