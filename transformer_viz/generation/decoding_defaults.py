"""Decoding defaults that travel with a checkpoint, in transformers' ``generation_config.json``
format.

A checkpoint's scores are only reproducible with the decoding they were measured with (beam width,
length penalty), so those settings live beside the weights. ``translate``, ``trace``, ``evaluate``
and the app read them; command-line flags override them. The file holds the keys transformers'
``GenerationConfig`` reads (``num_beams``, ``length_penalty``, ``max_new_tokens``, the special-token
IDs), so an exported model decodes the same way; no torch is needed to read it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from transformer_viz.text.tokenizer import BOS, EOS, PAD

GENERATION_CONFIG = "generation_config.json"


@dataclass(frozen=True)
class GenerationDefaults:
    """How a checkpoint translates unless told otherwise.

    num_beams: 1 is greedy. length_penalty: α in the GNMT penalty ((5 + |Y|) / 6)^α that ranks
    finished beams (log-probability / penalty); unused by greedy decoding. max_new_tokens: 0 means
    the engine's rule (:func:`~transformer_viz.generation.decoding.max_output_length`).
    max_loop_repeats: see :func:`~transformer_viz.generation.decoding.loop_bans`.
    """

    num_beams: int = 1
    length_penalty: float = 0.6
    max_new_tokens: int = 0
    # The optional repetition guard: a unit of up to three subwords may occur at most this many
    # times in a row ("Comomomom"); 0 turns it off. Not a transformers key (its no_repeat_ngram_size
    # would also forbid a real "of the hood of the hood"); transformers keeps unknown keys and
    # ignores them.
    max_loop_repeats: int = 0
    # Which beam search: "gnmt", ours (finished beams ranked by log p / ((5 + |Y|) / 6)^α), or "hf",
    # the one transformers' generate runs (log p / |Y|^α, with its early_stopping rule;
    # decoding.beam_search_hf). Not a transformers key; a Marian directory's generation_config.json
    # means "hf" (checkpoints/marian.py).
    beam_scoring: str = "gnmt"
    # transformers' key: False, True or "never"; read by the "hf" scoring
    early_stopping: bool | str = False
    # Token IDs never written: the single-token entries of transformers' bad_words_ids
    # (Marian models ban <pad>).
    suppress_ids: tuple[int, ...] = ()
    # Not a decoding setting: the ID each output starts with, as transformers names it.
    decoder_start_token_id: int = BOS
    bos_token_id: int = BOS
    eos_token_id: int = EOS
    pad_token_id: int = PAD

    def override(self, num_beams: int | None = None, length_penalty: float | None = None,
                 max_loop_repeats: int | None = None) -> "GenerationDefaults":
        """These defaults with the given (non-None) settings replaced: flags beat the file."""
        changes = {k: v for k, v in (("num_beams", num_beams), ("length_penalty", length_penalty),
                                     ("max_loop_repeats", max_loop_repeats)) if v is not None}
        return replace(self, **changes)

    def describe(self) -> str:
        method = ("greedy" if self.num_beams <= 1
                  else f"beam {self.num_beams}, α {self.length_penalty:g}")
        return method + (f", loops ≤ {self.max_loop_repeats}×" if self.max_loop_repeats else "")

    def to_json(self) -> dict:
        data = asdict(self)
        if not data["max_new_tokens"]:
            del data["max_new_tokens"]  # transformers reads a missing key as "no limit of its own"
        if not data["max_loop_repeats"]:
            del data["max_loop_repeats"]
        del data["suppress_ids"]
        if self.suppress_ids:
            data["bad_words_ids"] = [[i] for i in self.suppress_ids]  # transformers' name for them
        if data["beam_scoring"] == "gnmt":
            # the files written before "hf" existed stay as they were
            del data["beam_scoring"], data["early_stopping"]
        return data


def read_json_object(path: Path) -> dict:
    """A JSON file that must hold an object; ValueError saying what is wrong otherwise
    (no torch needed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object, not {type(data).__name__}")
    return data


_NOT_NUMBERS = ("beam_scoring", "early_stopping", "suppress_ids")


def _single_token_bans(bad_words_ids) -> tuple[int, ...]:
    """The single-token entries of transformers' ``bad_words_ids`` (longer banned sequences are not
    followed)."""
    if not isinstance(bad_words_ids, list):
        return ()
    return tuple(sorted({int(w[0]) for w in bad_words_ids if isinstance(w, list) and len(w) == 1
                         and isinstance(w[0], int) and not isinstance(w[0], bool) and w[0] >= 0}))


def load_generation_defaults(directory: str | Path | None,
                             beam_scoring: str = "gnmt") -> GenerationDefaults:
    """The checkpoint's ``generation_config.json``, or greedy decoding when it has none.
    ``beam_scoring``: what the file means when it does not say (a transformers directory's file
    means "hf")."""
    path = Path(directory) / GENERATION_CONFIG if directory else None
    if path is None or not path.is_file():
        return GenerationDefaults(beam_scoring=beam_scoring)
    data = read_json_object(path)
    known = {k: data[k] for k in GenerationDefaults.__dataclass_fields__
             if k in data and k not in _NOT_NUMBERS}
    try:
        defaults = GenerationDefaults(**{k: (float(v) if k == "length_penalty" else int(v))
                                         for k, v in known.items()},
                                      beam_scoring=data.get("beam_scoring", beam_scoring),
                                      early_stopping=data.get("early_stopping", False),
                                      suppress_ids=_single_token_bans(data.get("bad_words_ids")))
    except (TypeError, ValueError) as exc:  # e.g. "num_beams": null or "five"
        raise ValueError(f"{path}: a decoding setting is not a number ({exc})") from exc
    if defaults.beam_scoring not in ("gnmt", "hf"):
        raise ValueError(f"{path}: beam_scoring must be \"gnmt\" or \"hf\", not "
                         f"{defaults.beam_scoring!r}")
    if not (isinstance(defaults.early_stopping, bool) or defaults.early_stopping == "never"):
        raise ValueError(f"{path}: early_stopping must be true, false or \"never\", not "
                         f"{defaults.early_stopping!r}")
    if not 1 <= defaults.num_beams <= 32:
        raise ValueError(f"{path}: num_beams must be between 1 and 32, not {defaults.num_beams}")
    if defaults.max_new_tokens < 0:
        raise ValueError(f"{path}: max_new_tokens must not be negative")
    if defaults.max_loop_repeats < 0:
        raise ValueError(f"{path}: max_loop_repeats must not be negative (0 turns the guard off)")
    return defaults


def save_generation_defaults(directory: str | Path, defaults: GenerationDefaults) -> Path:
    path = Path(directory) / GENERATION_CONFIG
    path.write_text(json.dumps(defaults.to_json(), indent=2) + "\n")
    return path
