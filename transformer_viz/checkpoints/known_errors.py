"""A checkpoint's known errors: translations of named sentences (the lecture's) that a reader found
wrong in meaning, although a score may not show it (chrF 63 for "Lippen", lips, where the lecture
says "Löwen", lions). Written into metadata.json after the checkpoint was chosen on the dev sets,
never used to choose one; the pages that show such a translation say plainly that it is wrong, and
the model card lists them.

metadata.json: ``"known_errors": [{"source": ..., "translation": ..., "error": ...}, ...]``, one
entry per wrong translation (greedy and beam search may each write their own): ``error`` says in
plain words what is wrong, as a sentence."""

from __future__ import annotations

KEY = "known_errors"


def known_error(meta: dict, source: str, translation: str) -> str | None:
    """What is wrong with ``translation`` of ``source``, when the checkpoint's metadata names this
    very translation as a known error; None otherwise."""
    source, translation = source.strip(), translation.strip()
    return next((entry["error"] for entry in meta.get(KEY) or []
                 if entry["source"] == source and entry["translation"] == translation), None)


def known_errors_lines(meta: dict) -> list[str]:
    """The model card's section on the known errors ([] when there are none)."""
    entries = meta.get(KEY) or []
    if not entries:
        return []
    lines = ["## Known errors", "",
             "Translations of the lecture's sentences that are wrong in meaning (found by reading "
             "them after the weights were chosen on the dev sets; the app says so where it shows "
             "one):", ""]
    lines += [f"- “{e['source']}” → “{e['translation']}”: {e['error']}" for e in entries]
    return lines + [""]
