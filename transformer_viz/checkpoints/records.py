"""Scores recorded into a checkpoint directory: a row of metadata.json's ``scores``, its
``bleu_by_length`` or a DETR's ``test`` result, each followed by a model card rewritten from the new
metadata, so that the README.md beside the weights never disagrees with metadata.json.

The scores themselves are measured elsewhere (generation.evaluation, vision.canvases); this
module only writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformer_viz.checkpoints import CARD, METADATA, load_config, load_metadata, model_card
from transformer_viz.checkpoints.cards import detr_card

# Rows of the model card's score table in this order: validation first, then the test sets.
SPLIT_ORDER = {"val": 0, "test_2016_flickr": 1, "test_2017_flickr": 2, "tatoeba_dev": 3,
               "tatoeba_test": 4}
SCORE_KEYS = ("split", "decoding", "sentences", "bleu", "chrf", "bleu_lower_tok", "repetition_rate")


def _update(checkpoint_dir, change, card=model_card) -> None:
    """Read the checkpoint's metadata, let ``change`` edit it in place, write it back and rewrite
    the card."""
    directory = Path(checkpoint_dir)
    meta = load_metadata(directory)
    change(meta)
    (directory / METADATA).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    (directory / CARD).write_text(card(load_config(directory), meta))


def record_scores(checkpoint_dir, report: dict) -> None:
    """Add (or replace) one score row in the checkpoint's metadata.json and rewrite its model
    card."""
    row = {k: report[k] for k in SCORE_KEYS if k in report}

    def change(meta: dict) -> None:
        key = (row["split"], row["decoding"])
        rows = [r for r in meta.get("scores", []) if (r.get("split"), r.get("decoding")) != key]
        meta["scores"] = sorted(rows + [row],
                                key=lambda r: (SPLIT_ORDER.get(r["split"], 9), r["decoding"]))

    _update(checkpoint_dir, change)


def record_bleu_by_length(checkpoint_dir, entry: dict) -> None:
    """Store one bucketed-BLEU result in metadata.json (key ``bleu_by_length``, and beside the other
    splits' under ``bleu_by_length_splits``; the card shows them all) and rewrite the model card."""

    def change(meta: dict) -> None:
        meta["bleu_by_length"] = entry
        meta.setdefault("bleu_by_length_splits", {})[entry.get("split", "?")] = entry

    _update(checkpoint_dir, change)


def record_examples(checkpoint_dir, rows: list[dict]) -> None:
    """Store example translations (source, translation, reference, chrf) in metadata.json (key
    ``examples``) and rewrite the model card."""
    _update(checkpoint_dir, lambda meta: meta.update(examples=rows))


def record_detr_test(checkpoint_dir, report: dict) -> None:
    """Store a DETR's precision and recall on new canvases as its test result (metadata.json's
    ``test``) and rewrite its model card."""
    _update(checkpoint_dir, lambda meta: meta.update(test=report), detr_card)
