"""The model families, one line each: what config.json's ``"arch"`` names, and where its config and
model classes live.

Adding a model family means writing its folder ``models/<name>/`` (``config.py``: a JSON config
class with a ``validate()`` method and an ``arch`` field, without torch; ``model.py``: the model
class; ``names.py``: its documented ``trace_names()``) and adding one line to :data:`ARCHITECTURES`.
Loading (``checkpoints``), the command line and the app find it here.

Plain data and the standard library: the classes are imported only when asked for, so that reading a
config.json (the sidebar, the navigation) does not import torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

# a config.json without "arch" (every checkpoint written before there were others)
DEFAULT_ARCH = "transformer"


def _load(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Architecture:
    name: str  # the value of "arch" in config.json
    title: str  # how messages and pages name it: "unknown DETR checkpoint 'x'"
    config: str  # "module:Class" of its JSON config (a module without torch where there is one)
    model: str  # "module:Class" of the nn.Module
    # True: a tokenizer directory and decoding defaults come with it; False: it reads pixels
    reads_text: bool

    def config_type(self):
        return _load(self.config)

    def model_type(self):
        return _load(self.model)

    def trace_names(self, **options) -> list[tuple[str, str, str]]:
        """(name, shape, meaning) of every tensor the model records: its family's
        ``names.trace_names``."""
        family = self.model.partition(":")[0].rpartition(".")[0]  # transformer_viz.models.gpt
        return _load(family + ".names:trace_names")(**options)


M = "transformer_viz.models."
ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in (
    Architecture("transformer", "Transformer", M + "transformer.config:ModelConfig",
                 M + "transformer.model:Transformer", True),
    Architecture("rnn", "recurrent", M + "rnn.config:RNNConfig", M + "rnn.model:RNNSeq2Seq", True),
    Architecture("vit", "Vision Transformer", M + "vit.config:ViTConfig", M + "vit.model:ViT",
                 False),
    Architecture("detr", "DETR", M + "detr.config:DETRConfig", M + "detr.model:DETR", False),
    Architecture("gpt", "decoder-only", M + "gpt.config:GPTConfig", M + "gpt.model:GPT", True),
)}


def arch_name(config: dict) -> str:
    """The family a config.json's contents describe ("" when it names none we know, or is no JSON
    object)."""
    if not isinstance(config, dict):
        return ""
    name = config.get("arch", DEFAULT_ARCH)
    return name if isinstance(name, str) and name in ARCHITECTURES else ""


def architecture(name: str) -> Architecture:
    try:
        return ARCHITECTURES[name]
    except KeyError:
        raise ValueError(f"unknown model family {name!r}; known: "
                         f"{', '.join(ARCHITECTURES)}") from None
