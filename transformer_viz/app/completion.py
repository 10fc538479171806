"""The "Complete the sentence" page's controls, kept in the URL so that a shared link opens the same
completion: the model, the prompt, temperature, top-k, top-p, the seed and the length, and the step shown."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from transformer_viz.app import url
from transformer_viz.app.catalogue import checkpoint_names, list_checkpoints
from transformer_viz.checkpoints import CheckpointError, load_metadata
from transformer_viz.checkpoints.gpt2 import HOW_TO_GET_GPT2

DEFAULT_PROMPT = "Where there is a will, there"  # the lecture's completion task
# URL parameter -> (session key, type, default, lowest, highest)
PARAMETERS = {"T": ("complete_temperature", float, 1.0, 0.0, 2.0), "k": ("complete_top_k", int, 0, 0, 200),
              "p": ("complete_top_p", float, 1.0, 0.05, 1.0), "seed": ("complete_seed", int, 0, 0, 2**31 - 1),
              "n": ("complete_length", int, 12, 1, 40)}
STEPS_KEY = "_complete_steps"  # {(model, prompt, settings): step}, so each completion keeps its own place


@dataclass(frozen=True)
class Choice:
    model: str
    prompt: str
    temperature: float
    top_k: int
    top_p: float
    seed: int
    max_new_tokens: int


def _from_url(name: str):
    key, kind, default, low, high = PARAMETERS[name]
    try:
        value = kind(st.query_params.get(name, default))
    except ValueError:
        return default
    return min(max(value, low), high) if value == value else default  # NaN: the default


def _first_run_defaults(models: list[str]) -> None:
    state = st.session_state
    if "complete_prompt" not in state:  # the session's first run: what the link says
        state["complete_prompt"] = st.query_params.get("prompt", DEFAULT_PROMPT)[:300] or DEFAULT_PROMPT
        wanted = st.query_params.get("gpt")
        state["complete_model"] = wanted if wanted in models else models[0]
        for name, (key, *_rest) in PARAMETERS.items():
            state[key] = _from_url(name)


def model_label(name: str) -> str:
    """The checkpoint's name from its metadata, and its directory name."""
    try:
        title = load_metadata(list_checkpoints("gpt")[name]).get("name", name)
    except (CheckpointError, KeyError):  # a damaged metadata.json: loading the model will say what is wrong
        title = name
    return f"{title} ({name})"


def controls(sidebar_sentence: str) -> Choice:
    """The widgets, above the page's steps; stops the page (saying how to get one) when no decoder-only
    checkpoint is there."""
    models = checkpoint_names("gpt")
    if not models:
        st.warning("No decoder-only checkpoint was found. `python -m transformer_viz train-gpt --lang en --out "
                   "checkpoints/gpt-en` trains one. " + HOW_TO_GET_GPT2)
        st.stop()
    _first_run_defaults(models)
    state = st.session_state
    # One row, so that the figures start on a projector's first screen; the rarer settings in a popover.
    model_col, prompt_col, t_col, more_col = st.columns([1.2, 2.6, 1.4, 1], vertical_alignment="bottom")
    model = model_col.selectbox("Decoder-only model", models, key="complete_model", format_func=model_label)
    prompt = prompt_col.text_input("Prompt: the beginning of a sentence", key="complete_prompt", max_chars=300)
    temperature = t_col.slider("Temperature T", 0.0, 2.0, step=0.05, key="complete_temperature",
                               help="The logits are divided by T before the softmax. T = 0: greedy.")
    with more_col.popover("Top-k, top-p, seed", width="stretch"):
        top_k = st.number_input("Top-k (0: off)", 0, 200, key="complete_top_k")
        top_p = st.slider("Top-p (1: off)", 0.05, 1.0, step=0.05, key="complete_top_p")
        seed = st.number_input("Seed", 0, 2**31 - 1, key="complete_seed",
                               help="The same seed and settings give the same completion.")
        length = st.number_input("At most n new tokens", 1, 40, key="complete_length")
        st.button("Use the sidebar's sentence as the prompt", key="complete_use_sidebar", width="stretch",
                  on_click=lambda: state.update(complete_prompt=sidebar_sentence))
    url.write(gpt=model, prompt=prompt, T=f"{temperature:g}", k=str(top_k), p=f"{top_p:g}", seed=str(seed),
              n=str(length))
    return Choice(model, prompt, float(temperature), int(top_k), float(top_p), int(seed), int(length))
