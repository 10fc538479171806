"""The section "Source or prefix?" of "Why this word?" (pages/patching.py): for every token the
clean sentence's translation writes, the share of its prediction that came from the source and
the share from the translation so far (interpret/source_share.py), with the tokens that took little
from the source (a hallucination's sign) and the source tokens that no token used
(under-translation's)."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import loaders, widgets
from transformer_viz.interpret.source_share import LOW_SOURCE_SHARE, UNUSED_SOURCE, content_tokens
from transformer_viz.plots.common import token_labels, token_text
from transformer_viz.plots.patching import source_share_figure

FORMULA = (r"\text{source share}_t = \frac{\sum_s |\mathrm{IG}_t(e_s)|}"
           r"{\sum_s |\mathrm{IG}_t(e_s)| + \sum_{j \le t} |\mathrm{IG}_t(u_j)|},\qquad "
           r"\text{prefix share}_t = 1 - \text{source share}_t")
METHOD = ("Which did each word of the translation read more: the **source sentence** or the "
          "**translation so far**? The question is Voita, Sennrich and Titov's (2021, “Analyzing "
          "the source and target contributions to predictions in neural machine translation”); "
          "the attributions here are **integrated gradients** (Sundararajan et al., 2017) of "
          "f_t = log p(y_t | y_<t, x) with respect to the source embeddings e_s and the target "
          "prefix embeddings u_j together, from a zero baseline (positions kept), split into the "
          "two shares as they did with layer-wise relevance propagation.")


@st.cache_data(show_spinner="Splitting each word's attribution between the source and the "
                            "translation so far (integrated gradients: seconds)…",
               max_entries=32, ttl=3600)
def shares(checkpoint: str, sentence: str) -> dict:
    """The shares of the sentence's greedy translation: written tokens, source share (T,), the
    flags, and the source tokens unused."""
    from transformer_viz.interpret.source_share import source_shares

    ckpt, run = loaders.get_checkpoint(checkpoint), loaders.get_run(checkpoint, sentence)
    found = source_shares(ckpt.model, run.src_ids, run.tgt_ids)
    return {"written": run.tgt_tokens[1:] + ["</s>"], "source": list(run.src_tokens),
            "source_share": found.source_share, "low_source": found.low_source,
            "unused": found.unused_sources(content_tokens(run.src_tokens))}


def _quoted(tokens: list[str]) -> str:
    return ", ".join(f"“{widgets.escape_markdown(token_text(t))}”" for t in tokens)


def section(checkpoint: str, sentence: str) -> None:
    """The heading, the method and its formula, the stacked bars and the two flags."""
    st.subheader("Source or prefix?", anchor=False)
    st.markdown(METHOD)
    st.latex(FORMULA)
    s = shares(checkpoint, sentence)
    labels = token_labels(s["written"])
    share = s["source_share"]
    fig = widgets.cached_figure(source_share_figure, labels, share, s["low_source"],
                                LOW_SOURCE_SHARE, title="Where each written token came from: "
                                                        "the source or the translation so far")
    widgets.chart(fig, {"token": labels, "source share": share, "prefix share": 1 - share,
                        "little from the source": s["low_source"]}, "why-source-share",
                  caption=f"Each bar sums to 1. Hatched, under the dashed line: less than "
                          f"{LOW_SOURCE_SHARE:.0%} from the source.")
    low = [t for t, flag in zip(s["written"], s["low_source"]) if flag]
    unused = [t for t, flag in zip(s["source"], s["unused"]) if flag]
    st.markdown(
        f"**Little from the source** (< {LOW_SOURCE_SHARE:.0%}, a hallucination's sign): "
        + (_quoted(low) if low else "none") + ". "
        f"**Source words no written token used** (none gave one of them ≥ {UNUSED_SOURCE:.0%} "
        "of its source attribution, under-translation's sign): "
        + (_quoted(unused) if unused else "none") + ".")
    st.caption("Signs, not proofs: a function word or the first word of a sentence may rightly "
               "lean on the translation so far.")
