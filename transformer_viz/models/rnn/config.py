"""The recurrent encoder–decoder's JSON config (config.json with ``"arch": "rnn"``) and its
presets; no torch here, so that reading a config does not import it."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_viz.core.jsonconfig import JsonConfig, check_size, field_problems
from transformer_viz.core.special_tokens import BOS, EOS, PAD, UNK

ARCH = "rnn"
LIMITS = {"vocab_size": (5, 1_000_000), "d_emb": (1, 8192), "d_hidden": (1, 8192),
          "max_len": (2, 65536), "pad_id": (PAD, PAD), "bos_id": (BOS, BOS), "eos_id": (EOS, EOS),
          "unk_id": (UNK, UNK)}


@dataclass
class RNNConfig(JsonConfig):
    """Hyper-parameters of the recurrent encoder–decoder; ``arch`` tells a checkpoint's loader what
    to build."""

    vocab_size: int = 8000
    d_emb: int = 256  # token embedding width (source, target and output share one matrix)
    d_hidden: int = 512  # GRU state width, encoder and decoder
    # False: the context vector is the only bridge; True: additive attention
    attention: bool = False
    dropout: float = 0.1  # on embeddings and on the deep output
    max_len: int = 256  # longest source or target, in tokens (as the Transformer's positions)
    pad_id: int = PAD
    bos_id: int = BOS
    eos_id: int = EOS
    unk_id: int = UNK
    arch: str = ARCH

    def __post_init__(self) -> None:
        if self.arch != ARCH:
            raise ValueError(f"arch must be {ARCH!r}, not {self.arch!r}")

    def validate(self) -> None:
        """Types and ranges of every field, checked before anything is allocated
        (ValueError otherwise)."""
        problems = field_problems(self, LIMITS, ("dropout",), flags=("attention",))
        if problems:  # the estimate needs numbers
            check_size(problems, 0)
        d_in, d_h = self.d_emb + self.d_hidden, self.d_hidden
        check_size(problems, self.vocab_size * self.d_emb + 3 * (self.d_emb + d_h) * d_h
                   + 3 * (d_in + d_h) * d_h + 3 * d_h * d_h)

    @property
    def name(self) -> str:
        return "GRU encoder–decoder" + (" with attention" if self.attention else "")


PRESETS: dict[str, dict] = {
    "rnn": dict(d_emb=256, d_hidden=512, attention=False),
    "rnn-attn": dict(d_emb=256, d_hidden=512, attention=True),
    "tiny": dict(d_emb=16, d_hidden=24, dropout=0.0, max_len=64),  # tests
}


def preset(name: str, **overrides) -> RNNConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown RNN preset {name!r}; choose one of {sorted(PRESETS)}")
    return RNNConfig(**{**PRESETS[name], **overrides})
