"""docs/trace_names.md, written from every model family's ``trace_names`` (models.registry):

    python -m transformer_viz.models.trace_docs > docs/trace_names.md
"""

from __future__ import annotations

from transformer_viz.models.registry import ARCHITECTURES
from transformer_viz.models.transformer.names import trace_names, transformerlens_hook

_DOC_HEAD = """# Traced tensors: names, shapes, formulas

Every name that `Transformer.forward(src, tgt, trace=Trace())` records, in the order it is recorded.
The app, the tests and the CLI (`python -m transformer_viz trace`) use exactly these names.
`{i}` is the layer index from 0 to N−1, and heads are numbered from 0 to h−1, \
as in the app's sidebar.
X is the sublayer's input and memory the encoder output. Dimensions: B batch, S source length, \
T target length,
h heads, d_k = d_model / h, d_ff the feed-forward width, V the vocabulary size.
Every tensor is detached and on the CPU, and floats read as float32; \
a tensor is copied only where it
shares memory with something that outlives the call (a view of the positional-encoding buffer \
or of a
key/value cache). Masks are boolean (True = may attend).

With Pre-LN (`pre_ln=True`) the `norm*` entries describe the LayerNorm applied *before* the \
sublayer:
`residual` is then the stream entering it and `out` its normalised value.

The last column names the nearest TransformerLens hook, for readers who know those names: \
the hooks of
its encoder–decoder model (`HookedEncoderDecoder`, blocks `encoder.{i}` and `decoder.{i}`), and
`hook_pos_embed` of `HookedTransformer`. Where they differ:

- `hook_embed` is E[tokens], without our ×√d_model.
- `hook_q`, `hook_k`, `hook_v` and `hook_z` are (batch, pos, head, d_head), where ours are \
(B, h, L, d_k):
  the head and position axes are swapped. `hook_attn_scores` and `hook_pattern` are
  (batch, head, query_pos, key_pos), as ours.
- `hook_attn_scores` is taken after the mask, so it is our `masked_scores`; \
the scores before the mask
  have no hook.
- TransformerLens's models are Pre-LN: `ln*.hook_scale` is √(var + ε), `ln*.hook_normalized` comes
  before γ and β, and the Post-LN sum before a LayerNorm (our `residual`) has no hook.

— marks a name with no counterpart.

A transformers Marian model imported by `load_checkpoint` (checkpoints/marian.py) \
records exactly these names and shapes,
with four differences in what they hold: \
`tgt.token_ids` starts with <pad> (Marian's decoder start token,
never masked: every `decoder.{i}.self_attn.mask` lets each query see position 0); `*.embedding` is
E[token_ids] without ×√d_model when its config has `scale_embedding: false`; \
`*.ffn.hidden` applies its
activation (swish x·σ(x) or the exact GELU) instead of max(0, ·); \
`logits` add its `final_logits_bias`.
Its d_model coordinates are in our order (the sines and cosines of `*.positional` interleaved): \
the import
reorders Marian's weights, so the figures of an imported model read like those of ours.

| name | shape | formula / meaning | TransformerLens |
|---|---|---|---|
"""


def names_markdown() -> str:
    """docs/trace_names.md: every traced name with ``{i}`` for the layer, its shape, its formula and
    the nearest TransformerLens hook."""
    rows = []
    for name, shape, formula in trace_names(1):
        generic = name.replace(".0.", ".{i}.")
        hook = transformerlens_hook(generic)
        rows.append(f"| `{generic}` | {shape} | {formula} | {f'`{hook}`' if hook else '—'} |")
    return _DOC_HEAD + "\n".join(rows) + "\n" + "".join(
        section(head, ARCHITECTURES[name].trace_names(**options))
        for head, name, options in _SECTIONS)


def section(head: str, names: list[tuple[str, str, str]]) -> str:
    """One model family's table: its heading and one row per (name, shape, formula)."""
    return head + "\n".join(f"| `{name}` | {shape} | {formula} |"
                            for name, shape, formula in names) + "\n"


_RNN_DOC_HEAD = """
## The recurrent encoder–decoders (models/rnn/)

Every name that `RNNSeq2Seq.forward(src, tgt, trace=Trace())` records \
(the checkpoints `rnn-de-en` and
`rnn-attn-de-en`; `python -m transformer_viz trace --checkpoint checkpoints/rnn-attn-de-en …`), \
in order.
`rnn.attn.*` only with attention. Dimensions: d_hidden the GRU state width, \
d_emb the embedding width;
E is the embedding matrix that source, target and output share. TransformerLens has no recurrent \
models.

| name | shape | formula / meaning |
|---|---|---|
"""


_VIT_DOC_HEAD = """
## The Vision Transformer (models/vit/)

Every name that `ViT.forward(images, trace=Trace())` records (the checkpoint `vit-digits`, \
on 8 × 8 digits), in
order. Dimensions: p the patch side (2: 2 × 2 pixels), P = (8 / p)² patches (16), \
one more token for [CLS].
The encoder layers are the translation encoder's own, so their names are the same.

| name | shape | formula / meaning |
|---|---|---|
"""


_DETR_DOC_HEAD = """
## The Detection Transformer (models/detr/)

Every name that `DETR.forward(canvas, trace=Trace())` records (the checkpoint `detr-digits`, \
on 32 × 32
canvases), in order. Dimensions: S = (32 / 4)² = 64 feature-map cells, M = 8 object queries, \
n_classes + 1 = 11
classes (the last is ∅, no object). The encoder and decoder layers are the translation model's \
own, so their
names are the same.

| name | shape | formula / meaning |
|---|---|---|
"""


_GPT_DOC_HEAD = """
## The decoder-only model (models/gpt/)

Every name that `GPT.forward(tokens, trace=Trace())` records (the checkpoints `gpt-en` and \
`gpt-de`, and GPT-2
read from a transformers directory), in order, for N = 1; \
`{i}` runs over the N blocks. It has the decoder's
names where it has the decoder's tensors: `tgt.*`, `decoder.{i}.self_attn.*` (always causal), \
`decoder.{i}.ffn.*`,
`decoder.{i}.out`, `decoder.out`, `logits`, `probs`. Its blocks are Pre-LN, \
so `decoder.{i}.norm1` is the
LayerNorm before the self-attention and `decoder.{i}.norm2` the one before the feed-forward \
network (the
encoder layer's two norms, not the decoder layer's three). It lacks every `src.*` and `encoder.*` \
name (no
encoder), `decoder.{i}.cross_attn.*` and `decoder.{i}.norm3` (no cross-attention). \
`tgt.positional` is a learned
table, not the sinusoids, and `tgt.embedding` has no ×√d_model. Row t of `logits` \
predicts token t + 1.

| name | shape | formula / meaning |
|---|---|---|
"""


_SECTIONS = ((_RNN_DOC_HEAD, "rnn", {"attention": True}), (_VIT_DOC_HEAD, "vit", {}),
             (_DETR_DOC_HEAD, "detr", {}), (_GPT_DOC_HEAD, "gpt", {"N": 1}))

if __name__ == "__main__":
    print(names_markdown(), end="")
