"""Complete the sentence: a decoder-only model (GPT) continues a prompt one token at a time,
choosing each token from its next-token distribution with temperature, top-k and top-p; its one
attention, causal; and the two model families' masks side by side."""

import numpy as np
import streamlit as st

from transformer_viz.app import completion, frame, loaders, steps, widgets
from transformer_viz.checkpoints import CheckpointError
from transformer_viz.plots.common import token_labels, token_text
from transformer_viz.plots.layers import attention_map
from transformer_viz.plots.sampling import families_figure, kept_set_figure, temperature_figure
from transformer_viz.text.tokenizer import InputError

SHOWN = 15  # tokens per distribution figure

ctx = frame.page_context(__file__)
sel, _ = frame.page_header(
    ctx,
    "A **decoder-only** Transformer (GPT): no encoder, no cross-attention, one causal "
    "self-attention. It reads the prompt, draws the next token from its distribution, appends it "
    "and runs again. **Temperature** T divides the logits (T → 0: greedy); **top-k** keeps the k "
    "most probable tokens, **top-p** the fewest whose probability reaches p; the rest is "
    "renormalised and sampled with the seed.",
    r"P_T(v \mid x_{<t}) = \frac{\exp(z_v / T)}{\sum_{u} \exp(z_u / T)},\qquad x_t \sim P_T(\cdot "
    r"\mid x_{<t})\ \text{restricted to top-}k\text{ / top-}p\text{, renormalised}",
    run=False)
choice = completion.controls(sel.sentence)
try:
    run = loaders.get_prompt_run(choice.model, choice.prompt, choice.temperature, choice.top_k,
                                 choice.top_p,
                                 choice.seed, choice.max_new_tokens)
except InputError as exc:
    st.warning(widgets.escape_markdown(str(exc)))
    st.stop()
except CheckpointError as exc:
    st.error(f"This checkpoint cannot be loaded: {exc}")
    st.stop()
for note in run.completion.messages:
    st.info(widgets.escape_markdown(note))

tokenizer, cfg, done = loaders.get_model("gpt", choice.model).tokenizer, run.config, run.completion
n_steps = len(done.new_ids)
if n_steps == 0:
    st.warning("The prompt already fills the model's positions: nothing is left to generate.")
    st.stop()


def token_by_token() -> tuple[int, int, object]:
    """Which generated token the step's figures show (the place is kept per completion), and what it
    chose."""
    t = min(max(st.session_state.get(completion.STEPS_KEY, {}).get(choice, 1), 1), n_steps)
    return t, done.new_ids[t - 1], done.distribution(t - 1)


def stepper_below(t: int, chosen_id: int, dist) -> None:
    """Under the figure: the completion, Previous / Next through its tokens (as on the Decoding
    page), and step t's input and choice."""
    widgets.show_user_text(f"Completion ({done.settings.describe()}; stopped: {done.stop_reason})",
                           run.text)
    steps.stepper(completion.STEPS_KEY, choice, n_steps, "complete", noun="Token")
    inputs = tokenizer.convert_ids_to_tokens(done.ids[: run.n_prompt + t - 1])
    chosen = token_text(tokenizer.convert_ids_to_tokens([chosen_id])[0])
    end = "  (end of sentence)" if chosen_id == cfg.eos_id else ""
    widgets.show_user_text(f"Input at step {t}: <s> + prompt + {t - 1} generated → the chosen next "
                           "token",
                           f"{' '.join(map(token_text, inputs))}  →  {chosen}{end}   P_T = "
                           f"{dist.tempered[chosen_id]:.4f}, P sampled from = "
                           f"{dist.final[chosen_id]:.4f}")


temperature_tab, cut_tab, attention_tab, families_tab = steps.tabs(ctx, [
    "1 · Temperature", "2 · Top-k and top-p", "3 · Attention with the causal mask",
    "4 · Two families"],
    key="complete_step")

