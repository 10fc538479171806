"""The Decoding page's step 3: the key/value cache decoding really uses (generation/kv_cache.py),
step by step, and the multiply–adds it saves."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app import loaders, steps, widgets
from transformer_viz.app.sidebar import Selection
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import kv_cache_figure, multiply_adds_figure

STEPS_KEY = "_kv_cache_steps"  # {(checkpoint, sentence): step}


@st.cache_resource(show_spinner="Reading the cache…", max_entries=32, ttl=3600)
def cache_record(checkpoint: str, sentence: str):
    """The caches built while decoding the sentence's greedy translation, read once and shared."""
    from transformer_viz.generation.kv_cache import record_cache

    run = loaders.get_translation(checkpoint, sentence)
    return record_cache(loaders.get_checkpoint(checkpoint).model, run.src_ids, run.tgt_ids)


def show(sel: Selection, run) -> None:
    """The cache of layer ``sel.layer``, head ``sel.head`` at the chosen step, and the counts."""
    from transformer_viz.generation.kv_cache import multiply_adds

    cfg, i, j = run.config, sel.layer, sel.head
    record = cache_record(sel.checkpoint, sel.sentence)
    T, S = len(run.tgt_ids), len(run.src_ids)
    st.markdown(
        "At step t the decoder runs **one** new position. Its masked self-attention needs the keys "
        "and values of every earlier position: computed at earlier steps and kept, so each step "
        "computes one new key and value per layer and **appends** them. Cross-attention's keys and "
        "values come from the encoder output alone: computed **once**, before step 1, and read at "
        "every step. These are the tensors decoding really used for this sentence.")
    t = steps.stepper(STEPS_KEY, (sel.checkpoint, run.source_text), T, "kv_cache")
    labels, src_labels = token_labels(run.tgt_tokens), token_labels(run.src_tokens)
    left, right = st.columns(2)
    with left:
        keys = record.self_k[i, j]  # (T, d_k)
        fig = widgets.cached_figure(kv_cache_figure, keys, labels, t,
                                    title=f"Self-attention keys after step {t}")
        widgets.chart(fig, widgets.long_form(labels[:t], list(range(keys.shape[1])),
                                             {"key": keys[:t]},
                                             ("position", "component")), "kv-cache-self",
                      caption=f"Layer {i}, head {j}. Row {t - 1} (outlined) was appended at step "
                              f"{t}; the rows above it were computed at earlier steps and read "
                              "again.")
    with right:
        cross = record.cross_k[i, j]  # (S, d_k)
        fig = widgets.cached_figure(kv_cache_figure, cross, src_labels, S, appended=False,
                                    title="Cross-attention keys: computed once")
        widgets.chart(fig, widgets.long_form(src_labels, list(range(cross.shape[1])),
                                             {"key": cross},
                                             ("source", "component")), "kv-cache-cross",
                      caption=f"Layer {i}, head {j}: one row per source token, the same at every "
                      "step.")
    counts = multiply_adds(cfg, S, T)
    saved = 1 - (counts.with_cache.sum() + counts.once) / counts.without_cache.sum()
    fig = widgets.cached_figure(multiply_adds_figure, counts.with_cache, counts.without_cache, t,
                                title="Multiply–adds per step")
    widgets.chart(fig, {"step": list(range(1, T + 1)), "with cache": counts.with_cache,
                        "without cache": counts.without_cache}, "kv-cache-multiply-adds",
                  caption=f"Step {t}: {counts.with_cache[t - 1]:,} multiply–adds with the cache, "
                          f"{counts.without_cache[t - 1]:,} without. Over the whole sentence the "
                          f"cache saves {saved:.0%} (its {counts.once:,} for cross-attention's "
                          "keys and values counted once); the cache holds 2 · N · t · d_model = "
                          f"{2 * cfg.N * T * cfg.d_model:,} numbers for self-attention at the end.")
    if not (record.appended_only and record.cross_reused):
        st.warning("This model's cache did not only grow: the figures above are not what decoding "
                   "reused.")
