"""The decoder-only model's JSON config (config.json with ``"arch": "gpt"``); no torch here, so
that reading a config does not import it."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_viz.core.jsonconfig import JsonConfig, check_size, field_problems
from transformer_viz.core.special_tokens import BOS, EOS, PAD, UNK
from transformer_viz.models.transformer.config import ACTIVATIONS

ARCH = "gpt"
NO_PAD = -1  # pad_id of a model trained without padding (GPT-2): no token is ever hidden as padding


@dataclass
class GPTConfig(JsonConfig):
    """Hyper-parameters of the decoder-only model, named as in
    :class:`~transformer_viz.models.transformer.config.ModelConfig` (d_model, d_ff, h, N: N blocks
    in the one stack). ``arch`` tells a checkpoint's loader what to build."""

    vocab_size: int = 8000
    d_model: int = 256
    d_ff: int = 1024
    h: int = 8
    N: int = 4
    max_len: int = 128  # positions the learned position embedding has rows for
    dropout: float = 0.1
    attn_dropout: float = 0.0
    pre_ln: bool = True  # GPT-2's blocks; False builds Post-LN blocks (and no final LayerNorm)
    layer_norm_eps: float = 1e-5
    activation: str = "gelu_tanh"  # GPT-2's "gelu_new"
    pad_id: int = PAD  # NO_PAD (−1): no padding token (imported GPT-2)
    bos_id: int = BOS  # what a prompt starts with (GPT-2: <|endoftext|>)
    eos_id: int = EOS  # what ends a completion (GPT-2: <|endoftext|> again)
    unk_id: int = UNK
    arch: str = ARCH

    def __post_init__(self) -> None:
        if self.arch != ARCH:
            raise ValueError(f"arch must be {ARCH!r}, not {self.arch!r}")
        if not isinstance(self.h, int) or self.h < 1 or self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not implemented; "
                             f"choose one of {', '.join(ACTIVATIONS)}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    @property
    def name(self) -> str:
        return f"GPT (N={self.N}, d_model={self.d_model}, h={self.h}, d_ff={self.d_ff})"

    def validate(self) -> None:
        """Types and ranges of every field, checked before anything is allocated
        (ValueError otherwise)."""
        vocab = (self.vocab_size if isinstance(self.vocab_size, int)
                 and not isinstance(self.vocab_size, bool) else 1)
        limits = {"vocab_size": (5, 1_000_000), "d_model": (2, 8192), "d_ff": (1, 65536),
                  "h": (1, 256), "N": (1, 128), "max_len": (2, 65536),
                  "pad_id": (NO_PAD, vocab - 1), "bos_id": (0, vocab - 1), "eos_id": (0, vocab - 1),
                  "unk_id": (NO_PAD, vocab - 1)}
        problems = field_problems(self, limits, ("dropout", "attn_dropout"), ("layer_norm_eps",),
                                  ("pre_ln",))
        if problems:  # the estimate needs numbers
            check_size(problems, 0)
        per_block = 4 * self.d_model * self.d_model + 2 * self.d_model * self.d_ff
        check_size(problems, self.N * per_block + (self.vocab_size + self.max_len) * self.d_model)
