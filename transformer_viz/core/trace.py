"""The recorder: an optional object passed into ``forward`` that keeps every intermediate tensor by name.

Nothing is ever stored on a module, so one cached model can serve many callers at once; each call
brings its own ``Trace``. The names and their shapes are listed by :func:`trace_names`, which the tests
check against a real forward pass, and in ``docs/trace_names.md``, written from it by
``python -m transformer_viz.trace > docs/trace_names.md``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

import torch


class Trace:
    """An ordered name -> tensor record of one forward pass (detached, on the CPU; floats read as float32)."""

    def __init__(self) -> None:
        self._tensors: "OrderedDict[str, torch.Tensor]" = OrderedDict()

    def record(self, name: str, tensor: torch.Tensor) -> None:
        # A view may share memory with something that lives on after the call (the positional-encoding
        # buffer, a key/value cache), so it is copied. Any other tensor is a fresh result that the model
        # never writes to again: keeping it as it is saves a copy of every intermediate.
        if tensor._is_view() or tensor.device.type != "cpu":
            tensor = tensor.detach().to("cpu", copy=True)
        self._tensors[name] = tensor.detach()

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            tensor = self._tensors[name]
        except KeyError:
            raise KeyError(f"{name!r} was not recorded; see docs/trace_names.md for the names") from None
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            # A bfloat16 model's tensors are handed out as float32 (numpy and the plots need it), converted
            # on first use rather than while recording, which would slow every traced forward pass.
            tensor = self._tensors[name] = tensor.float()
        return tensor

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def names(self) -> list[str]:
        return list(self._tensors)

    def items(self):
        return [(name, self[name]) for name in self._tensors]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(t.shape) for name, t in self._tensors.items()}


def _attention_names(prefix: str, q_len: str, k_len: str) -> list[tuple[str, str, str]]:
    # Self-attention reads one input X; cross-attention takes queries from the decoder stream and keys and
    # values from the encoder output. Every projection is an nn.Linear, so it adds a bias.
    x_q, x_kv = ("X", "memory") if prefix.endswith("cross_attn") else ("X", "X")
    return [
        (f"{prefix}.q", f"(B, h, {q_len}, d_k)", f"Q = {x_q} W_Q + b_Q, split into h heads"),
        (f"{prefix}.k", f"(B, h, {k_len}, d_k)", f"K = {x_kv} W_K + b_K"),
        (f"{prefix}.v", f"(B, h, {k_len}, d_k)", f"V = {x_kv} W_V + b_V"),
        (f"{prefix}.scores", f"(B, h, {q_len}, {k_len})", "Q Kᵀ / √d_k, before masking"),
        (f"{prefix}.mask", f"broadcastable to (B, h, {q_len}, {k_len})", "True = may attend"),
        (f"{prefix}.masked_scores", f"(B, h, {q_len}, {k_len})", "scores with masked cells set to −∞"),
        (f"{prefix}.weights", f"(B, h, {q_len}, {k_len})", "softmax over the last axis; masked cells exactly 0"),
        (f"{prefix}.heads", f"(B, h, {q_len}, d_k)", "weights · V, one result per head"),
        (f"{prefix}.out", f"(B, {q_len}, d_model)", "Concat(head_0, …, head_{h−1}) W_O + b_O"),
    ]


def _norm_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.residual", f"(B, {length}, d_model)", "x + Sublayer(x), the input of LayerNorm (Post-LN)"),
        (f"{prefix}.mean", f"(B, {length})", "per-position mean of the residual over d_model"),
        (f"{prefix}.var", f"(B, {length})", "per-position (biased) variance of the residual over d_model"),
        (f"{prefix}.out", f"(B, {length}, d_model)", "LayerNorm(residual) = γ ⊙ (residual − mean)/√(var + ε) + β"),
    ]


def _ffn_names(prefix: str, length: str) -> list[tuple[str, str, str]]:
    return [
        (f"{prefix}.hidden", f"(B, {length}, d_ff)", "max(0, x W_1 + b_1)"),
        (f"{prefix}.out", f"(B, {length}, d_model)", "hidden W_2 + b_2"),
    ]


def trace_names(N: int = 6) -> list[tuple[str, str, str]]:
    """Every recorded name with its shape and formula, for a model of N layers (Post-LN)."""
    rows: list[tuple[str, str, str]] = []

    def embedding_rows(side: str, length: str) -> list[tuple[str, str, str]]:
        return [
            (f"{side}.token_ids", f"(B, {length})", "token IDs from the tokenizer, padded with <pad>"),
            (f"{side}.embedding", f"(B, {length}, d_model)", "E[token_ids] × √d_model"),
            (f"{side}.positional", f"({length}, d_model)",
             "PE(pos, 2i) = sin(pos/base^(2i/d_model)), PE(pos, 2i+1) = cos(pos/base^(2i/d_model))"),
            (f"{side}.input", f"(B, {length}, d_model)", "embedding + positional (dropout in training)"),
        ]

    rows += embedding_rows("src", "S")
    for i in range(N):
        p = f"encoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "S", "S") + _norm_names(f"{p}.norm1", "S")
        rows += _ffn_names(f"{p}.ffn", "S") + _norm_names(f"{p}.norm2", "S")
        rows.append((f"{p}.out", "(B, S, d_model)", "output of encoder layer i (= norm2.out in Post-LN)"))
    rows.append(("encoder.out", "(B, S, d_model)", "output of the last encoder layer (the 'memory')"))
    rows += embedding_rows("tgt", "T")
    for i in range(N):
        p = f"decoder.{i}"
        rows += _attention_names(f"{p}.self_attn", "T", "T") + _norm_names(f"{p}.norm1", "T")
        rows += _attention_names(f"{p}.cross_attn", "T", "S") + _norm_names(f"{p}.norm2", "T")
        rows += _ffn_names(f"{p}.ffn", "T") + _norm_names(f"{p}.norm3", "T")
        rows.append((f"{p}.out", "(B, T, d_model)", "output of decoder layer i (= norm3.out in Post-LN)"))
    rows += [
        ("decoder.out", "(B, T, d_model)", "output of the last decoder layer"),
        ("logits", "(B, T, V)", "decoder.out Eᵀ (output projection tied to the embeddings)"),
        ("probs", "(B, T, V)", "softmax(logits) over the vocabulary"),
    ]
    return rows


# --- docs/trace_names.md --------------------------------------------------------------------------------

_DOC_HEAD = """# Traced tensors: names, shapes, formulas

