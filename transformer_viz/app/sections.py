"""Page sections that more than one page shows: a layer's Add & Norm and its feed-forward network,
drawn the same way for the encoder and for the decoder; and "what if the model had chosen another
word?", on the Lecture and the Decoding page."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from transformer_viz.app import loaders, url, widgets
from transformer_viz.app.context import PageContext, SessionMemory
from transformer_viz.app.sidebar import Selection
from transformer_viz.plots.common import token_text
from transformer_viz.plots.decoding import forced_comparison_figure
from transformer_viz.plots.layers import (ffn_hidden_figure, gamma_beta_figure,
                                          layernorm_stats_figure, position_stats,
                                          relu_zero_fraction, zero_fraction_figure)
from transformer_viz.text.tokenizer import BOS, PAD

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun


def add_and_norm(sel: Selection, run: SentenceRun, side: str, labels: list[str],
                 norms: dict[str, str]) -> None:
    """One Add & Norm of the selected layer of the encoder or the decoder (``side``), chosen among
    ``norms`` (trace name -> label): per-position mean and variance before and after LayerNorm, and
    its γ and β."""
    cfg, trace = run.config, run.trace
    if cfg.pre_ln:
        st.markdown("This model is **Pre-LN**: x + Sublayer(LayerNorm(x)), LayerNorm inside the "
                    "residual branch (as most current models do); the paper puts it after the "
                    "addition (Post-LN).")
    else:
        st.markdown("This model is **Post-LN**, the paper's choice: LayerNorm(x + Sublayer(x)), "
                    "the norm after the residual addition. Most current models use **Pre-LN** "
                    "instead, x + Sublayer(LayerNorm(x)), which keeps an un-normalised residual "
                    "path and trains more stably in deep stacks. In training, dropout also acts on "
                    "Sublayer(x) before the addition; here, at inference, it is off.")
    which = st.radio("Which Add & Norm", list(norms), horizontal=True, key=f"{side}_norm",
                     format_func=norms.get)
    norm = f"{side}.{sel.layer}.{which}"
    # (L,)
    mean_before, var_before = trace[f"{norm}.mean"][0].numpy(), trace[f"{norm}.var"][0].numpy()
    mean_after, var_after = position_stats(trace[f"{norm}.out"][0].numpy())
    st.latex(r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} "
             r"+ \beta\qquad \text{position 0: } \mu = %.4f,\ \sigma^2 = %.4f,\ \varepsilon = "
             r"10^{%d}"
             % (mean_before[0], var_before[0], int(np.round(np.log10(cfg.layer_norm_eps)))))
    fig = widgets.cached_figure(layernorm_stats_figure, mean_before, var_before, mean_after,
                                var_after, labels,
                                title=f"{norm}: per-position statistics over d_model = "
                                f"{cfg.d_model}")
    widgets.chart(fig, {"position": labels, "mean before": mean_before,
                        "variance before": var_before,
                        "mean after": mean_after, "variance after": var_after}, f"{side}-layernorm")
    st.caption("Before γ and β, every position is normalised to mean 0 and variance 1; γ and β "
               "then rescale and shift each dimension. Whatever the scale of the residual stream, "
               "the next sublayer sees numbers of one size.")

    model = loaders.get_checkpoint(sel.checkpoint).model
    layers = model.encoder_layers if side == "encoder" else model.decoder_layers
    layer_norm = getattr(layers[sel.layer], which).norm
    gamma, beta = layer_norm.weight.detach().cpu().numpy(), layer_norm.bias.detach().cpu().numpy()
    fig = widgets.cached_figure(gamma_beta_figure, gamma, beta, title=f"{norm}: learned γ and β "
                                                                      "(mean γ = "
                                                                      f"{gamma.mean():.3f}, mean β "
                                                                      f"= {beta.mean():.3f})")
    widgets.chart(fig, {"dimension": np.arange(gamma.size), "gamma": gamma, "beta": beta},
                  f"{side}-gamma-beta")


def feed_forward(sel: Selection, run: SentenceRun, side: str, labels: list[str]) -> None:
    """The selected layer's position-wise feed-forward network: its hidden ReLU activations (L,
    d_ff) and how many of them are exactly 0, per position and overall."""
    cfg, L = run.config, len(labels)
    length = "S" if side == "encoder" else "T"
    hidden = run.trace[f"{side}.{sel.layer}.ffn.hidden"][0].numpy()  # (L, d_ff)
    fraction, overall = relu_zero_fraction(hidden)
    st.latex(r"\mathrm{FFN}(x) = \max(0,\ x W_1 + b_1)\, W_2 + b_2, \quad W_1 \in \mathbb{R}^{%d "
             r"\times %d},\ W_2 \in \mathbb{R}^{%d \times "
             r"%d}" % (cfg.d_model, cfg.d_ff, cfg.d_ff, cfg.d_model))
    c1, c2, c3 = st.columns(3)
    c1.metric("ReLU units at exactly 0", f"{overall:.1%}")
    c2.metric("zero units / all units", f"{int((hidden == 0).sum())} / {hidden.size}")
    c3.metric("largest activation", f"{hidden.max():.3f}")
    fig = widgets.cached_figure(ffn_hidden_figure, hidden, labels, title=f"Layer {sel.layer}: "
                                                                         "hidden activations "
                                                                         "max(0, xW₁ + b₁), "
                                                                         f"({length}, d_ff) = "
                                                                         f"({L}, {cfg.d_ff})")
    widgets.chart(fig, {labels[p]: hidden[p] for p in range(L)}, f"{side}-ffn-hidden")
    fig = widgets.cached_figure(zero_fraction_figure, fraction, labels, overall, cfg.d_ff,
                                title="Share of ReLU units that are exactly 0")
    widgets.chart(fig, {"position": labels, "zero fraction": fraction,
                        "zero units": np.rint(fraction * cfg.d_ff).astype(int)},
                        f"{side}-ffn-zeros",
                  caption="ReLU sets every negative pre-activation to 0, so each position uses "
                          "only part of the d_ff units: a sparse, position-specific code.")


# --- what if the model had chosen another word?
# ---------------------------------------------------------

FORCED_PARAM = "force"  # the forced prefix in the URL: token IDs joined by "-" ("force=412-87")
MAX_FORCED = 64


def parse_forced(raw: str | None, vocab_size: int,
                 never: tuple[int, ...] = (PAD, BOS)) -> tuple[int, ...]:
    """The forced prefix a URL names ("412-87" -> (412, 87)); () when it is missing or malformed,
    longer than MAX_FORCED, or names one of ``never`` (<pad>, <s>: the model's own, see ModelConfig)
    or an ID outside the vocabulary."""
    parts = str(raw or "").split("-")
    if not raw or len(parts) > MAX_FORCED or not all(p.isascii() and p.isdigit() and len(p) <= 7
                                                     for p in parts):
        return ()
    ids = tuple(int(p) for p in parts)
    return ids if all(0 <= i < vocab_size and i not in never for i in ids) else ()


def format_forced(ids) -> str:
    return "-".join(str(int(i)) for i in ids)


def forced_prefix(ctx: PageContext, vocab_size: int,
                  never: tuple[int, ...] = (PAD, BOS)) -> tuple[int, ...]:
    """The session's forced prefix for this sentence (kept in ``ctx.memory.forced``): from the URL
    on the session's first look, () once the sentence or the direction changes."""
    sel, memory = ctx.selection, ctx.memory
    if memory.forced is None:
        ids = parse_forced(st.query_params.get(FORCED_PARAM), vocab_size, never)
        memory.forced = (sel.checkpoint, sel.sentence, ids)
    checkpoint, sentence, ids = memory.forced
    return ids if (checkpoint, sentence) == (sel.checkpoint, sel.sentence) else ()


def _set_forced(memory: SessionMemory, sel: Selection, ids: tuple[int, ...]) -> None:
    memory.forced = (sel.checkpoint, sel.sentence, ids)


def _written(run: SentenceRun, tokenizer) -> tuple[list[int], list[str], np.ndarray]:
    """What greedy decoding wrote at each step (ending in </s>), as IDs and tokens, and its
    probability."""
    ids = [s.chosen[0] for s in run.decoding.steps]
    return ids, tokenizer.convert_ids_to_tokens(ids), np.array([s.chosen_prob[0]
                                                                for s in run.decoding.steps])


def what_if(ctx: PageContext, run: SentenceRun, key: str) -> None:
    """Force one of the top-k candidates at any position of the greedy translation; greedy decoding
    goes on from it. Both translations side by side, with the probability of every token written.
    The forced prefix is kept in the URL (``force=``)."""
    sel = ctx.selection
    tokenizer = loaders.get_checkpoint(sel.checkpoint).tokenizer
    ids, tokens, probs = _written(run, tokenizer)
    forced = forced_prefix(ctx, len(tokenizer), (run.config.pad_id, run.config.bos_id))
    widgets.reset_stale_index(f"{key}_position", len(ids))
    where, which, act = st.columns([2, 3, 2], vertical_alignment="bottom")
    t = where.selectbox("Position", range(len(ids)), key=f"{key}_position",
                        format_func=lambda i: f"{i + 1}: {token_text(tokens[i])}")
    step = run.decoding.steps[t]
    candidates = tokenizer.convert_ids_to_tokens(step.top_ids[0])
    widgets.reset_stale_index(f"{key}_candidate", len(candidates))
    c = which.selectbox("Force this word instead", range(len(candidates)), key=f"{key}_candidate",
                        format_func=lambda i: f"{token_text(candidates[i])} (p = "
                        f"{step.top_probs[0][i]:.1%})")
    act.button("Force it", key=f"{key}_force", on_click=_set_forced,
               args=(ctx.memory, sel, tuple(ids[:t]) + (step.top_ids[0][c],)), width="stretch")
    url.write(**{FORCED_PARAM: format_forced(forced) if forced else None})
    if not forced:
        return
    act.button("The model's own choice", key=f"{key}_clear", on_click=_set_forced,
               args=(ctx.memory, sel, ()), width="stretch")
    other = loaders.get_forced_run(sel.checkpoint, sel.sentence, forced)
    f_ids, f_tokens, f_probs = _written(other, tokenizer)
    fork = next((i for i, (a, b) in enumerate(zip(ids, f_ids)) if a != b), len(forced) - 1)
    left, right = st.columns(2)
    with left:
        widgets.show_user_text("The model's own (greedy) translation", run.translation or "(empty)")
    with right:
        widgets.show_user_text(f"With “{token_text(f_tokens[fork])}” forced at position {fork + 1}",
                               other.translation or "(empty)")
    top = run.decoding.steps[fork]
    p_forced = dict(zip(top.top_ids[0], top.top_probs[0])).get(f_ids[fork], f_probs[fork])
    changed = sum(a != b for a, b in zip(ids[fork + 1:], f_ids[fork + 1:])) + abs(len(ids)
                                                                                  - len(f_ids))
    st.markdown(f"At position {fork + 1} the model gave “{token_text(tokens[fork])}” p = "
                f"{probs[fork]:.1%} and “{token_text(f_tokens[fork])}” p = {p_forced:.1%}. After "
                f"the forced word, {changed} of the positions that follow hold another token; the "
                "tokens written after it had a mean probability of "
                f"{f_probs[fork + 1:].mean() if len(f_probs) > fork + 1 else float('nan'):.1%} "
                "(the model's own: "
                f"{probs[fork + 1:].mean() if len(probs) > fork + 1 else float('nan'):.1%}).")
    fig = widgets.cached_figure(forced_comparison_figure, tokens, probs, f_tokens, f_probs, fork
                                + 1,
                                title="Probability of each token written: the model's own choice "
                                "and the forced one")
    widgets.chart(fig, {"position": list(range(1, max(len(ids), len(f_ids)) + 1)),
                        "original": _padded(tokens, len(ids), len(f_ids)),
                        "forced": _padded(f_tokens, len(f_ids), len(ids))}, f"{key}-forced")


def _padded(values: list, n: int, other: int) -> list:
    return list(values) + [""] * max(0, other - n)
