"""What decoding may write and what counts as written: the output-length cap and the cut at </s>."""

from __future__ import annotations

import torch

from transformer_viz.config import preset
from transformer_viz.decoding import greedy_decode, max_output_length
from transformer_viz.tokenizer import BOS, EOS, PAD, decode, output_ids


def test_the_output_may_be_half_again_as_long_as_the_source_plus_ten_within_the_positions():
    cfg = preset("tiny")  # max_len 64
    assert max_output_length(cfg, 4) == 16
    assert max_output_length(cfg, 30) == 55
    assert max_output_length(cfg, 60) == cfg.max_len - 1  # <s> + the output fill the positions


def test_an_output_stops_before_its_first_eos_and_drops_pad():
    assert output_ids([5, 6, PAD, 7, EOS, 8, EOS]) == [5, 6, 7]
    assert output_ids([5, 6]) == [5, 6]
    assert output_ids([EOS, 5]) == []


def test_decode_reads_what_the_model_wrote(tokenizer):
    ids = tokenizer("ein mann", add_special_tokens=False)["input_ids"]
    assert decode(tokenizer, [BOS] + ids + [PAD, EOS] + ids) == "ein mann"


def test_greedy_results_are_cut_the_same_way(tiny_model):
    src = torch.tensor([[5, 9, 12, 7, EOS], [5, 9, EOS, PAD, PAD]])
    result = greedy_decode(tiny_model, src, max_len=12, record=False)
    for row, tokens in enumerate(result.tokens):
        assert EOS not in tokens and PAD not in tokens and len(tokens) <= 12, row


@torch.no_grad()
def test_a_forced_prefix_is_written_first_and_greedy_decoding_continues_from_it(tiny_model):
    """"What if the model had chosen another word?": the output starts with the forced tokens, then follows the
    model's own greedy choices, exactly as a plain loop that reruns the whole model on each prefix."""
    src = torch.tensor([[5, 9, 12, 7, EOS]])  # (1, S)
    plain = greedy_decode(tiny_model, src, max_len=12, top_k=3)
    forced = [plain.steps[0].top_ids[0][1], 23]  # the runner-up at step 1, then any token
    result = greedy_decode(tiny_model, src, max_len=12, top_k=3, forced_prefix=forced)
    tgt = [BOS] + forced
    while len(tgt) - 1 < 12 and tgt[-1] != EOS:  # the reference: a full forward per step, argmax of the last row
        logits = tiny_model(src, torch.tensor([tgt]))  # (1, t, V)
        tgt.append(int(logits[0, -1].argmax()))
    assert result.tokens[0][:2] == forced
    assert result.tokens[0] == output_ids(tgt[1:])
    # the forced steps record the probability the model gave the forced token, and its own top candidates
    first = torch.softmax(tiny_model(src, torch.tensor([[BOS]]))[0, -1].double(), -1)  # (V,)
    assert result.steps[0].chosen == [forced[0]]
    assert abs(result.steps[0].chosen_prob[0] - float(first[forced[0]])) < 1e-5
    assert result.steps[0].top_ids == plain.steps[0].top_ids
    # forcing the model's own choices changes nothing; no prefix is plain greedy
    own = greedy_decode(tiny_model, src, max_len=12, top_k=3, forced_prefix=plain.tokens[0][:3])
    assert own.tokens == plain.tokens and own.scores == plain.scores
    assert greedy_decode(tiny_model, src, max_len=12, top_k=3, forced_prefix=[]).tokens == plain.tokens


def test_run_sentence_passes_a_forced_prefix_to_greedy_decoding(tiny_checkpoint):
    from transformer_viz.engine import run_sentence

    plain = run_sentence(tiny_checkpoint, "ein mann spielt im park .", trace=False)
    other = plain.decoding.steps[0].top_ids[0][1]
    forced = run_sentence(tiny_checkpoint, "ein mann spielt im park .", trace=False, forced_prefix=[other])
    assert forced.tgt_ids[:2] == [BOS, other] and forced.decoding.steps[0].top_ids == plain.decoding.steps[0].top_ids
