"""transformer_viz/views/practice/: every exercise's checker against answers worked out here,
independently of the exercise (the tokenizer's tokens counted, the traced tensors read by their
documented names, the formulas, the heads switched off one at a time), on two sentences in each
direction of the tiny model, whose random weights give no fixed answer; right answers, wrong ones
and the edge cases (spacing, case, the word-start mark, a number just outside the tolerance). Also
the progress in the URL, and the answer drawn on a figure."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer_viz.app.navigation import PAGES
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.ablation import all_heads
from transformer_viz.interpret.explain import head_drops_one_at_a_time
from transformer_viz.plots.describe import describe
from transformer_viz.plots.marks import mark_answer
from transformer_viz.views import practice as P
from transformer_viz.views.practice.checks import words_answer

# Two sentences a direction: one whose every word is one piece, one with a word the tokenizer
# splits.
CASES = [("de", "ein mann spielt im park ."), ("de", "zwei kinderhunde sitzen am strand ."),
         ("en", "a dog runs in the park ."), ("en", "two children sit at the beachball .")]
LAYER, HEAD = 1, 2


@pytest.fixture(scope="module", params=CASES, ids=[f"{lang}:{s}" for lang, s in CASES])
def case(request, tiny_checkpoint):
    """(checkpoint, run, context) of one sentence; English sources on the same tiny weights, the
    card's direction reversed (the tokenizer knows both languages)."""
    lang, sentence = request.param
    other = {"de": "en", "en": "de"}[lang]
    metadata = {**tiny_checkpoint.metadata, "src_lang": lang, "tgt_lang": other}
    ckpt = dataclasses.replace(tiny_checkpoint, metadata=metadata)
    run = run_sentence(ckpt, sentence)
    return ckpt, run, P.Context(run, ckpt, LAYER, HEAD)


def exercise(exercise_id: str) -> P.Exercise:
    return next(e for e in P.EXERCISES if e.id == exercise_id)


def posed(ctx, exercise_id: str) -> P.Posed:
    return exercise(exercise_id).pose(ctx)


def weights(run, name: str) -> np.ndarray:
    return run.trace[name][0].numpy()


def outside(value: float) -> float:
    """A number just beyond the tolerance (±1 %, or ±0.005 near 0)."""
    return value + max(0.005, 0.01 * abs(value)) * 1.2 + 1e-4


def inside(value: float) -> float:
    return value + max(0.005, 0.01 * abs(value)) * 0.8


def assert_checks(answer: P.Answer, right: list[str], wrong: list[str]) -> None:
    for typed in right:
        assert answer.check(typed), f"{typed!r} should be right (answer {answer.shown!r})"
    for typed in wrong:
        assert not answer.check(typed), f"{typed!r} should be wrong (answer {answer.shown!r})"


# --- the exercises
# ---------------------------------------------------------------------------------------

def test_at_least_12_exercises_along_the_lectures_path_each_with_hints_a_page_and_glossary(case):
    assert len(P.EXERCISES) >= 12 and len({e.id for e in P.EXERCISES}) == len(P.EXERCISES)
    pages = [p.url_path for p in PAGES]
    order = [pages.index(e.page) for e in P.EXERCISES]
    assert order[0] == pages.index("tokens") and P.EXERCISES[-1].page == "decoding"
    assert order.index(pages.index("positional")) < order.index(pages.index("decoder"))
    _, _, ctx = case
    for e in P.EXERCISES:
        assert e.terms and all(t in P.GLOSSARY for t in e.terms), e.id
        question = e.pose(ctx)
        assert question.question and len(question.hints) == 2 and all(question.hints), e.id
        assert question.solution and question.answer.shown, e.id
        # the answer the third hint shows is right
        assert question.answer.check(question.answer.shown), e.id
        fig = question.figure.figure()
        assert fig.layout.title.text.startswith("Answer"), e.id
        assert re.search(r"\d", describe(fig)), e.id  # its screen reader's sentence has a number


def test_how_many_tokens(case, tokenizer):
    _, run, ctx = case
    S = len(tokenizer(run.source_text, add_special_tokens=False)["input_ids"]) + 1  # and </s>
    assert_checks(posed(ctx, "tokens").answer, [str(S), f"  {S} ", f"{S}.0", f"S = {S}"],
                  [str(S - 1), str(S + 1), "", "many"])


