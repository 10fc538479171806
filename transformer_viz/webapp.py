"""Streamlit glue shared by every page: checkpoint discovery, cached loading and runs, the sidebar,
the URL mirror of the state, and safe display of user text. The engine and the plots know nothing of this.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from .checkpoint import Checkpoint, CheckpointError, load_checkpoint
from .engine import SentenceRun, run_sentence
from .tokenizer import InputError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS_ENV = "TRANSFORMER_VIZ_CHECKPOINTS"  # checkpoint roots set by the operator (os.pathsep-separated)
MAX_INPUT_CHARS = 1000

EXAMPLES = {
    "de": ["Ein Mann fährt mit dem Fahrrad durch die Stadt.",
           "Zwei Hunde spielen im Schnee.",
           "Eine Frau liest ein Buch.",
           "Ein kleines Mädchen in einem roten Kleid läuft über eine Wiese.",
           "Die Katze schläft."],
    "en": ["A man rides a bicycle through the city.",
           "Two dogs are playing in the snow.",
           "A woman is reading a book.",
           "A little girl in a red dress runs across a meadow.",
           "The cat is sleeping."],
}


def checkpoint_roots() -> list[Path]:
    """The project's checkpoints/, or instead the directories the operator names in the environment."""
    configured = os.environ.get(CHECKPOINTS_ENV, "")
    if configured:
        return [Path(p) for p in configured.split(os.pathsep) if p]
    return [PROJECT_ROOT / "checkpoints"]


def list_checkpoints() -> dict[str, Path]:
    """Checkpoint name -> directory. Only directories inside the configured roots; symlinks that
    lead outside their root are ignored. Pages choose by name, never by a typed path."""
    found: dict[str, Path] = {}
    for root in checkpoint_roots():
        if not root.is_dir():
            continue
        real_root = root.resolve()
        candidates = [root] if (root / "config.json").is_file() else sorted(p for p in root.iterdir() if p.is_dir())
        for path in candidates:
            real = path.resolve()
            if real != real_root and real_root not in real.parents:
                continue  # a symlink out of the root
            if (path / "config.json").is_file() and path.name not in found:
                found[path.name] = real
    return found


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def get_checkpoint(name: str) -> Checkpoint:
    """One model per process, shared by every session: never mutate it."""
    available = list_checkpoints()
    if name not in available:
        raise CheckpointError(f"unknown checkpoint {name!r}")
    return load_checkpoint(available[name])


@st.cache_data(show_spinner="Running the model…", max_entries=256)
def get_run(name: str, sentence: str, beam_size: int = 1, causal: bool = True) -> SentenceRun:
    """Each (checkpoint, sentence, decoding) is run once; every session gets its own copy."""
    return run_sentence(get_checkpoint(name), sentence, beam_size=beam_size, causal=causal)


@dataclass
class Selection:
    checkpoint: str
    sentence: str
    layer: int
    head: int
    src_lang: str
    tgt_lang: str


def _query_int(key: str, default: int, upper: int) -> int:
    try:
        value = int(st.query_params.get(key, default))
    except (TypeError, ValueError):
        return default
    return min(max(value, 0), upper - 1)


def sidebar() -> Selection | None:
    """The shared sidebar: checkpoint, sentence (with examples), layer and head. Mirrored in the URL."""
    available = list_checkpoints()
    if not available:
        st.error("No checkpoint found. Put checkpoint directories in `checkpoints/` or name a directory in "
                 f"the {CHECKPOINTS_ENV} environment variable.")
        return None
    names = sorted(available)
    state = st.session_state
    if "checkpoint" not in state:  # first run of this session: take the URL's state
        wanted = st.query_params.get("ckpt", names[0])
        state["checkpoint"] = wanted if wanted in names else names[0]
    with st.sidebar:
        name = st.selectbox("Model (direction)", names, key="checkpoint",
                            help="Trained checkpoints found in checkpoints/ (and any the operator configured).")
        try:
            ckpt = get_checkpoint(name)
        except CheckpointError as exc:
            st.error(f"This checkpoint cannot be loaded: {exc}")
            return None
        src_lang = ckpt.metadata.get("src_lang", "de")
        tgt_lang = ckpt.metadata.get("tgt_lang", "en")
        examples = EXAMPLES.get(src_lang, EXAMPLES["de"])
        if "sentence" not in state:
            state["sentence"] = st.query_params.get("s", examples[0])[:MAX_INPUT_CHARS]

        def use_example() -> None:
            if state.get("example"):
                state["sentence"] = state["example"]

        st.selectbox("Example sentences", [""] + examples, key="example", on_change=use_example,
                     format_func=lambda s: s or "— pick an example —")
        sentence = st.text_area(f"Sentence ({src_lang})", key="sentence", max_chars=MAX_INPUT_CHARS, height=80)
        cfg = ckpt.config
        if "layer" not in state:
            state["layer"] = _query_int("layer", 0, cfg.N)
            state["head"] = _query_int("head", 0, cfg.h)
        state["layer"] = min(state["layer"], cfg.N - 1)
        state["head"] = min(state["head"], cfg.h - 1)
        layer = st.selectbox("Layer", list(range(cfg.N)), key="layer", help=f"N = {cfg.N} layers")
        head = st.selectbox("Head", list(range(cfg.h)), key="head", help=f"h = {cfg.h} heads")
    st.query_params.update({"ckpt": name, "s": sentence, "layer": str(layer), "head": str(head)})
    return Selection(name, sentence, layer, head, src_lang, tgt_lang)


def current_run(sel: Selection, beam_size: int = 1, causal: bool = True) -> SentenceRun | None:
    """Run the selection (cached), showing input problems as messages in the page, never a traceback."""
    try:
        run = get_run(sel.checkpoint, sel.sentence, beam_size, causal)
    except InputError as exc:
        st.warning(str(exc))
        return None
    for note in run.messages:
        st.info(escape_markdown(note))
    return run


def require_selection() -> Selection:
    """The sidebar's selection, made by app.py before the page runs; stops the page if there is none."""
    sel = st.session_state.get("_selection")
    if sel is None:
        st.stop()
    return sel


def escape_markdown(text: str) -> str:
    """Backslash-escape Markdown syntax, so text shown through st.info/st.markdown stays literal."""
    out = []
    for ch in text:
        if ch in "\\`*_{}[]()#+-.!|<>~$&":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def show_user_text(label: str, text: str) -> None:
    """User text is shown as text only: never as Markdown or HTML."""
    st.caption(label)
    st.text(text)


def chart(fig, data, name: str, caption: str | None = None) -> None:
    """A figure with its data as a CSV download (plotly's own toolbar saves the image)."""
    import pandas as pd

    st.plotly_chart(fig, width="stretch", key=f"chart-{name}",
                    config={"displaylogo": False, "toImageButtonOptions": {"filename": name, "scale": 2}})
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    st.download_button("Download the data (CSV)", frame.to_csv().encode("utf-8"), file_name=f"{name}.csv",
                       mime="text/csv", key=f"csv-{name}")
    if caption:
        st.caption(caption)
