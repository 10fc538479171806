"""The toy DETR's JSON config (config.json with ``"arch": "detr"``) and its classes; no torch
here, so that reading a config does not import it."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_viz.core.jsonconfig import JsonConfig, check_size, field_problems

ARCH = "detr"
# what a config.json may ask for
LIMITS = {"canvas_size": (4, 1024), "backbone_channels": (1, 1024), "n_queries": (1, 1024),
          "n_classes": (1, 100_000), "d_model": (2, 8192), "d_ff": (1, 65536), "h": (1, 256),
          "n_encoder_layers": (1, 64), "n_decoder_layers": (1, 64)}
NO_OBJECT = "∅"
CLASSES = tuple(str(d) for d in range(10)) + (NO_OBJECT,)


@dataclass
class DETRConfig(JsonConfig):
    """Hyper-parameters of the toy DETR; the layer fields mean what they mean in ``ModelConfig``."""

    canvas_size: int = 32  # canvases are canvas_size × canvas_size, one channel, values in [0, 1]
    backbone_channels: int = 32  # channels of the CNN's first convolution (twice as many after it)
    n_queries: int = 8  # M: object queries, so at most M objects per canvas
    n_classes: int = 10  # digits; one more logit is "no object"
    d_model: int = 64
    d_ff: int = 128
    h: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    # every canvas is new, so training never sees one twice: nothing to regularise
    dropout: float = 0.0
    attn_dropout: float = 0.0
    pre_ln: bool = True
    layer_norm_eps: float = 1e-5
    arch: str = ARCH

    def __post_init__(self) -> None:
        if self.arch != ARCH:
            raise ValueError(f"arch must be {ARCH!r}, not {self.arch!r}")
        if (not isinstance(self.canvas_size, int) or self.canvas_size < 4
                or self.canvas_size % 4 != 0):
            raise ValueError(f"canvas_size ({self.canvas_size}) must be a multiple of 4 (the "
                             "backbone's stride)")
        if not isinstance(self.h, int) or self.h < 1 or self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")

    def validate(self) -> None:
        """Types and ranges of every field, checked before anything is allocated
        (ValueError otherwise)."""
        problems = field_problems(self, LIMITS, ("dropout", "attn_dropout"), ("layer_norm_eps",),
                                  ("pre_ln",))
        if problems:  # the estimate needs numbers
            check_size(problems, 0)
        layers = self.n_encoder_layers + 2 * self.n_decoder_layers
        check_size(problems, layers * (4 * self.d_model ** 2 + 2 * self.d_model * self.d_ff))

    @property
    def grid(self) -> int:
        """Feature-map cells per side: the backbone downsamples by 4."""
        return self.canvas_size // 4

    @property
    def n_tokens(self) -> int:
        return self.grid ** 2

    @property
    def name(self) -> str:
        return (f"DETR, {self.n_queries} queries, {self.grid}×{self.grid} feature map, "
                f"d_model {self.d_model}")