def test_which_word_is_split(case, tokenizer):
    _, run, ctx = case
    words = [w for w in run.source_text.split() if w.isalnum()]
    split = [w for w in words if len(tokenizer(w, add_special_tokens=False)["input_ids"]) > 1]
    whole = [w for w in words if w not in split]
    answer = posed(ctx, "pieces").answer
    if split:
        assert_checks(answer, split + [f"  {split[0].upper()} ", f"“{split[0]}”"],
                      whole + ["none", ""])
    else:
        assert_checks(answer, ["none", " None ", ""], whole)
    assert (run.source_text, bool(split)) in {("ein mann spielt im park .", False),
                                              ("zwei kinderhunde sitzen am strand .", True),
                                              ("a dog runs in the park .", False),
                                              ("two children sit at the beachball .", True)}


def test_the_embeddings_factor(case):
    ckpt, _, ctx = case
    factor = math.sqrt(ckpt.config.d_model)
    assert_checks(posed(ctx, "scale").answer,
                  [f"{factor:.2f}", f"{factor:.2f}".replace(".", ","), f"{inside(factor):.4f}"],
                  [f"{outside(factor):.4f}", f"{outside(-factor):.4f}", str(ckpt.config.d_model),
                   "√"])


def test_a_positional_encoding(case):
    ckpt, run, ctx = case
    cfg = ckpt.config
    pos = min(3, len(run.src_ids) - 1)
    value = math.sin(pos / cfg.pe_base ** (2 / cfg.d_model))  # PE(pos, 2i) with 2i = 2
    question = posed(ctx, "positional")
    assert f"PE({pos}, 2)" in question.question
    assert_checks(question.answer, [f"{value:.2f}", f" {value:.3f} ", f"{inside(value):.4f}"],
                  [f"{outside(value):.4f}",
                   f"{math.cos(pos / cfg.pe_base ** (2 / cfg.d_model)):.2f}"])


def test_d_k(case):
    ckpt, _, ctx = case
    cfg = ckpt.config
    d_k = cfg.d_model // cfg.h
    assert_checks(posed(ctx, "d_k").answer, [str(d_k), f" {d_k} "],
                  [str(cfg.d_model), str(cfg.h), str(d_k + 1)])


def token_cases(tokens: list[str], row: np.ndarray) -> tuple[list[str], list[str]]:
    """Right (the most weighted token, as written, without its word-start mark, upper-cased, spaced)
    and wrong (the least weighted, where no token as heavy reads the same) answers for one row of
    weights."""
    j, k = int(row.argmax()), int(row.argmin())
    best = tokens[j]
    right = [best, f"  {best.upper()} "]
    if best.replace("▁", ""):
        right.append(best.replace("▁", ""))
    near = {t.replace("▁", "").casefold() for t, w in zip(tokens, row) if w >= 0.99 * row.max()}
    wrong = [tokens[k]] if tokens[k].replace("▁", "").casefold() not in near else []
    return right, wrong + ["", "nothing"]


def test_where_an_encoder_head_looks(case):
    _, run, ctx = case
    i = min(1, len(run.src_ids) - 1)
    row = weights(run, f"encoder.{LAYER}.self_attn.weights")[HEAD, i]  # (S,)
    right, wrong = token_cases(run.src_tokens, row)
    question = posed(ctx, "self_attention")
    assert f"position {i}" in question.question
    assert f"layer {LAYER}, head {HEAD}" in question.question
    assert_checks(question.answer, right, wrong)


def test_the_causal_mask_gives_the_future_weight_0(case):
    _, run, ctx = case
    T = len(run.tgt_ids)
    a, b = max(0, min(2, T - 2)), None
    b = max(a + 1, min(a + 3, T - 1))
    assert weights(run, f"decoder.{LAYER}.self_attn.weights")[HEAD, a, b] == 0.0
    question = posed(ctx, "causal")
    assert f"position {a}" in question.question and f"position {b}" in question.question
    assert_checks(question.answer, ["0", "0.00", " 0,0 ", "0.004"], ["0.006", "1", "0.5", ""])