if temperature_tab.open:
    with temperature_tab:
        t, chosen_id, dist = token_by_token()
        order = np.argsort(-dist.model, kind="stable")[:SHOWN]
        tokens = tokenizer.convert_ids_to_tokens(order.tolist())
        fig = widgets.cached_figure(temperature_figure, tokens, dist.model[order],
                                    dist.tempered[order],
                                    choice.temperature,
                                    title=f"Next token at step {t}: the {SHOWN} most probable")
        widgets.chart(fig, {"token": tokens, "id": order, "p (T = 1)": dist.model[order],
                            f"p (T = {choice.temperature:g})": dist.tempered[order]},
                            "complete-temperature",
                      caption="T = 1 is the model's own distribution. As T → 0 the most probable "
                              "token's share goes to 1: sampling becomes greedy decoding (T = 0 "
                              "here means exactly that).")
        stepper_below(t, chosen_id, dist)

if cut_tab.open:
    with cut_tab:
        t, chosen_id, dist = token_by_token()
        order = np.argsort(-dist.tempered, kind="stable")[:SHOWN]
        if chosen_id not in order:
            order = np.append(order, chosen_id)
        tokens = tokenizer.convert_ids_to_tokens(order.tolist())
        chosen_at = int(np.flatnonzero(order == chosen_id)[0])
        fig = widgets.cached_figure(kept_set_figure, tokens, dist.tempered[order], dist.kept[order],
                                    dist.final[order],
                                    chosen_at, title=f"Step {t}: {int(dist.kept.sum()):,} of "
                                                     f"{cfg.vocab_size:,} tokens kept")
        widgets.chart(fig, {"token": tokens, "id": order, "p (tempered)": dist.tempered[order],
                            "kept": dist.kept[order], "p (sampled from)": dist.final[order]},
                            "complete-kept",
                      caption="Ties in top-k go to the lower token ID. Orange: the token drawn at "
                      "this step.")
        stepper_below(t, chosen_id, dist)

if attention_tab.open:
    with attention_tab:
        layer_col, head_col = st.columns(2)
        layer = layer_col.selectbox("Layer", list(range(cfg.N)), index=cfg.N - 1,
                                    key="complete_layer")
        head = head_col.selectbox("Head", list(range(cfg.h)), key="complete_head")
        labels = token_labels(run.tokens)
        weights = run.trace[f"decoder.{layer}.self_attn.weights"][0, head].numpy()  # (L, L)
        L = len(labels)
        later = np.triu(np.ones((L, L), dtype=bool), 1)
        fig = widgets.cached_figure(attention_map, weights, labels, labels, masked=later,
                                    title=f"Causal self-attention, layer {layer}, head {head}: L × "
                                    f"L = {L} × {L}")
        widgets.chart(fig, widgets.token_frame(weights, run.tokens, run.tokens),
                      "complete-attention",
                      caption=f"Shapes: x (B, L, d_model) = (1, {L}, {cfg.d_model}); Q, K, V (B, "
                              f"h, L, d_k) = (1, {cfg.h}, {L}, {cfg.d_k}); weights (B, h, L, L). "
                              "No S: there is no source. Grey cells are later positions, masked: "
                              "weight exactly 0.")

if families_tab.open:
    with families_tab:
        translation = frame.require_run(ctx)
        src, tgt = token_labels(translation.src_tokens), token_labels(translation.tgt_tokens)
        fig = widgets.cached_figure(families_figure, src, tgt, token_labels(run.tokens),
                                    title="Encoder–decoder: three attentions, one of them masked. "
                                          "Decoder-only: one, causal")
        widgets.chart(fig, {"attention": ["encoder self", "decoder self (masked)", "cross",
                                          "decoder-only (causal)"],
                            "queries": [len(src), len(tgt), len(tgt), len(run.tokens)],
                            "keys": [len(src), len(tgt), len(src), len(run.tokens)]},
                            "complete-families",
                      caption="The sidebar's sentence and its translation (S source, T target "
                              "tokens) beside this prompt and completion (L tokens).")