Every name that `Transformer.forward(src, tgt, trace=Trace())` records, in the order it is recorded.
The app, the tests and the CLI (`python -m transformer_viz trace`) use exactly these names.
`{i}` is the layer index from 0 to N−1, and heads are numbered from 0 to h−1, as in the app's sidebar.
X is the sublayer's input and memory the encoder output. Dimensions: B batch, S source length, T target length,
h heads, d_k = d_model / h, d_ff the feed-forward width, V the vocabulary size.
Every tensor is detached and on the CPU, and floats read as float32; a tensor is copied only where it
shares memory with something that outlives the call (a view of the positional-encoding buffer or of a
key/value cache). Masks are boolean (True = may attend).

With Pre-LN (`pre_ln=True`) the `norm*` entries describe the LayerNorm applied *before* the sublayer:
`residual` is then the stream entering it and `out` its normalised value.

The last column names the nearest TransformerLens hook, for readers who know those names: the hooks of
its encoder–decoder model (`HookedEncoderDecoder`, blocks `encoder.{i}` and `decoder.{i}`), and
`hook_pos_embed` of `HookedTransformer`. Where they differ:

- `hook_embed` is E[tokens], without our ×√d_model.
- `hook_q`, `hook_k`, `hook_v` and `hook_z` are (batch, pos, head, d_head), where ours are (B, h, L, d_k):
  the head and position axes are swapped. `hook_attn_scores` and `hook_pattern` are
  (batch, head, query_pos, key_pos), as ours.
- `hook_attn_scores` is taken after the mask, so it is our `masked_scores`; the scores before the mask
  have no hook.
- TransformerLens's models are Pre-LN: `ln*.hook_scale` is √(var + ε), `ln*.hook_normalized` comes
  before γ and β, and the Post-LN sum before a LayerNorm (our `residual`) has no hook.

— marks a name with no counterpart.

A transformers Marian model imported by `load_checkpoint` (hf.py) records exactly these names and shapes,
with four differences in what they hold: `tgt.token_ids` starts with <pad> (Marian's decoder start token,
never masked: every `decoder.{i}.self_attn.mask` lets each query see position 0); `*.embedding` is
E[token_ids] without ×√d_model when its config has `scale_embedding: false`; `*.ffn.hidden` applies its
activation (swish x·σ(x) or the exact GELU) instead of max(0, ·); `logits` add its `final_logits_bias`.
Its d_model coordinates are in our order (the sines and cosines of `*.positional` interleaved): the import
reorders Marian's weights, so the figures of an imported model read like those of ours.

