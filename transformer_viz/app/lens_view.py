"""Step 2 of "What does a head do?" (pages/heads.py): each decoder layer's guess of the next token,
read by the plain logit lens or, where the checkpoint ships one, by its tuned lens
(interpret/tuned_lens.py), each layer's KL divergence to the output, and the lens after every
sublayer ("was it cross-attention or the FFN that decided?", interpret/lens.py)."""

from __future__ import annotations

import json

import streamlit as st

from transformer_viz.app import heads_view, loaders, widgets
from transformer_viz.app.shared import shared_resource
from transformer_viz.app.sidebar import Selection
from transformer_viz.interpret import explain as X
from transformer_viz.plots.heads import (SUBLAYER_NAMES, layer_kl_figure, lens_figure,
                                         sublayer_lens_figure)

PLAIN, TUNED = "plain logit lens", "tuned lens"
KIND_KEY = "heads_lens_kind"
NO_TUNED = ("This checkpoint ships no tuned lens (tuned_lens.safetensors beside its model): "
            "train one with `python -m transformer_viz tuned-lens`.")
TUNED_FORMULA = (r"\text{tuned lens after layer } l:\ \mathrm{softmax}\big("
                 r"\mathrm{LN}_{\text{final}}(A_l\,y^{(l)} + b_l)\,E^\top\big),\quad "
                 r"\min_{A_l, b_l}\ \mathrm{KL}\big(p_{\text{final}}\,\|\,\text{lens}_l\big)")


@st.cache_resource(max_entries=8, show_spinner=False)
def tuned_lens(checkpoint: str):
    """The checkpoint's tuned lens and its report (tuned_lens.json), or (None, None)."""
    from transformer_viz.interpret.tuned_lens import REPORT, load_tuned_lens

    ckpt = loaders.get_checkpoint(checkpoint)
    if ckpt.path is None:
        return None, None
    lens = load_tuned_lens(ckpt.path, ckpt.config)
    report = ckpt.path / REPORT
    return lens, json.loads(report.read_text()) if lens is not None and report.is_file() else None


@shared_resource(show_spinner="Reading each layer through the lens…", max_entries=64, ttl=3600)
def reading(checkpoint: str, sentence: str, tuned: bool = False) -> dict:
    """The sentence read through the plain or the tuned lens: ranks, top guesses and each layer's
    mean KL to the output (interpret.tuned_lens.sentence_lens)."""
    from transformer_viz.interpret.tuned_lens import sentence_lens

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    lens = tuned_lens(checkpoint)[0] if tuned else None
    return sentence_lens(ckpt.model, lens, run.src_ids, run.tgt_ids)


@shared_resource(show_spinner="Reading the stream after every sublayer…", max_entries=64, ttl=3600)
def sublayers(checkpoint: str, sentence: str) -> dict:
    """interpret.lens.sublayer_lens of the sentence's run: p, rank, kl (N, 3, T)."""
    import torch

    from transformer_viz.interpret.lens import sublayer_lens

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    src, tgt = torch.tensor([run.src_ids]), torch.tensor([run.tgt_ids])
    predicted = torch.tensor(run.tgt_ids[1:] + [ckpt.config.eos_id])
    return sublayer_lens(ckpt.model, src, tgt, predicted)


def choose_lens(checkpoint: str) -> bool:
    """The switch plain / tuned lens; True for the tuned lens. Disabled, with the reason, where the
    checkpoint ships none."""
    has_tuned = tuned_lens(checkpoint)[0] is not None
    if not has_tuned:
        st.session_state[KIND_KEY] = PLAIN
    choice = st.radio("Read the layers with the", [PLAIN, TUNED], key=KIND_KEY, horizontal=True,
                      disabled=not has_tuned, help=None if has_tuned else NO_TUNED)
    if not has_tuned:
        st.caption(f"The tuned lens is off: {NO_TUNED}")
    return choice == TUNED


