"""The Vision Transformer's JSON config (config.json with ``"arch": "vit"``) and its classes; no
torch here, so that reading a config does not import it."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_viz.core.jsonconfig import JsonConfig, check_size, field_problems

ARCH = "vit"
# what a config.json may ask for
LIMITS = {"image_size": (1, 1024), "patch_size": (1, 1024), "n_classes": (1, 100_000),
          "d_model": (2, 8192), "d_ff": (1, 65536), "h": (1, 256), "N": (1, 64)}
CLASSES = tuple(str(d) for d in range(10))


@dataclass
class ViTConfig(JsonConfig):
    """Hyper-parameters of the Vision Transformer; ``arch`` tells a checkpoint's loader what to
    build.

    The encoder fields (d_model, d_ff, h, N, dropout, attn_dropout, pre_ln, layer_norm_eps) mean
    what they mean in :class:`~transformer_viz.models.transformer.config.ModelConfig`:
    ``transformer.EncoderLayer`` reads them from this config.
    """

    image_size: int = 8  # images are image_size × image_size, one channel, values in [0, 1]
    patch_size: int = 2  # p: patches of p × p pixels, P = (image_size / p)² of them
    n_classes: int = 10
    d_model: int = 64
    d_ff: int = 128
    h: int = 4
    N: int = 3
    dropout: float = 0.1
    attn_dropout: float = 0.0
    pre_ln: bool = True
    layer_norm_eps: float = 1e-5
    arch: str = ARCH

    def __post_init__(self) -> None:
        if self.arch != ARCH:
            raise ValueError(f"arch must be {ARCH!r}, not {self.arch!r}")
        if not isinstance(self.patch_size, int) or not isinstance(self.image_size, int) \
                or self.patch_size < 1 or self.image_size % self.patch_size != 0:
            raise ValueError(f"patch_size ({self.patch_size}) must divide image_size "
                             f"({self.image_size})")
        if not isinstance(self.h, int) or self.h < 1 or self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")

    def validate(self) -> None:
        """Types and ranges of every field, checked before anything is allocated
        (ValueError otherwise)."""
        problems = field_problems(self, LIMITS, ("dropout", "attn_dropout"), ("layer_norm_eps",),
                                  ("pre_ln",))
        if problems:  # the estimate needs numbers
            check_size(problems, 0)
        check_size(problems, self.N * (4 * self.d_model ** 2 + 2 * self.d_model * self.d_ff))

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.image_size // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid ** 2

    @property
    def name(self) -> str:
        return (f"ViT, {self.patch_size}×{self.patch_size} patches, N {self.N}, "
                f"d_model {self.d_model}")