def test_the_head_that_matters_most(case):
    ckpt, run, ctx = case
    drops = head_drops_one_at_a_time(ckpt.model, run.src_ids, run.tgt_ids)  # the slow reference
    heads = all_heads(ckpt.config)
    best, worst = heads[int(drops.argmax())], heads[int(drops.argmin())]
    right = [str(best), f" {best.kind.upper()} {best.layer} {best.head} ",
             f"{ {'enc': 'encoder', 'dec': 'decoder', 'cross': 'cross-attention'}[best.kind]}, "
             f"layer {best.layer}, head {best.head}"]
    wrong = [str(worst), f"{best.kind}.{best.layer}", "cross.9.9", ""]
    assert_checks(posed(ctx, "head_off").answer, right, wrong)


def test_add_and_norm_mean(case):
    _, run, ctx = case
    mean = float(weights(run, f"encoder.{LAYER}.norm1.residual")[0].astype(np.float64).mean())
    assert_checks(posed(ctx, "add_norm").answer,
                  [f"{mean:.2f}", f"{inside(mean):.4f}", f" {mean:.3f}"],
                  [f"{outside(mean):.4f}", f"{-mean + 0.02 * np.sign(mean):.2f}", "0.5"])


def test_the_feed_forward_parameters(case):
    ckpt, _, ctx = case
    d, d_ff = ckpt.config.d_model, ckpt.config.d_ff
    count = 2 * d * d_ff + d_ff + d
    assert_checks(posed(ctx, "ffn").answer,
                  [str(count), f"{count:,}", f"{count:,}".replace(",", " ")],
                  [str(count - 1), str(2 * d * d_ff), str(count + d)])


def test_the_cross_attention_shape(case, tokenizer):
    _, run, ctx = case
    _, h, T, S = run.trace[f"decoder.{LAYER}.cross_attn.weights"].shape  # (B, h, T, S)
    assert S == len(tokenizer(run.source_text, add_special_tokens=False)["input_ids"]) + 1
    assert_checks(posed(ctx, "cross_shape").answer,
                  [f"({h}, {T}, {S})", f"{h} × {T} × {S}", f"[1, {h}, {T}, {S}]",
                   f"h={h}, T={T}, S={S}"],
                  [f"({h}, {S}, {T})", f"({T}, {S})", f"({h}, {T}, {T})", ""])


def test_where_the_decoder_looks_in_the_source(case):
    _, run, ctx = case
    t = min(1, len(run.tgt_ids) - 1)
    row = weights(run, f"decoder.{LAYER}.cross_attn.weights")[HEAD, t]  # (S,)
    right, wrong = token_cases(run.src_tokens, row)
    assert_checks(posed(ctx, "cross_look").answer, right, wrong)


def test_the_probability_of_the_first_token_written(case):
    _, run, ctx = case
    logits = weights(run, "logits")[0].astype(np.float64)  # (V,), position 0
    p = float(np.exp(logits - logits.max())[run.tgt_ids[1]] / np.exp(logits - logits.max()).sum())
    assert_checks(posed(ctx, "output").answer,
                  [f"{p:.2f}", f"{inside(p):.4f}", f"{p:.3f}".replace(".", ",")],
                  [f"{outside(p):.4f}", f"{1 - p:.2f}", ""])


@torch.no_grad()
def greedy_by_hand(ckpt, src_ids: list[int], steps: int) -> list[int]:
    """Temperature 0 by hand: the full forward pass again at every step, its most probable token
    written."""
    cfg = ckpt.config
    out = [cfg.bos_id]
    for _ in range(steps):
        logits = ckpt.model(torch.tensor([src_ids]), torch.tensor([out]))[0, -1]  # (V,)
        out.append(int(logits.argmax()))
        if out[-1] == cfg.eos_id:
            break
    return out[1:]


def test_temperature_0_is_the_greedy_translation(case):
    ckpt, run, ctx = case
    ids = greedy_by_hand(ckpt, run.src_ids, len(run.tgt_ids) - 1)
    ids = ids[:-1] if ids and ids[-1] == ckpt.config.eos_id else ids
    text = ckpt.tokenizer.decode(ids, skip_special_tokens=True)
    assert " ".join(text.split()) == " ".join(run.translation.split())
    assert_checks(posed(ctx, "temperature").answer, [text, f"  {text.upper()}  ", f"“{text}”"],
                  [text + " extra", text[:-1] if len(text) > 1 else "x", "greedy"])


# --- reading answers
# ---------------------------------------------------------------------------------------

