"""nn.Module's attribute lookup, short-cut for the decoder step.

A read such as ``self.w_q`` on an nn.Module first fails the ordinary lookup, formats an
AttributeError and then finds the submodule in ``_modules`` (nn.Module.__getattr__): as long as a
small tensor operation, and a decoding step reads 55 submodules and the LayerNorms' parameters.
Both pieces here read torch's private dictionaries.

Measured with torch 2.13.0 (greedy translation of the first 40 test_2016_flickr sentences, de-en,
one thread, four alternations in one process): 35.0 ms a sentence without the copies, 33.7 ms with
them (-4 %). That is about 1 % of a page's server CPU for a new sentence, under the fence's 5 %
rule, but 4 % of everything `translate` and `evaluate` do, and without it greedy decoding is no
longer within 10 % of the separate fast path it replaced (docs/speed.md).
"""

from __future__ import annotations

from torch import nn

MEASURED_WITH = "2.13.0"  # the version this was measured with; the test fails on another


def submodules_at_hand(module: nn.Module) -> None:
    """The module's submodules in its instance dictionary too, so that ``module.name`` is a plain
    read. nn.Module.__setattr__ drops the copy when another module is assigned to the name. Not the
    parameters: ``model.to`` may replace those behind __setattr__'s back."""
    module.__dict__.update(module._modules)


def norm_parameters(norm: nn.LayerNorm):
    """(weight, bias) of a LayerNorm, read where nn.Module.__getattr__ would find them."""
    return norm._parameters["weight"], norm._parameters["bias"]
