"""Scoring helpers: the repetition ("stutter") detector used in model cards."""

from __future__ import annotations

from transformer_viz.generation.evaluation import has_repetition, repetition_rate


def test_a_unit_of_up_to_three_tokens_repeated_four_times_is_a_stutter():
    assert has_repetition([7, 5, 5, 5, 5])  # "Hiiii"
    assert has_repetition([9, 1, 2, 1, 2, 1, 2, 1, 2, 3])  # "Comomomom"
    assert has_repetition([4, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3])
    assert not has_repetition([5, 5, 5, 6, 5])  # three in a row is not four
    assert not has_repetition([1, 2, 1, 2, 1, 2, 3])
    assert not has_repetition([])


def test_repetition_rate_counts_outputs_on_the_models_subwords(tokenizer):
    hyps = ["a man runs in the park .", "a a a a dog .", "the dog runs ."]
    assert repetition_rate(tokenizer, hyps) == 1 / 3
    assert repetition_rate(tokenizer, []) == 0.0


def test_sentence_chrf_is_sacrebleus_for_one_sentence():
    import sacrebleu

    from transformer_viz.generation.evaluation import sentence_chrf

    assert sentence_chrf("The sun rises in the east.", "The sun rises in the east.") == 100.0
    hyp, ref = "The sun is walking in Oast.", "The sun rises in the east."
    assert sentence_chrf(hyp, ref) == sacrebleu.corpus_chrf([hyp], [[ref]]).score
    assert 0 < sentence_chrf(hyp, ref) < 50


def test_example_translations_are_recorded_in_the_card(checkpoint_dir, tmp_path):
    import shutil

    from transformer_viz.checkpoints.records import record_examples

    directory = tmp_path / "ckpt"
    shutil.copytree(checkpoint_dir, directory)
    record_examples(directory,
                    [{"source": "ein hund .", "translation": "a dog .", "reference": "a dog .",
                      "chrf": 100.0}])
    card = (directory / "README.md").read_text()
    assert "## Example sentences" in card and "| ein hund . | a dog . | a dog . | 100.0 |" in card


def test_bleu_by_length_is_kept_per_split_and_pages_compare_one_split(checkpoint_dir, tmp_path):
    import json
    import shutil

    from transformer_viz.app.about import lengths_on_one_split
    from transformer_viz.checkpoints.records import record_bleu_by_length

    directory = tmp_path / "ckpt"
    shutil.copytree(checkpoint_dir, directory)
    for split, bleu in (("tatoeba_dev", 30.0), ("test_2016_flickr", 20.0)):
        record_bleu_by_length(directory,
                              {"split": split, "decoding": "greedy", "sentences": 1, "bleu": bleu,
                               "buckets": [{"bucket": "≤ 10", "sentences": 1, "bleu": bleu}]})
    meta = json.loads((directory / "metadata.json").read_text())
    assert set(meta["bleu_by_length_splits"]) == {"tatoeba_dev", "test_2016_flickr"}
    card = (directory / "README.md").read_text()
    assert "tatoeba_dev, greedy decoding" in card and "test_2016_flickr, greedy decoding" in card
    # a card of one split
    older = {"bleu_by_length": {"split": "test_2016_flickr", "bleu": 10.0, "buckets": []}}
    other = {"bleu_by_length": {"split": "val", "bleu": 5.0, "buckets": []}}
    found = lengths_on_one_split({"rnn": older, "transformer": meta, "other": other})
    assert set(found) == {"rnn", "transformer"} and found["transformer"]["bleu"] == 20.0