def test_normalising_text_numbers_and_heads():
    assert P.normalise("  Der   HUND ") == "der hund"
    assert P.normalise_token("▁Hund") == P.normalise_token("␣hund") == "hund"
    assert P.normalise_token("3 ␣Hund") == "hund"  # as a figure labels it
    assert P.normalise_sentence("A man , he said .") == "a man, he said."
    assert P.parse_number("2,83") == 2.83 and P.parse_number("≈ 0.5") == 0.5
    assert P.parse_number("x") is None and P.parse_number("d_k = 8") == 8
    assert P.parse_number("−1.5") == -1.5
    assert P.parse_number("4 192", integer=True) == 4192 == P.parse_number("4,192", integer=True)
    assert P.within(1.0099, 1.0) and not P.within(1.0111, 1.0) and P.within(0.004, 0.0)
    assert P.head_name("Cross 1 2") == "cross.1.2"
    assert P.head_name("cross-attention, layer 1, head 2") == "cross.1.2"
    assert P.head_name("encoder.0.3") == "enc.0.3" and P.head_name("cross 1") is None
    assert P.largest([0.5, 0.498, 0.1]) == [0, 1] and P.largest([-2.0, -1.0]) == [1]
    several = words_answer(["mann", "park"], "“mann”, “park”")
    assert several.check("“mann”, “park”") and several.check("Park")
    assert several.check("mann or park")
    assert not several.check("mann, ein") and not several.check("none") and not several.check("")


def test_progress_in_the_url():
    n = len(P.EXERCISES)
    assert P.exercise_number("3", n) == 3 and P.exercise_number(None, n) == 1
    assert P.exercise_number("99", n) == n
    assert P.exercise_number("0", n) == 1 and P.exercise_number("x", n) == 1
    assert P.parse_done("4,1,3,3,x,99, 2", n) == [1, 2, 3, 4] and P.parse_done(None, n) == []
    assert P.format_done([4, 1, 3]) == "1,3,4" and P.format_done([]) is None
    assert P.summary([1, 3, 4, 7, 9], 14) == "5 of 14 answered correctly: 1, 3, 4, 7, 9."
    assert P.summary([], 14) == "0 of 14 answered correctly yet."
    assert P.summary(range(1, 15), 14) == "All 14 of 14 answered correctly."


def test_the_answer_is_marked_on_a_copy_of_the_figure():
    from transformer_viz.plots.common import heatmap

    fig = heatmap(np.arange(12.0).reshape(3, 4), ["a", "b", "c", "d"], ["x", "y", "z"],
                  title="weights")
    marked = mark_answer(fig, "Answer: b", rows=(2, 2), cols=(1, 1))
    # the figure given, which the app may share between sessions, is unchanged
    assert fig.layout.shapes == () and fig.layout.title.text == "weights"
    (shape,) = marked.layout.shapes
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (0.5, 1.5, 1.5, 2.5) and shape.xref == "x"
    assert marked.layout.title.text == "Answer: b<br><sup>weights</sup>"
    whole_row = mark_answer(fig, "Answer", rows=(0, 0)).layout.shapes[0]
    assert whole_row.xref == "x domain" and (whole_row.x0, whole_row.x1) == (0, 1)
    assert mark_answer(fig, "Answer").layout.shapes == ()


SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints"


@pytest.mark.parametrize("direction, sentence",
                         [("de-en", "Ein Mann fährt mit dem Fahrrad durch die Stadt."),
                          ("en-de", "Two dogs are playing in the snow.")])
def test_every_exercise_on_the_shipped_checkpoints(direction, sentence):
    """On a trained model: each exercise posed, its own answer accepted, its numbers where the
    model says."""
    if not (SHIPPED / direction / "model.safetensors").is_file():
        pytest.skip(f"the shipped checkpoint {direction} is missing")
    from transformer_viz.checkpoints import load_checkpoint

    ckpt = load_checkpoint(SHIPPED / direction)
    run = run_sentence(ckpt, sentence)
    ctx = P.Context(run, ckpt, 1, 3)
    for e in P.EXERCISES:
        question = e.pose(ctx)
        assert question.answer.check(question.answer.shown), e.id
    cfg = ckpt.config
    assert posed(ctx, "scale").answer.check(f"{math.sqrt(cfg.d_model):.2f}")
    assert posed(ctx, "d_k").answer.check(str(cfg.d_model // cfg.h))
    assert posed(ctx, "temperature").answer.check(run.translation.upper())