def kl_section(checkpoint: str, sentence: str, tuned: bool) -> None:
    """Each layer's KL to the output for the lens chosen, as bars, with the other lens's numbers
    and the checkpoint's held-out report beside it."""
    name = TUNED if tuned else PLAIN
    kl = reading(checkpoint, sentence, tuned)["kl"]
    fig = widgets.cached_figure(layer_kl_figure, kl, title=f"How far each layer's reading is from "
                                                           f"the output ({name})")
    layers = [f"after layer {i}" for i in range(len(kl))]
    widgets.chart(fig, {"layer": layers, f"KL, {name} (nats)": kl}, "heads-lens-kl",
                  caption="Mean over this sentence's target positions of KL(output ‖ lens "
                          "reading), in nats: 0 means the layer already predicts the model's final "
                          "distribution. The last layer's reading is the output itself.")
    report = tuned_lens(checkpoint)[1]
    if report:
        pairs = ", ".join(f"layer {i} {a:.2f} → {b:.2f}" for i, (a, b)
                          in enumerate(zip(report["kl_plain"][:-1], report["kl_tuned"][:-1])))
        st.caption(f"Held out ({report['held_out_pairs']:,} pairs, {report['held_out']}), plain → "
                   f"tuned: {pairs} nats; trained on {report['training_pairs']:,} training pairs.")


def sublayer_section(checkpoint: str, sentence: str, tgt_labels: list[str], written: list[str]):
    """The lens after self-attention, cross-attention and the FFN of every decoder layer, and
    where each position's word was decided."""
    from transformer_viz.interpret.lens import decided_at

    sub = sublayers(checkpoint, sentence)
    N = sub["p"].shape[0]
    fig = widgets.cached_figure(sublayer_lens_figure, sub["p"], sub["rank"], tgt_labels,
                                title="Inside each decoder layer: p of the token finally written "
                                      "(cell: its rank)")
    data = {"written": written} | {f"p, layer {i}, {s}": sub["p"][i, k]
                                   for i in range(N) for k, s in enumerate(SUBLAYER_NAMES)}
    widgets.chart(fig, data, "heads-sublayer-lens",
                  caption="The logit lens after each sublayer and its Add & Norm: the row where a "
                          "column turns bright and stays bright is where the word was decided.")
    decided = decided_at(sub["rank"])
    counts = [int((decided % 3 == k)[decided >= 0].sum()) for k in range(3)]
    never = int((decided < 0).sum())
    st.markdown("Was it cross-attention or the FFN that decided? The written token becomes the top "
                "guess for good " + ", ".join(f"**{s}** at {c} position(s)" for s, c in
                                              zip(SUBLAYER_NAMES, counts))
                + f" of {len(written)}" + (f" (never: {never})" if never else "") + ".")


def lens_step(sel: Selection, pre_ln: bool, tgt_labels: list[str], written: list[str]) -> None:
    """The whole step: formulas, the switch, the heatmap of guesses, the KL bars, the sublayers."""
    st.latex(r"\text{guess after layer } l:\ \mathrm{softmax}\big(\mathrm{LN}_{\text{final}}"
             r"(y^{(l)})\,E^\top\big)\quad(\mathrm{LN}_{\text{final}} = "
             r"\text{identity for Post-LN})")
    st.markdown(X.LENS_NOTE[pre_ln])
    tuned = choose_lens(sel.checkpoint)
    if tuned:
        st.latex(TUNED_FORMULA)
        lens = reading(sel.checkpoint, sel.sentence, True)
    else:
        final_norm = not pre_ln or st.toggle("Apply the final LayerNorm to every layer", True,
                                             key="heads_lens_norm")
        lens = heads_view.lens(sel.checkpoint, sel.sentence, final_norm)
    tokens_of = loaders.get_checkpoint(sel.checkpoint).tokenizer.convert_ids_to_tokens
    top_tokens = [[tokens_of(list(map(int, ids))) for ids in layer] for layer in lens["top_ids"]]
    N = len(lens["rank"])
    title = (f"Each decoder layer's guess of the next token (cell: its top guess, "
             f"{TUNED if tuned else PLAIN})")
    fig = widgets.cached_figure(lens_figure, lens["rank"], top_tokens, lens["top_probs"],
                                tgt_labels, title=title)
    widgets.chart(fig, {f"rank after layer {i}": lens["rank"][i] for i in range(N)}
                  | {"written": written}, "heads-lens",
                  caption="Colour: log₁₀ of the rank of the token finally written (0 = already the "
                          "top guess). Hover a cell for that layer's top 5.")
    ready = (lens["rank"] == 1).argmax(0)  # first layer whose top guess is the final token
    never = ~(lens["rank"] == 1).any(0)
    counts = [int(((ready == i) & ~never).sum()) for i in range(N)]
    st.markdown("The written token is first the top guess " + ", ".join(
        f"after layer {i} at {c} position(s)" for i, c in enumerate(counts))
        + f", of {len(written)}.")
    kl_section(sel.checkpoint, sel.sentence, tuned)
    sublayer_section(sel.checkpoint, sel.sentence, tgt_labels, written)
