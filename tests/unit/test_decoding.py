"""What decoding may write and what counts as written: the output-length cap and the cut at </s>."""

from __future__ import annotations

import torch

from transformer_viz.models.transformer.config import preset
from transformer_viz.generation.decoding import (ban_loops, beam_search, greedy_decode, loop_bans,
                                           max_output_length)
from transformer_viz.generation.evaluation import has_repetition
from transformer_viz.text.tokenizer import BOS, EOS, PAD, decode, output_ids


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


def test_the_loop_guard_bans_exactly_the_token_that_would_complete_one_repeat_too_many():
    written = torch.tensor([[3, 1, 2, 1, 3, 5, 5, 5],    # "5" three times: a fourth is banned
                            # "7 8" three times and a 7: the 8 is banned
                            [9, 7, 8, 7, 8, 7, 8, 7],
                            [4, 6, 4, 6, 9, 9, 4, 6]])   # no unit three times in a row: nothing is
    bans = loop_bans(written, max_repeats=3)  # (N, 3): one column per unit length
    assert bans.tolist() == [[5, -1, -1], [-1, 8, -1], [-1, -1, -1]]
    logp = torch.zeros(3, 10)
    banned = ban_loops(logp, written, 3)
    assert torch.isneginf(banned).nonzero().tolist() == [[0, 5], [1, 8]]


def test_with_the_loop_guard_no_output_loops_and_outputs_that_did_not_loop_stay_the_same(
        tiny_model):
    torch.manual_seed(0)
    # (B, S): a random tiny model loops readily
    src = torch.randint(4, tiny_model.cfg.vocab_size, (24, 6))
    src[:, -1] = EOS
    free = greedy_decode(tiny_model, src, max_len=30, record=False)
    guarded = greedy_decode(tiny_model, src, max_len=30, record=False, max_loop_repeats=3)
    looped = [has_repetition(t) for t in free.tokens]
    assert any(looped), "the test needs some looping output to mean anything"
    assert not any(has_repetition(t) for t in guarded.tokens)
    for was_looping, a, b in zip(looped, free.tokens, guarded.tokens):
        if not was_looping:
            assert a == b
    beams = beam_search(tiny_model, src, beam_size=3, max_len=30, record=False, max_loop_repeats=3)
    assert not any(has_repetition(t) for t in beams.tokens)


@torch.no_grad()
def test_a_forced_prefix_is_written_first_and_greedy_decoding_continues_from_it(tiny_model):
    """"What if the model had chosen another word?": the output starts with the forced tokens, then
    follows the model's own greedy choices, exactly as a plain loop that reruns the whole model on
    each prefix."""
    src = torch.tensor([[5, 9, 12, 7, EOS]])  # (1, S)
    plain = greedy_decode(tiny_model, src, max_len=12, top_k=3)
    forced = [plain.steps[0].top_ids[0][1], 23]  # the runner-up at step 1, then any token
    result = greedy_decode(tiny_model, src, max_len=12, top_k=3, forced_prefix=forced)
    tgt = [BOS] + forced
    # the reference: a full forward per step, argmax of the last row
    while len(tgt) - 1 < 12 and tgt[-1] != EOS:
        logits = tiny_model(src, torch.tensor([tgt]))  # (1, t, V)
        tgt.append(int(logits[0, -1].argmax()))
    assert result.tokens[0][:2] == forced
    assert result.tokens[0] == output_ids(tgt[1:])
    # the forced steps record the probability the model gave the forced token, and its own top
    # candidates
    first = torch.softmax(tiny_model(src, torch.tensor([[BOS]]))[0, -1].double(), -1)  # (V,)
    assert result.steps[0].chosen == [forced[0]]
    assert abs(result.steps[0].chosen_prob[0] - float(first[forced[0]])) < 1e-5
    assert result.steps[0].top_ids == plain.steps[0].top_ids
    # forcing the model's own choices changes nothing; no prefix is plain greedy
    own = greedy_decode(tiny_model, src, max_len=12, top_k=3, forced_prefix=plain.tokens[0][:3])
    assert own.tokens == plain.tokens and own.scores == plain.scores
    assert (greedy_decode(tiny_model, src, max_len=12, top_k=3, forced_prefix=[]).tokens
            == plain.tokens)


def test_run_sentence_passes_a_forced_prefix_to_greedy_decoding(tiny_checkpoint):
    from transformer_viz.engine import run_sentence

    plain = run_sentence(tiny_checkpoint, "ein mann spielt im park .", trace=False)
    other = plain.decoding.steps[0].top_ids[0][1]
    forced = run_sentence(tiny_checkpoint, "ein mann spielt im park .", trace=False,
                          forced_prefix=[other])
    assert (forced.tgt_ids[:2] == [BOS, other]
            and forced.decoding.steps[0].top_ids == plain.decoding.steps[0].top_ids)
