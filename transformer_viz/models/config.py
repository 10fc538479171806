"""Model configuration: one dataclass, saved as JSON inside every checkpoint and used to rebuild the model."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from transformer_viz.core.special_tokens import BOS, EOS, PAD, UNK


class JsonConfig:
    """A dataclass config as the JSON a checkpoint stores: unknown fields are refused, not dropped."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config fields: {sorted(unknown)}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path):
        return cls.from_dict(json.loads(Path(path).read_text()))


ACTIVATIONS = ("relu", "gelu", "swish")  # what FeedForward implements (model.py)


@dataclass
class ModelConfig(JsonConfig):
    """Hyper-parameters of the encoder–decoder Transformer, named as in the paper.

    d_model: width of every residual stream; h: attention heads; d_k = d_v = d_model / h;
    d_ff: inner width of the position-wise feed-forward network; N: layers in the encoder and in the decoder.
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
    tie_embeddings: bool = True  # source, target and output projection share one matrix (joint vocabulary)
    layer_norm_eps: float = 1e-5
    # The feed-forward network's nonlinearity: "relu" as in the paper; "gelu" (exact, erf) and "swish"
    # (x·sigmoid(x), also called SiLU) for imported Marian models (hf.py).
    activation: str = "relu"
    scale_embedding: bool = True  # embeddings × √d_model (the paper); Marian models may switch it off
    # A learned-elsewhere bias added to the logits (Marian's final_logits_bias); our own models have none.
    logits_bias: bool = False
    pad_id: int = PAD
    bos_id: int = BOS
    eos_id: int = EOS
    unk_id: int = UNK

    def __post_init__(self) -> None:
        if self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.d_model % 2 != 0:
            raise ValueError(f"d_model ({self.d_model}) must be even for the sin/cos positional encoding")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not implemented; choose one of {', '.join(ACTIVATIONS)}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.h



PRESETS: dict[str, dict] = {
    # The paper's base model (Vaswani et al., 2017, Table 3).
    "base": dict(d_model=512, d_ff=2048, h=8, N=6, dropout=0.1),
    # The size we train on a 2-core CPU for Multi30k. The shipped checkpoints lowered its dropout to 0.2
    # (--model-overrides '{"dropout": 0.2}'; their config.json records it).
    "small": dict(d_model=256, d_ff=1024, h=8, N=3, dropout=0.3),
    # For tests: builds in milliseconds.
    "tiny": dict(d_model=32, d_ff=64, h=4, N=2, dropout=0.0, max_len=64),
}


def preset(name: str, **overrides) -> ModelConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown config preset {name!r}; choose one of {sorted(PRESETS)}")
    return ModelConfig(**{**PRESETS[name], **overrides})
