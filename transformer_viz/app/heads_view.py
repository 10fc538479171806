"""What the page "What does a head do?" (pages/heads.py) computes and keeps: the heads switched off
(in the URL as ``off=enc.0.3,cross.2.5``), the ablation and logit-lens numbers, and the
attributions, each computed once per (checkpoint, sentence, …) and shared read-only between
sessions. The numbers themselves come from interpret/explain.py, as for ``python -m transformer_viz
explain``."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import loaders, on_request, url, widgets
from transformer_viz.app.shared import shared_resource
from transformer_viz.app.sidebar import Selection
from transformer_viz.plots.heads import head_drop_figure

OFF_PARAM = "off"  # the URL's heads switched off
OFF_KEY = "heads_off"  # the page's multiselect
DROPS = "heads_drops"  # step 1's bars of every head off, as work asked for (app/on_request.py)


def heads_off_choice(sel: Selection, names: list[str]) -> list[str]:
    """The multiselect of heads to switch off, first filled from the URL; its choice written back to
    the URL. Names that this model does not have (another checkpoint, a hand-edited link) are
    dropped."""
    state = st.session_state
    if OFF_KEY not in state:
        state[OFF_KEY] = [n for n in st.query_params.get(OFF_PARAM, "").split(",") if n in names]
    state[OFF_KEY] = [n for n in state[OFF_KEY] if n in names]
    chosen = st.multiselect("Heads to switch off (kind.layer.head: enc = encoder self-attention, "
                            "dec = decoder self-attention, cross = "
                            "cross-attention)", names, key=OFF_KEY,
                            placeholder="none: every head on")
    url.write(**{OFF_PARAM: ",".join(chosen) or None})
    return chosen


@st.cache_resource(show_spinner="Switching heads off…", max_entries=64, ttl=3600)
def heads_numbers(checkpoint: str, sentence: str, heads_off: tuple[str, ...],
                  each_head: bool = True):
    """The ablation bars (``each_head``: else drops None), both probabilities per token and the
    logit lens (one batched pass), and the greedy translation with ``heads_off`` off (IDs and
    text)."""
    from transformer_viz.interpret.ablation import parse_heads
    from transformer_viz.interpret.explain import heads_run, translation_with_heads_off

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    heads = parse_heads(heads_off, ckpt.config)
    numbers = heads_run(ckpt.model, run.src_ids, run.tgt_ids, heads, each_head=each_head)
    if heads:
        off = translation_with_heads_off(ckpt, run.src_ids, heads)
    else:
        off = (run.tgt_ids[1:], run.translation)
    return numbers, off


def drops_part(sel: Selection, cfg, names: list[str], off: tuple[str, ...], numbers) -> None:
    """Step 1's bars of each head switched off alone and the line on those that matter most; for
    ``numbers`` without them (a large model's, until :data:`DROPS` is ready), the button that asks
    for them (app/on_request.py)."""
    from transformer_viz.interpret.explain import most_important_text

    if numbers.drops is None:
        on_request.offer(sel, cfg, DROPS, f"Switch each of the {len(names)} heads off in turn",
                         f"The bars switch each head off alone: one batched pass of {len(names)} "
                         "rows.")
        return
    fig = widgets.cached_figure(head_drop_figure, names, numbers.drops, off,
                                title="How much log p(translation) falls when one head alone "
                                "is off")
    widgets.chart(fig, {"head": names, "drop (nats)": numbers.drops}, "heads-drops",
                  caption="All 3·N·h heads in one batched forward pass: batch row r has head r "
                          "off, and every row reads the same original translation (teacher "
                          "forcing). Blue: encoder, green: decoder self-attention, purple: "
                          "cross-attention; orange: switched off above.")
    st.markdown(most_important_text(numbers))


@shared_resource(show_spinner="Reading each layer's guess…", max_entries=64, ttl=3600)
def lens(checkpoint: str, sentence: str, final_norm: bool = True) -> dict:
    """The logit lens of the sentence's run (one row, every head on); ``final_norm=False``: a Pre-LN
    model's lens without its final LayerNorm (what borrowing it changes)."""
    from transformer_viz.interpret.explain import logit_lens

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    return logit_lens(ckpt.model, run.src_ids, run.tgt_ids, final_norm=final_norm)


@st.cache_resource(show_spinner="Computing the attributions (integrated gradients: one batched "
                                "forward and backward pass over steps × target "
                                "positions)…", max_entries=32, ttl=3600)
def attributions(checkpoint: str, sentence: str, steps: int):
    """Integrated gradients (T, S) with f_t(e) − f_t(e') (T,), and gradient × input (T, S): slower
    than the rest of the page (seconds), so computed once per sentence and step count."""
    from transformer_viz.interpret.explain import gradient_x_input, integrated_gradients

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    ig, delta = integrated_gradients(ckpt.model, run.src_ids, run.tgt_ids, steps)
    return ig, delta, gradient_x_input(ckpt.model, run.src_ids, run.tgt_ids)


@st.cache_resource(show_spinner="Translating with that head off…", max_entries=32, ttl=3600)
def translation_off(checkpoint: str, sentence: str, heads_off: tuple[str, ...]) -> str:
    from transformer_viz.interpret.ablation import parse_heads
    from transformer_viz.interpret.explain import translation_with_heads_off

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    return translation_with_heads_off(ckpt, run.src_ids, parse_heads(heads_off, ckpt.config))[1]


def set_sentence(sentence: str) -> None:
    """A preset's button: the sidebar's sentence becomes the preset (as typing it there would)."""
    st.session_state["sentence"] = sentence