| name | shape | formula / meaning | TransformerLens |
|---|---|---|---|
"""

_ATTENTION_HOOKS = {"q": "hook_q", "k": "hook_k", "v": "hook_v", "masked_scores": "hook_attn_scores",
                    "weights": "hook_pattern", "heads": "hook_z"}


def transformerlens_hook(name: str) -> str:
    """The nearest TransformerLens hook for a generic traced name ("encoder.{i}.self_attn.weights"),
    "" where there is none; docs/trace_names.md says how near."""
    parts = name.split(".")
    if parts[0] in ("src", "tgt"):
        side = "encoder" if parts[0] == "src" else "decoder"
        return {"embedding": "hook_embed", "positional": "hook_pos_embed",
                "input": f"{side}.0.hook_resid_pre"}.get(parts[1], "")
    if len(parts) < 3:
        return ""  # encoder.out, decoder.out, logits, probs: no hook of their own
    block, part, leaf = ".".join(parts[:2]), parts[2], parts[-1]
    if part == "out":
        return f"{block}.hook_resid_post"
    if part in ("self_attn", "cross_attn"):
        module = "attn" if part == "self_attn" else "cross_attn"
        if leaf == "out":
            return f"{block}.hook_{module}_out"
        return f"{block}.{module}.{_ATTENTION_HOOKS[leaf]}" if leaf in _ATTENTION_HOOKS else ""
    if part.startswith("norm"):
        hook = {"var": "hook_scale", "out": "hook_normalized"}.get(leaf)
        return f"{block}.ln{part[len('norm'):]}.{hook}" if hook else ""
    return {"hidden": f"{block}.mlp.hook_post", "out": f"{block}.hook_mlp_out"}.get(leaf, "")


def names_markdown() -> str:
    """docs/trace_names.md: every traced name with ``{i}`` for the layer, its shape, its formula and the
    nearest TransformerLens hook."""
    rows = []
    for name, shape, formula in trace_names(1):
        generic = name.replace(".0.", ".{i}.")
        hook = transformerlens_hook(generic)
        rows.append(f"| `{generic}` | {shape} | {formula} | {f'`{hook}`' if hook else '—'} |")
    return _DOC_HEAD + "\n".join(rows) + "\n" + rnn_names_markdown() + vit_names_markdown() + detr_names_markdown()


_RNN_DOC_HEAD = """
## The recurrent encoder–decoders (rnn.py)

Every name that `RNNSeq2Seq.forward(src, tgt, trace=Trace())` records (the checkpoints `rnn-de-en` and
`rnn-attn-de-en`; `python -m transformer_viz trace --checkpoint checkpoints/rnn-attn-de-en …`), in order.
`rnn.attn.*` only with attention. Dimensions: d_hidden the GRU state width, d_emb the embedding width;
E is the embedding matrix that source, target and output share. TransformerLens has no recurrent models.

| name | shape | formula / meaning |
|---|---|---|
"""


def rnn_names_markdown() -> str:
    """The RNN section of docs/trace_names.md, from :func:`transformer_viz.rnn.trace_names`."""
    from transformer_viz.models.rnn import trace_names as rnn_trace_names

    return _RNN_DOC_HEAD + "\n".join(f"| `{name}` | {shape} | {formula} |" for name, shape, formula
                                     in rnn_trace_names(attention=True)) + "\n"


_VIT_DOC_HEAD = """
## The Vision Transformer (vit.py)

Every name that `ViT.forward(images, trace=Trace())` records (the checkpoint `vit-digits`, on 8 × 8 digits), in
order. Dimensions: p the patch side (2: 2 × 2 pixels), P = (8 / p)² patches (16), one more token for [CLS].
The encoder layers are the translation encoder's own, so their names are the same.

| name | shape | formula / meaning |
|---|---|---|
"""


def vit_names_markdown() -> str:
    """The ViT section of docs/trace_names.md, from :func:`transformer_viz.vit.trace_names`."""
    from transformer_viz.models.vit import trace_names as vit_trace_names

    return _VIT_DOC_HEAD + "\n".join(f"| `{name}` | {shape} | {formula} |" for name, shape, formula
                                     in vit_trace_names()) + "\n"


_DETR_DOC_HEAD = """
## The Detection Transformer (detr.py)

Every name that `DETR.forward(canvas, trace=Trace())` records (the checkpoint `detr-digits`, on 32 × 32
canvases), in order. Dimensions: S = (32 / 4)² = 64 feature-map cells, M = 8 object queries, n_classes + 1 = 11
classes (the last is ∅, no object). The encoder and decoder layers are the translation model's own, so their
names are the same.

| name | shape | formula / meaning |
|---|---|---|
"""


def detr_names_markdown() -> str:
    """The DETR section of docs/trace_names.md, from :func:`transformer_viz.detr.trace_names`."""
    from transformer_viz.models.detr import trace_names as detr_trace_names

    return _DETR_DOC_HEAD + "\n".join(f"| `{name}` | {shape} | {formula} |" for name, shape, formula
                                      in detr_trace_names()) + "\n"


if __name__ == "__main__":
    print(names_markdown(), end="")
