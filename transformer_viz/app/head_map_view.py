"""Step 5 of "What does a head do?" (pages/heads.py): the map of head types over layers × heads for
each kind of attention, and one head's identity card (interpret/head_cards.py) with a button that
switches it off: it joins the heads of the URL's ``off=``, which step 1 reads."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from transformer_viz.app import heads_view, loaders, on_request, url, widgets
from transformer_viz.app.shared import shared_resource
from transformer_viz.app.sidebar import Selection
from transformer_viz.interpret.ablation import KIND_NAMES, KINDS
from transformer_viz.interpret.head_cards import PATTERNS, TYPES
from transformer_viz.plots.heads import head_type_figure

CARD_KEY = "heads_card"
PATTERN_NAMES = {"previous": "previous token", "self": "itself", "first": "first position",
                 "end": "end of source (</s>)", "duplicate": "same token earlier"}


@shared_resource(show_spinner="Writing every head's identity card…", max_entries=32, ttl=3600)
def cards(checkpoint: str, sentence: str) -> list:
    """interpret.head_cards.head_cards of the sentence's run: the drops of step 1 (every head on)
    and the integrated gradients of step 3 (their default steps) for cross-attention's agreement."""
    from transformer_viz.interpret.explain import IG_STEPS
    from transformer_viz.interpret.head_cards import head_cards

    run = loaders.get_run(checkpoint, sentence)
    numbers, _ = heads_view.heads_numbers(checkpoint, sentence, ())
    ig = heads_view.attributions(checkpoint, sentence, IG_STEPS)[0]
    return head_cards(run.trace, run.src_ids, run.tgt_ids, run.config, numbers.drops, ig)


def off_heads(names: list[str]) -> list[str]:
    """The heads switched off on this page: the multiselect's while it lives, else the URL's."""
    chosen = st.session_state.get(heads_view.OFF_KEY)
    if chosen is None:
        chosen = st.query_params.get(heads_view.OFF_PARAM, "").split(",")
    return [n for n in chosen if n in names]


def switch_off(name: str, names: list[str]) -> None:
    """The card's button: ``name`` joins the heads switched off, in the URL and for step 1."""
    chosen = off_heads(names)
    if name not in chosen:
        chosen.append(name)
    st.session_state[heads_view.OFF_KEY] = chosen
    url.write(**{heads_view.OFF_PARAM: ",".join(chosen)})


def _number(x: float, fmt: str = ".2f") -> str:
    return "—" if math.isnan(x) else format(x, fmt)


def card_rows(card) -> list[dict]:
    """A card as (what, value) rows."""
    rows = [{"what": "type", "value": card.type},
            {"what": "entropy (share of the most possible)", "value": _number(card.entropy)}]
    rows += [{"what": f"pattern score: {PATTERN_NAMES[p]}", "value": _number(card.scores[p])}
             for p in PATTERNS]
    rows += [{"what": "agreement with integrated gradients (cross-attention)",
              "value": _number(card.attribution_agreement, ".0%")},
             {"what": "drop of log p(translation) when off alone (nats)",
              "value": _number(card.drop, ".3f")}]
    return rows


def show_card(card, names: list[str]) -> None:
    kind, layer, head = card.name.split(".")
    st.markdown(f"**{card.name}** ({KIND_NAMES[kind]}, layer {layer}, head {head}): a "
                f"**{card.type}** head on this sentence.")
    st.dataframe(card_rows(card), hide_index=True)
    off = off_heads(names)
    st.button(f"Switch {card.name} off", key="heads_card_off", on_click=switch_off,
              args=(card.name, names), disabled=card.name in off,
              help="Adds it to the heads switched off in step 1 (and to the link)")
    if off:
        st.caption("Switched off on this page: " + ", ".join(off) + ". Step 1 shows the "
                   "translation without them.")


def cards_step(sel: Selection, names: list[str]) -> None:
    """The whole step: the map, the choice of a head and its card."""
    st.markdown("Each head's attention on this sentence, scored against simple patterns "
                "(TransformerLens's head detector: the share of attention on the keys a pattern "
                "marks) and typed by the highest score of at least 0.5; *broad* heads spread their "
                "weight, *mixed* ones follow no pattern. A type is what a head does on this "
                "sentence, not what it is needed for: the card sets it beside the cost of "
                "switching it off.")
    cfg = loaders.get_run(sel.checkpoint, sel.sentence).config
    if not on_request.wanted(sel, cfg, "heads_cards", "Write every head's card",
                             "A card needs every head switched off alone (step 1) and the "
                             "integrated gradients (step 3)."):
        return
    found = cards(sel.checkpoint, sel.sentence)
    types = np.array([c.type for c in found], dtype=object).reshape(len(KINDS), cfg.N, cfg.h)
    fig = widgets.cached_figure(head_type_figure, types, TYPES, KINDS,
                                title="What each head does on this sentence: its type")
    data = [{"head": c.name, "type": c.type, "entropy": c.entropy, "drop (nats)": c.drop,
             "agreement": c.attribution_agreement, **c.scores} for c in found]
    widgets.chart(fig, data, "heads-types",
                  caption="Rows: layers; columns: heads; one panel per kind of attention. Hover a "
                          "cell for its name, pick it below for its card.")
    widgets.reset_stale_index(CARD_KEY, len(found))
    index = st.selectbox("Head's identity card", range(len(found)), key=CARD_KEY,
                         format_func=lambda i: f"{found[i].name}: {found[i].type}")
    show_card(found[index], names)
