"""Model configuration: one dataclass, saved as JSON inside every checkpoint and used to rebuild the
model."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_viz.core.jsonconfig import JsonConfig, check_size, field_problems
from transformer_viz.core.special_tokens import BOS, EOS, PAD, UNK

# what FeedForward implements (models/transformer/model.py)
ACTIVATIONS = ("relu", "gelu", "swish", "gelu_tanh")


@dataclass
class ModelConfig(JsonConfig):
    """Hyper-parameters of the encoder–decoder Transformer, named as in the paper.

    d_model: width of every residual stream; h: attention heads; d_k = d_v = d_model / h;
    d_ff: inner width of the position-wise feed-forward network; N: layers in the encoder and in the
    decoder.
    """

    vocab_size: int = 8000
    d_model: int = 512
    d_ff: int = 2048
    h: int = 8
    N: int = 6
    max_len: int = 256  # maximum positions (source or target) the positional encoding is built for
    dropout: float = 0.1  # on embeddings + PE and on every sublayer output before the residual add
    attn_dropout: float = 0.0  # on the attention weights (not in the paper; off by default)
    pe_base: float = 10000.0  # the 10000 in PE(pos, 2i) = sin(pos / base^(2i / d_model))
    pre_ln: bool = False  # False: Post-LN as in the paper, x = LayerNorm(x + Sublayer(x))
    # source, target and output projection share one matrix (joint vocabulary)
    tie_embeddings: bool = True
    layer_norm_eps: float = 1e-5
    # The feed-forward network's nonlinearity: "relu" as in the paper; "gelu" (exact, erf) and
    # "swish" (x·sigmoid(x), also called SiLU) for imported Marian models (checkpoints/marian.py).
    activation: str = "relu"
    # embeddings × √d_model (the paper); Marian models may switch it off
    scale_embedding: bool = True
    # A learned-elsewhere bias added to the logits (Marian's final_logits_bias); our own models have
    # none.
    logits_bias: bool = False
    pad_id: int = PAD
    bos_id: int = BOS
    eos_id: int = EOS
    unk_id: int = UNK

    def __post_init__(self) -> None:
        if self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.d_model % 2 != 0:
            raise ValueError(f"d_model ({self.d_model}) must be even for the sin/cos positional "
                             "encoding")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not implemented; choose one of "
                             f"{', '.join(ACTIVATIONS)}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    def validate(self, fixed_ids: bool = True) -> None:
        """Types and ranges of every field, checked before anything is allocated.
        ``fixed_ids=False`` (an imported Marian model): the special tokens may have any IDs in the
        vocabulary."""
        limits = dict(LIMITS)
        if not fixed_ids:
            vocab = self.vocab_size if isinstance(self.vocab_size, int) else 0
            limits.update({name: (0, vocab - 1)
                           for name in ("pad_id", "bos_id", "eos_id", "unk_id")})
        problems = field_problems(self, limits, ("dropout", "attn_dropout"),
                                  ("pe_base", "layer_norm_eps"),
                                  ("pre_ln", "tie_embeddings", "scale_embedding", "logits_bias"))
        if problems:  # the estimate needs numbers
            check_size(problems, 0)
        per_layer = 4 * self.d_model * self.d_model + 2 * self.d_model * self.d_ff
        check_size(problems, 3 * self.N * per_layer
                   + (1 if self.tie_embeddings else 3) * self.vocab_size * self.d_model)


# Bounds on what a config.json may ask for (the paper's "big" model has d_model 1024, d_ff 4096, h
# 16, N 6).
LIMITS = {"vocab_size": (5, 1_000_000), "d_model": (2, 8192), "d_ff": (1, 65536), "h": (1, 256),
          "N": (1, 64), "max_len": (2, 65536), "pad_id": (PAD, PAD), "bos_id": (BOS, BOS),
          "eos_id": (EOS, EOS), "unk_id": (UNK, UNK)}



PRESETS: dict[str, dict] = {
    # The paper's base model (Vaswani et al., 2017, Table 3).
    "base": dict(d_model=512, d_ff=2048, h=8, N=6, dropout=0.1),
    # The size we train on a 2-core CPU for Multi30k. The shipped checkpoints lowered its dropout to
    # 0.2 (--model-overrides '{"dropout": 0.2}'; their config.json records it).
    "small": dict(d_model=256, d_ff=1024, h=8, N=3, dropout=0.3),
    # For tests: builds in milliseconds.
    "tiny": dict(d_model=32, d_ff=64, h=4, N=2, dropout=0.0, max_len=64),
}


def preset(name: str, **overrides) -> ModelConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown config preset {name!r}; choose one of {sorted(PRESETS)}")
    return ModelConfig(**{**PRESETS[name], **overrides})
