"""The Overview page through AppTest: the translation, and the architecture with this sentence's
shapes (drawn from the config alone while the model is still loading)."""

from __future__ import annotations

from tests.support.apptest import charts, rerun


def test_overview_shows_translation_and_architecture(open_app, tokenizer):
    at = open_app("transformer_viz/app/pages/overview.py")
    assert at.title[0].value == "Overview & translation"
    assert any("ein mann spielt im park" in t.value for t in at.text)
    S = len(tokenizer("ein mann spielt im park .", add_special_tokens=False)["input_ids"]) + 1
    assert f"(1, {S}, 32)" in charts(at)["architecture"]  # the source's shape, d_model 32


def test_the_overview_decodes_a_new_sentence_without_a_traced_pass(open_app, monkeypatch):
    # It shows the translations and S and T, no tensor: the traced pass is left to the pages that
    # show one, which find the decoding done (loaders.get_translation).
    from transformer_viz import engine
    from transformer_viz.app import loaders

    at = open_app("transformer_viz/app/pages/overview.py")
    passes = []
    real = engine.traced_forward
    monkeypatch.setattr(engine, "traced_forward", lambda *a, **k: passes.append(a) or real(*a, **k))
    at.text_area(key="sentence").set_value("zwei hunde spielen im schnee .")
    rerun(at)
    assert passes == [] and any("zwei hunde spielen im schnee" in t.value for t in at.text)
    # another page's
    run = loaders.get_run(at.session_state["checkpoint"], "zwei hunde spielen im schnee .")
    assert len(passes) == 1 and run.trace is not None


def test_first_visit_draws_the_architecture_before_the_model_loads(make_app, monkeypatch):
    from transformer_viz.app import loaders as webapp

    # as on a fresh server: nothing loaded, nothing cached
    monkeypatch.setattr(webapp, "_LOADED", set())
    webapp.get_checkpoint.clear()
    webapp.get_run.clear()
    webapp.get_translation.clear()
    at = rerun(make_app())
    # The preview (S and T as symbols) was replaced in place by the figure with the sentence's
    # shapes.
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    # S = 7 words + </s>
    assert len(specs) == 1 and "(1, S, " not in specs[0] and "(1, 8, 32)" in specs[0]
    assert webapp.model_loaded(at.session_state["checkpoint"])
    rerun(at)  # a rerun with the model in memory draws no preview
    assert len(at.get("plotly_chart")) == 1


def test_overview_translates_with_the_checkpoints_default_decoding_and_names_its_data(
        open_app, monkeypatch, tiny_checkpoint):
    from transformer_viz.app import about as webapp
    from transformer_viz.engine import run_sentence
    from transformer_viz.generation.decoding_defaults import GenerationDefaults

    monkeypatch.setattr(webapp, "generation_defaults",
                        lambda name: GenerationDefaults(num_beams=3, length_penalty=0.0))
    at = open_app("transformer_viz/app/pages/overview.py")
    beam = run_sentence(tiny_checkpoint, "ein mann spielt im park .", beam_size=3, alpha=0.0,
                        trace=False)
    labels = [c.value for c in at.caption]
    assert any("beam 3, α 0: this model's default" in label for label in labels)
    assert beam.translation in [t.value for t in at.text]
    # The tiny test card lists no corpora: such cards come from Multi30k-only training.
    assert any(m.value.startswith("Trained on picture captions (Multi30k).") for m in at.markdown)
    assert any(h.value == "Model card" for h in at.subheader)


def test_the_training_data_line_names_every_corpus_of_the_card():
    from transformer_viz.app.about import training_data_line

    card = {"data": {"Multi30k": "…", "Tatoeba": "…"}}
    assert (training_data_line(card)
            == "Trained on picture captions (Multi30k) and everyday sentences (Tatoeba).")
    assert training_data_line({}) == "Trained on picture captions (Multi30k)."


def test_a_lecture_sentence_gets_the_lectures_translation_and_a_plain_verdict(open_app):
    from transformer_viz.app.examples import LECTURE_SENTENCES_DE

    sentence = "Die Sonne geht im Osten auf."
    assert sentence in LECTURE_SENTENCES_DE
    at = open_app("transformer_viz/app/pages/overview.py", sentence)
    notes = [i.value for i in at.info if "The lecture translates it as" in i.value]
    assert len(notes) == 1 and "“The sun rises in the east.”" in notes[0]
    assert "**This translation is wrong**" in notes[0]  # the tiny test model cannot translate it
    other = open_app("transformer_viz/app/pages/overview.py", "ein mann spielt im park .")
    assert not [i for i in other.info if "The lecture translates it as" in i.value]


def test_the_verdict_names_a_wrong_translation_and_not_a_right_one():
    from transformer_viz.app.examples import reference_note

    right = reference_note("en", "I love machine learning.", "Ich liebe maschinelles Lernen.")
    wrong = reference_note("en", "I love machine learning.", "Ich liebe Maschine.")
    assert "chrF of this model's translation against it: 100" in right and "wrong" not in right
    assert "**This translation is wrong**" in wrong
    assert reference_note("en", "A dog.", "Ein Hund.") is None
