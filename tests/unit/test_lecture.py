"""transformer_viz/views/lecture/: the lecture as data, its live texts checked against numbers
recomputed from the trace, every step's figure drawn in both styles, the step in a URL, and the
presets' honest verdicts."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support.apptest import SENTENCE
from transformer_viz.views import lecture
from transformer_viz.app.navigation import PAGES
from transformer_viz.engine import run_sentence


@pytest.fixture(scope="module")
def ctx(tiny_checkpoint):
    run = run_sentence(tiny_checkpoint, SENTENCE)
    return lecture.Context(run, layer=1, head=2,
                           id_to_token=tiny_checkpoint.tokenizer.convert_ids_to_tokens,
                           metadata=tiny_checkpoint.metadata, position=2,
                           model=tiny_checkpoint.model)


def test_the_lecture_is_an_ordered_list_of_at_least_16_steps_with_a_figure_a_formula_and_notes():
    steps = lecture.STEPS
    assert len(steps) >= 16 and len({s.id for s in steps}) == len(steps)
    order = [s.id for s in steps]
    # the lecture's order: the RNN first, attention beyond text last
    assert order[0] == "rnn" and order[-2:] == ["vit", "detr"]
    assert (order.index("positional") < order.index("qkv") < order.index("cross")
            < order.index("inference"))
    pages = {p.url_path for p in PAGES}
    for step in steps:
        assert step.figure in lecture.FIGURES and step.formula and step.notes.say and step.notes.ask
        # a page of the app, or one still to come
        assert step.page in pages | {"rnn", "vit", "detr"}, step.id


def test_the_misconceptions_are_stated_correctly_in_the_notes():
    careful = {s.id: s.notes.careful for s in lecture.STEPS}
    assert ("The base is 10000" in careful["positional"]
            and "some slides write 1000." in careful["positional"])
    assert "Q comes from the decoder, K and V from the encoder" in careful["cross"]
    assert "(B, h, T_target, S_source)" in careful["cross"] and "not (B, T, T)" in careful["cross"]
    assert "queries are rows" in careful["lookup"] and "row" in careful["scores"]


def percentages(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"(\d+) %", text)]


def test_multihead_text_quotes_the_traced_weights(ctx):
    weights = ctx.run.trace["encoder.1.self_attn.weights"][0].numpy()  # (h, S, S)
    w = weights[2].copy()
    np.fill_diagonal(w, -1)
    # no pronoun in the sentence: the strongest link of head 2
    i, j = np.unravel_index(w.argmax(), w.shape)
    text = lecture.text_multihead(ctx)
    tokens = [lecture.word(t) for t in ctx.run.src_tokens]
    assert (f"\"{tokens[i]}\" gives {100 * w[i, j]:.0f} % of its attention to \"{tokens[j]}\""
            in text)
    others = [np.delete(weights[h][i], i).max() for h in range(weights.shape[0])]
    assert f"head {int(np.argmax(others))} ({100 * max(others):.0f} %" in text


def test_a_pronoun_is_the_query_the_text_follows():
    assert lecture.focus_query(["▁The", "▁kids", "▁left", ",", "▁so", "▁they", "▁left"]) == 5
    assert lecture.focus_query(["▁Ein", "▁Hund"]) is None
    weights = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.6, 0.3, 0.1]])
    assert lecture.strongest_link(weights, True) == (1, 2, 0.7)  # the diagonal does not count
    assert lecture.strongest_link(weights, True, query=2) == (2, 0, 0.6)
    assert lecture.strongest_link(weights, False) == (1, 2, 0.7)


def test_texts_carry_the_runs_own_numbers(ctx):
    run, cfg = ctx.run, ctx.run.config
    S, T = len(run.src_ids), len(run.tgt_ids)
    assert (f"{S} tokens" in lecture.text_tokens(ctx)
            and f"= {run.src_ids[0]}" in lecture.text_tokens(ctx))
    assert f"(B, h, T, S) = (1, {cfg.h}, {T}, {S})" in lecture.text_cross(ctx)
    assert f"the {T * (T - 1) // 2} scores of later positions" in lecture.text_scores(ctx)
    assert f"√d_model = √{cfg.d_model}" in lecture.text_embeddings(ctx)
    assert "totals exactly 0" in lecture.text_masked_self(ctx)
    step = run.decoding.steps[1]  # position 2
    assert "At step 2 greedy decoding takes" in lecture.text_inference(ctx)
    assert percentages(lecture.text_inference(ctx))[0] == round(100 * step.top_probs[0][0])
    hidden = run.trace["encoder.1.ffn.hidden"][0].numpy()
    assert (f"{100 * (hidden == 0).mean():.0f} % of those units are exactly 0"
            in lecture.text_add_norm(ctx))
    p = lecture.chosen_probabilities(run)
    # traced pass = decoding
    np.testing.assert_allclose(p[0], run.decoding.steps[0].chosen_prob[0], atol=1e-5)
    assert "warm-up" in lecture.text_training(ctx)
    for step in lecture.STEPS:  # two to four sentences, whatever the run
        text = step.text(ctx)
        assert 2 <= len(re.findall(r"[.!?](?:\s|$)", text)) <= 5, (step.id, text)


@pytest.mark.parametrize("projector", [False, True])
def test_every_step_draws_its_figure(ctx, projector):
    for step in lecture.STEPS:
        spec = lecture.FIGURES[step.figure](ctx)
        fig = lecture.draw(spec.plot, projector, *spec.args, **spec.kwargs)
        assert fig.data, step.id
        if projector:
            assert fig.layout.height == lecture.PROJECTOR_HEIGHT
            assert all(a.tickfont.size >= 18
                       for a in [*fig.select_xaxes(), *fig.select_yaxes()]), step.id


def test_the_step_in_a_url_falls_back_to_1():
    n = len(lecture.STEPS)
    assert [lecture.step_number(x) for x in ("7", " 3 ", str(n), "1")] == [7, 3, n, 1]
    assert [lecture.step_number(x)
            for x in (None, "", "0", str(n + 1), "-2", "2.5", "abc", "1e3", "٣")] == [1] * 9


def test_presets_are_the_lectures_examples_and_the_verdict_is_honest(ctx):
    sentences = {p.sentence for p in lecture.PRESETS}
    assert {"Komm her bitte.", "The kids were scared of the lions, so they left right away.",
            "Where there is a will, there is a way."} <= sentences
    assert lecture.preset_for(" Komm her bitte. ").reference == "Please come here."
    preset = lecture.Preset("x", "de", SENTENCE, ctx.run.translation)
    verdict = lecture.preset_verdict(preset, ctx.run, ctx.id_to_token)
    # the slide's own words: no warning
    assert "wrong" not in verdict and "another wording" not in verdict
    far = lecture.Preset("x", "de", SENTENCE, "Völlig andere Wörter hier stehen")
    verdict = lecture.preset_verdict(far, ctx.run, ctx.id_to_token)
    assert "0 of the slide's 5 words" in verdict
    weakest = lecture.chosen_probabilities(ctx.run).min()
    assert ("likely wrong" in verdict) == (weakest < lecture.UNSURE)


def test_the_rnn_figure_draws_long_sentences_with_an_ellipsis_and_one_context_vector():
    from transformer_viz.plots.lecture import rnn_context_figure, shown_positions

    assert shown_positions(4) == [0, 1, 2, 3] and shown_positions(6) == list(range(6))
    assert shown_positions(16) == [0, 1, 2, None, 14, 15]
    fig = rnn_context_figure([f"▁w{i}" for i in range(16)] + ["</s>"], ["▁a", "▁b", "</s>"])
    names = [t.text[0] for t in fig.data]
    assert names == ["h1", "h2", "h3", "h16", "h17", "c", "s1", "s2", "s3"]
    texts = [a.text for a in fig.layout.annotations]
    assert "…" in texts and "encoder: 17 source tokens" in texts and "&lt;/s&gt;" in texts


def test_a_step_names_its_figure_builder_and_the_projector_style_draws_under_a_name_of_its_own():
    from transformer_viz.plots.decoding import topk_figure

    assert all(callable(step.figure) and callable(step.text) for step in lecture.STEPS)
    projector = lecture.drawer(topk_figure, True)
    assert (lecture.drawer(topk_figure, False) is topk_figure
            and lecture.drawer(topk_figure, True) is projector)
    # The app's figure cache keys a figure by its function's name: the two styles must not share
    # one.
    names = {f"{f.__module__}.{f.__qualname__}" for f in (topk_figure, projector)}
    assert len(names) == 2
    assert projector(["▁a", "b"], [0.6, 0.4]).layout.height == lecture.PROJECTOR_HEIGHT


def test_the_verdict_says_a_known_error_is_wrong_whatever_the_words_shared(ctx):
    """The checkpoint's metadata names this very translation as wrong: the verdict says so and why,
    although it shares every word of the slide; another translation of the sentence is judged by
    the words alone."""
    preset = lecture.Preset("x", "de", SENTENCE, ctx.run.translation)
    meta = {"known_errors": [{"source": SENTENCE, "translation": ctx.run.translation,
                              "error": "It names the wrong animal."}]}
    verdict = lecture.preset_verdict(preset, ctx.run, ctx.id_to_token, meta)
    assert "This translation is wrong: It names the wrong animal. Say so." in verdict
    other = {"known_errors": [{**meta["known_errors"][0], "translation": "Something else."}]}
    assert "wrong" not in lecture.preset_verdict(preset, ctx.run, ctx.id_to_token, other)
