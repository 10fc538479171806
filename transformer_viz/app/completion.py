"""The "Complete the sentence" page's controls, kept in the URL so that a shared link opens the same
completion: the model, the prompt, temperature, top-k, top-p, the seed and the length, and the step
shown."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from transformer_viz.app import url
from transformer_viz.app.catalogue import checkpoint_names, list_checkpoints
from transformer_viz.checkpoints import CheckpointError, load_metadata
from transformer_viz.checkpoints.gpt2 import HOW_TO_GET_GPT2

DEFAULT_PROMPT = "Where there is a will, there"  # the lecture's completion task
# URL parameter -> (session key, type, default, lowest, highest)
PARAMETERS = {"T": ("complete_temperature", float, 1.0, 0.0, 2.0),
              "k": ("complete_top_k", int, 0, 0, 200),
              "p": ("complete_top_p", float, 1.0, 0.05, 1.0),
              "seed": ("complete_seed", int, 0, 0, 2**31 - 1),
              "n": ("complete_length", int, 12, 1, 40)}
# {(model, prompt, settings): step}, so each completion keeps its own place
STEPS_KEY = "_complete_steps"


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


def model_language(name: str) -> str | None:
    """The language a decoder-only checkpoint writes (its metadata's ``lang``), None when it does
    not say."""
    try:
        return load_metadata(list_checkpoints("gpt")[name]).get("lang")
    except (CheckpointError, KeyError):
        return None


@st.cache_resource(max_entries=4, show_spinner=False)
def _language_checkers(listing: tuple) -> list:
    """(source language, tokenizer, language_stats) of each translation checkpoint that has its
    language_stats.json: the translation pages' check for text in the other language. Kept per
    ``listing`` (the checkpoints' names and directories), so a changed set of checkpoints is read
    again."""
    from transformer_viz.app.about import language_stats
    from transformer_viz.text.tokenizer import load_tokenizer

    found = []
    for name, directory in list_checkpoints().items():
        stats = language_stats(name)
        lang = load_metadata(directory).get("src_lang") if stats is not None else None
        if lang and (directory / "tokenizer" / "tokenizer.json").is_file():
            found.append((lang, load_tokenizer(directory / "tokenizer"), stats))
    return found


def prompt_language(prompt: str) -> str | None:
    """The language a prompt looks like, by the translation models' own check (language_stats.json):
    the other language when one of them finds its text in it, that model's own when it finds none;
    None when no translation checkpoint can tell."""
    from transformer_viz.text.language_stats import check_language

    listing = tuple((name, str(path)) for name, path in list_checkpoints().items())
    for lang, tokenizer, stats in _language_checkers(listing):
        verdict = check_language(stats, tokenizer(prompt)["input_ids"], lang)
        if verdict.looks_like:
            return verdict.looks_like
        if verdict.own:
            return lang
    return None


def _first_run_defaults(models: list[str]) -> None:
    state = st.session_state
    if "complete_prompt" not in state:  # the session's first run: what the link says
        state["complete_prompt"] = st.query_params.get("prompt",
                                                       DEFAULT_PROMPT)[:300] or DEFAULT_PROMPT
        wanted = st.query_params.get("gpt")
        if wanted not in models:  # the model of the prompt's language, when one writes it
            lang = prompt_language(state["complete_prompt"])
            wanted = next((m for m in models if lang and model_language(m) == lang), models[0])
        state["complete_model"] = wanted
        for name, (key, *_rest) in PARAMETERS.items():
            state[key] = _from_url(name)


def model_label(name: str) -> str:
    """The checkpoint's name from its metadata, and its directory name."""
    try:
        title = load_metadata(list_checkpoints("gpt")[name]).get("name", name)
    # a damaged metadata.json: loading the model will say what is wrong
    except (CheckpointError, KeyError):
        title = name
    return f"{title} ({name})"


def controls(sidebar_sentence: str) -> Choice:
    """The widgets, above the page's steps; stops the page (saying how to get one) when no
    decoder-only checkpoint is there."""
    models = checkpoint_names("gpt")
    if not models:
        st.warning("No decoder-only checkpoint was found. `python -m transformer_viz train-gpt "
                   "--lang en --out checkpoints/gpt-en` trains one. " + HOW_TO_GET_GPT2)
        st.stop()
    _first_run_defaults(models)
    state = st.session_state
    # One row, so that the figures start on a projector's first screen; the rarer settings in a
    # popover.
    model_col, prompt_col, t_col, more_col = st.columns([1.2, 2.6, 1.4, 1],
                                                        vertical_alignment="bottom")
    model = model_col.selectbox("Decoder-only model", models, key="complete_model",
                                format_func=model_label)
    prompt = prompt_col.text_input("Prompt: the beginning of a sentence", key="complete_prompt",
                                   max_chars=300)
    temperature = t_col.slider("Temperature T", 0.0, 2.0, step=0.05, key="complete_temperature",
                               help="The logits are divided by T before the softmax. "
                                    "T = 0: greedy.")
    with more_col.popover("Top-k, top-p, seed", width="stretch"):
        top_k = st.number_input("Top-k (0: off)", 0, 200, key="complete_top_k")
        top_p = st.slider("Top-p (1: off)", 0.05, 1.0, step=0.05, key="complete_top_p")
        seed = st.number_input("Seed", 0, 2**31 - 1, key="complete_seed",
                               help="The same seed and settings give the same completion.")
        length = st.number_input("At most n new tokens", 1, 40, key="complete_length")
        st.button("Use the sidebar's sentence as the prompt", key="complete_use_sidebar",
                  width="stretch",
                  on_click=lambda: state.update(complete_prompt=sidebar_sentence))
    lang, writes = prompt_language(prompt), model_language(model)
    if lang and writes and lang != writes:
        from transformer_viz.text.language_stats import language_name

        better = next((m for m in models if model_language(m) == lang), None)
        st.warning(f"This prompt looks like {language_name(lang)}, but this model writes "
                   f"{language_name(writes)}: it will cut the prompt into pieces it knows and "
                   f"continue in {language_name(writes)}."
                   + (f" Choose {model_label(better)} for a {language_name(lang)} prompt."
                      if better else ""))
    url.write(gpt=model, prompt=prompt, T=f"{temperature:g}", k=str(top_k), p=f"{top_p:g}",
              seed=str(seed),
              n=str(length))
    return Choice(model, prompt, float(temperature), int(top_k), float(top_p), int(seed),
                  int(length))
