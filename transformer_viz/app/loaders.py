"""Streamlit glue shared by every page: checkpoint discovery, cached loading and runs, the sidebar,
the URL mirror of the state, the page header, cached figures and their CSV downloads, and safe display
of user text. The engine and the plots know nothing of this.
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from transformer_viz.text.language_stats import (LanguageStats, check_language, direction_name, input_warnings, language_name, load_language_stats)
from transformer_viz.checkpoints.load import (CONFIG, TOKENIZER_DIR, WEIGHTS, Checkpoint, CheckpointError, checkpoint_arch, load_checkpoint, load_config, load_metadata)
from transformer_viz.models.config import ModelConfig
from transformer_viz.text.decoding_defaults import GenerationDefaults, load_generation_defaults
from transformer_viz.text.tokenizer import DEFAULT_MAX_CHARS, InputError

# torch and the engine are imported on first use, not here: the sidebar and the top of a page need only
# JSON, so on a cold start the browser draws them (and fetches its chart code) while torch is loading.
if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS_ENV = "TRANSFORMER_VIZ_CHECKPOINTS"  # checkpoint roots set by the operator (os.pathsep-separated)
TORCH_THREADS_ENV = "TRANSFORMER_VIZ_TORCH_THREADS"  # intra-op threads per model call (default 1)
RUN_LOG_ENV = "TRANSFORMER_VIZ_RUN_LOG"  # a file to append one JSON line per script run to (off when unset)
MAX_INPUT_CHARS = DEFAULT_MAX_CHARS


def configure_torch_threads() -> int:
    """Set torch's intra-op thread count for this server process, once, from TRANSFORMER_VIZ_TORCH_THREADS.

    Streamlit runs every session's script in its own thread, and they all call the one shared model.
    torch releases the GIL inside its kernels, so sessions already run in parallel on different cores;
    if every call also spread each matrix product over all cores, n concurrent sessions would start
    n × cores OpenMP threads fighting over the same cores (slower for everyone, and the latency of a
    single short sentence hardly gains from it: the matrices are tiny). One thread per call makes the
    number of busy cores equal to the number of sessions running the model at that moment. Raise it
    only on a machine with more cores than simultaneous users (e.g. a demo laptop: 2-4).
    """
    import torch

    raw = os.environ.get(TORCH_THREADS_ENV, "").strip()
    try:
        threads = max(1, int(raw)) if raw else 1
    except ValueError:
        threads = 1
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)  # process-wide; threads created later pick it up on their first op
    return threads


# Picture captions (what Multi30k holds) first, then everyday sentences (what Tatoeba holds), among them
# the lecture's own examples.
EXAMPLES = {
    "de": ["Ein Mann fährt mit dem Fahrrad durch die Stadt.",
           "Zwei Hunde spielen im Schnee.",
           "Eine Frau liest ein Buch.",
           "Ein kleines Mädchen in einem roten Kleid läuft über eine Wiese.",
           "Die Katze schläft.",
           "Komm her bitte.",
           "Ich habe einen großen Hund.",
           "Wo ein Wille ist, ist auch ein Weg.",
           "Tom hat kein Talent."],
    "en": ["A man rides a bicycle through the city.",
           "Two dogs are playing in the snow.",
           "A woman is reading a book.",
           "A little girl in a red dress runs across a meadow.",
           "The cat is sleeping.",
           "Please come here.",
           "I have a big dog.",
           "Where there is a will, there is a way.",
           "The kids were scared of the lions, so they left right away."],
}

# How the model card names each training corpus, for the one line that says what a model knows.
CORPUS_DESCRIPTIONS = {"Multi30k": "picture captions (Multi30k)", "Tatoeba": "everyday sentences (Tatoeba)"}


MARIAN_FILES = ("source.spm", "target.spm", "vocab.json", "tokenizer.json", "tokenizer_config.json")


def checkpoint_roots() -> list[Path]:
    """The project's checkpoints/, or instead the directories the operator names in the environment."""
    configured = os.environ.get(CHECKPOINTS_ENV, "")
    if configured:
        return [Path(p) for p in configured.split(os.pathsep) if p]
    return [PROJECT_ROOT / "checkpoints"]


def _inside(path: Path, real_root: Path) -> bool:
    real = path.resolve()
    return real == real_root or real_root in real.parents


def _safe_name(name: str) -> bool:
    # Hidden directories and anything path-like are never offered (names also reach the URL).
    return bool(name) and not name.startswith(".") and ".." not in name and name.isprintable()


def list_checkpoints(arch: str = "transformer") -> dict[str, Path]:
    """Checkpoint name -> directory, for the Transformers (the sidebar's models, which every page but one
    assumes; a transformers Marian directory is one, see hf.py) or, with ``arch="rnn"`` ("vit", "detr"), the
    models that one page loads itself; config.json says
    which (see :func:`~transformer_viz.checkpoint.checkpoint_arch`). Only directories inside the configured
    roots; a symlink that leads outside its root (the directory itself, or its config, weights or tokenizer)
    is ignored, as are hidden names and names with "..". Pages choose by name, never by a typed path."""
    found: dict[str, Path] = {}
    for root in checkpoint_roots():
        try:
            if not root.is_dir():
                continue
            real_root = root.resolve()
            candidates = [root] if (root / CONFIG).is_file() else sorted(p for p in root.iterdir() if p.is_dir())
            for path in candidates:
                if path.name in found or not _safe_name(path.name) or not _inside(path, real_root):
                    continue
                # A transformers Marian directory keeps its tokenizer files beside the weights (hf.py).
                parts = [path / CONFIG, path / WEIGHTS, path / TOKENIZER_DIR] + [path / name for name in MARIAN_FILES]
                if (path / CONFIG).is_file() and all(not p.exists() or _inside(p, real_root) for p in parts) \
                        and checkpoint_arch(path) in {arch, "" if arch == "transformer" else arch}:
                    # An unreadable config.json stays in the sidebar's list: loading it says what is wrong.
                    found[path.name] = path.resolve()
        except OSError:  # an unreadable root or a symlink loop: skip it, the others still count
            continue
    return found


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def get_checkpoint(name: str) -> Checkpoint:
    """One model per process, shared by every session: never mutate it."""
    available = list_checkpoints()
    if name not in available:
        raise CheckpointError(f"unknown checkpoint {name!r}")
    configure_torch_threads()
    checkpoint = load_checkpoint(available[name])
    _LOADED.add(name)
    freeze_long_lived_objects()
    return checkpoint


def freeze_long_lived_objects() -> None:
    """Move every object alive now (modules, torch, plotly's validators, the model) out of the garbage
    collector's reach, so that later full collections walk only what runs create.

    Streamlit runs a full collection after every script run (runner.postScriptGC) to return the
    memory of reference cycles, such as plotly figures, promptly. With torch, plotly and the model
    loaded that walks hundreds of thousands of long-lived objects that never become garbage (0.13 s
    in a bare process with them, more in the server), holding the GIL: a large part of the server's
    time per new sentence. After the freeze it walks only what later runs create. Called once per
    loaded checkpoint; objects frozen stay alive for the life of the process, as these would anyway.
    """
    import gc

    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()


_LOADED: set[str] = set()  # checkpoint names whose model this process has loaded at least once


def model_loaded(name: str) -> bool:
    """Whether the model is (very likely) in memory already: pages skip their "while it loads" previews."""
    return name in _LOADED


@st.cache_resource(show_spinner=False, max_entries=64)
def checkpoint_info(name: str) -> tuple[ModelConfig, dict]:
    """A checkpoint's config and metadata, read from its JSON files without loading the model (read-only)."""
    available = list_checkpoints()
    if name not in available:
        raise CheckpointError(f"unknown checkpoint {name!r}")
    return load_config(available[name]), load_metadata(available[name])


@st.cache_resource(show_spinner=False, max_entries=64)
def generation_defaults(name: str) -> GenerationDefaults:
    """The checkpoint's decoding defaults (generation_config.json; greedy without one), read without torch."""
    return load_generation_defaults(list_checkpoints()[name])


@st.cache_resource(show_spinner=False, max_entries=64)
def language_stats(name: str) -> LanguageStats | None:
    """The checkpoint's language_stats.json (None without one, or when it cannot be read: the language and
    length warnings are then skipped, the page still works). Read without torch."""
    try:
        return load_language_stats(list_checkpoints()[name])
    except (ValueError, OSError):
        return None


def direction_label(name: str) -> str:
    """'German → English' for a checkpoint, from its model card (its directory name when that has none)."""
    try:
        metadata = checkpoint_info(name)[1]
    except CheckpointError:
        return name
    if "src_lang" not in metadata or "tgt_lang" not in metadata:
        return name
    return direction_name(metadata["src_lang"], metadata["tgt_lang"])


def reverse_checkpoint(name: str) -> str | None:
    """The checkpoint that translates the other way (en-de for de-en), when there is one."""
    try:
        metadata = checkpoint_info(name)[1]
    except CheckpointError:
        return None
    for other in sorted(list_checkpoints()):
        try:
            other_metadata = checkpoint_info(other)[1]
        except CheckpointError:
            continue
        if (other_metadata.get("src_lang"), other_metadata.get("tgt_lang")) == (metadata.get("tgt_lang"),
                                                                                metadata.get("src_lang")):
            return other
    return None


def training_data_line(metadata: dict) -> str:
    """'Trained on picture captions (Multi30k) and everyday sentences (Tatoeba).' from the model card."""
    corpora = [CORPUS_DESCRIPTIONS.get(name, name) for name in metadata.get("data", {})]
    if not corpora:  # cards written before the corpora were listed: those models saw Multi30k only
        corpora = [CORPUS_DESCRIPTIONS["Multi30k"]]
    return "Trained on " + " and ".join(corpora) + "."


def model_card_text(name: str) -> str:
    """The checkpoint's model card (README.md), or an empty string."""
    path = list_checkpoints()[name] / "README.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


# --- the recurrent models (the RNN page loads them itself; the sidebar lists Transformers only) -----------

def rnn_checkpoints(src_lang: str = "de", tgt_lang: str = "en") -> dict[str, str]:
    """{"plain": name, "attention": name} of the recurrent checkpoints for this direction (first by name)."""
    return _rnn_checkpoints(tuple(checkpoint_roots()), src_lang, tgt_lang)


@st.cache_resource(show_spinner=False, max_entries=16)
def _rnn_checkpoints(roots: tuple[Path, ...], src_lang: str, tgt_lang: str) -> dict[str, str]:
    # The roots are part of the key: the answer is read from them once per process.
    found: dict[str, str] = {}
    for name, path in sorted(list_checkpoints("rnn").items()):
        try:
            cfg, metadata = load_config(path), load_metadata(path)
        except CheckpointError:
            continue
        if (metadata.get("src_lang", "de"), metadata.get("tgt_lang", "en")) == (src_lang, tgt_lang):
            found.setdefault("attention" if cfg.attention else "plain", name)
    return found


def transformer_for(src_lang: str, tgt_lang: str) -> str | None:
    """The (first) Transformer checkpoint that translates src_lang → tgt_lang."""
    for name in sorted(list_checkpoints()):
        try:
            metadata = checkpoint_info(name)[1]
        except CheckpointError:
            continue
        if (metadata.get("src_lang"), metadata.get("tgt_lang")) == (src_lang, tgt_lang):
            return name
    return None


@st.cache_resource(show_spinner=False, max_entries=16)
def rnn_metadata(name: str) -> dict:
    """A recurrent checkpoint's metadata.json (its model card's data), without loading the model."""
    return load_metadata(list_checkpoints("rnn")[name])


def _load_listed(arch: str, name: str, what: str) -> Checkpoint:
    """A checkpoint of this architecture by its listed name (never a typed path)."""
    available = list_checkpoints(arch)
    if name not in available:
        raise CheckpointError(f"unknown {what} checkpoint {name!r}")
    configure_torch_threads()
    return load_checkpoint(available[name])


@st.cache_resource(show_spinner="Loading the recurrent model…", max_entries=4)
def get_rnn_checkpoint(name: str) -> Checkpoint:
    """A recurrent model, once per process, shared by every session: never mutate it."""
    return _load_listed("rnn", name, "recurrent")


@st.cache_resource(show_spinner="Running the recurrent model…", max_entries=32, ttl=3600)
def get_rnn_run(name: str, sentence: str) -> SentenceRun:
    """A recurrent model's greedy translation of the sentence with its trace, run once and shared read-only."""
    from transformer_viz.engine import run_sentence

    return run_sentence(get_rnn_checkpoint(name), sentence, top_k=5)


def vit_checkpoints() -> list[str]:
    """The Vision Transformer checkpoints ("arch": "vit" in config.json), by name."""
    return sorted(list_checkpoints("vit"))


@st.cache_resource(show_spinner="Loading the Vision Transformer…", max_entries=2)
def get_vit_checkpoint(name: str) -> Checkpoint:
    """A Vision Transformer, once per process, shared by every session: never mutate it."""
    return _load_listed("vit", name, "Vision Transformer")


@st.cache_resource(show_spinner="Loading the digits…", max_entries=1)
def digits_split():
    """The digits' fixed train/held-out split (digits.py), read once per process."""
    from transformer_viz.vision.digits import load_split

    return load_split()


@st.cache_resource(show_spinner="Running the Vision Transformer…", max_entries=64, ttl=3600)
def get_vit_run(name: str, index: int, occluded: tuple[int, ...] = ()):
    """(image (H, W), trace) of the held-out image ``index`` with the patches ``occluded`` (0-based) set to 0,
    run once and shared read-only."""
    import numpy as np
    import torch

    from transformer_viz.core.trace import Trace

    checkpoint = get_vit_checkpoint(name)
    p, grid = checkpoint.config.patch_size, checkpoint.config.grid
    image = np.array(digits_split().test_images[index])  # (H, W), a copy: the split is shared
    for patch in occluded:
        row, col = divmod(patch, grid)
        image[row * p:(row + 1) * p, col * p:(col + 1) * p] = 0.0
    trace = Trace()
    with torch.no_grad():
        checkpoint.model(torch.from_numpy(image)[None], trace)  # a batch of one: (1, H, W)
    return image, trace


def page_model(names: list[str], load, missing: str) -> tuple[str, Checkpoint]:
    """The first listed checkpoint of a page that loads its own model (the ViT, the DETR) and its name; where
    there is none, or it cannot be loaded, the page says so (``missing``: what to put where) and stops."""
    if not names:
        st.warning(f"This page needs {missing}, which was not found.")
        st.stop()
    try:
        return names[0], load(names[0])
    except CheckpointError as exc:
        st.warning(escape_markdown(str(exc)))
        st.stop()


def detr_checkpoints() -> list[str]:
    """The DETR checkpoints ("arch": "detr" in config.json), by name."""
    return sorted(list_checkpoints("detr"))


@st.cache_resource(show_spinner="Loading the DETR…", max_entries=2)
def get_detr_checkpoint(name: str) -> Checkpoint:
    """A DETR, once per process, shared by every session: never mutate it."""
    return _load_listed("detr", name, "DETR")


@st.cache_resource(show_spinner="Running the DETR…", max_entries=64, ttl=3600)
def get_detr_run(name: str, seed: int):
    """(canvas, trace) of canvas 0 of ``seed`` (held-out digits, canvases.make_canvas), run once and shared
    read-only."""
    import torch

    from transformer_viz.vision.canvases import make_canvas
    from transformer_viz.core.trace import Trace

    checkpoint = get_detr_checkpoint(name)
    canvas = make_canvas(seed, 0, "held-out", checkpoint.config.canvas_size)
    trace = Trace()
    with torch.no_grad():
        checkpoint.model(torch.from_numpy(canvas.image)[None], trace)  # a batch of one: (1, H, W)
    return canvas, trace


@st.cache_resource(show_spinner="Timing the models on this server…", max_entries=4)
def measured_speed(names: tuple[tuple[str, str, str], ...], lengths: tuple[int, ...]) -> dict[str, list[float]]:
    """Seconds per sentence at each length for each (label, "rnn" or "transformer", checkpoint name),
    measured once per server process (:func:`~transformer_viz.engine.time_per_sentence`)."""
    from transformer_viz.engine import time_per_sentence

    out = {}
    for label, arch, name in names:
        model = (get_rnn_checkpoint(name) if arch == "rnn" else get_checkpoint(name)).model
        time_per_sentence(model, lengths[-1], repeats=1)  # warm-up (first calls set up kernels), not shown
        out[label] = [time_per_sentence(model, n) for n in lengths]
    return out


# A trace of a typical sentence (~15 tokens, small model) is a few MB, dominated by logits and probs
# (T × V each); a 250-token input can reach ~100 MB. The bound and the expiry keep the cache's memory
# predictable while a lecture hall still shares the runs of the example sentences.
@st.cache_resource(show_spinner="Running the model…", max_entries=32, ttl=3600)
def get_run(name: str, sentence: str, beam_size: int = 1, causal: bool = True) -> SentenceRun:
    """Each (checkpoint, sentence, decoding) is run once and the result is shared, read-only, by every
    session (a cache_data copy would unpickle hundreds of tensors on every rerun). The bound and the expiry
    keep memory predictable: a typical trace is a few MB, a 250-token one up to ~100 MB.

    Concurrent sessions call the shared model at the same time: that is safe because the model is
    in eval mode, never mutated, and every call brings its own Trace and decoding caches."""
    from transformer_viz.engine import run_sentence

    return run_sentence(get_checkpoint(name), sentence, beam_size=beam_size, causal=causal)


@st.cache_resource(show_spinner="Decoding from the forced word…", max_entries=64, ttl=3600)
def get_forced_run(name: str, sentence: str, forced: tuple[int, ...]) -> SentenceRun:
    """Greedy decoding of the sentence whose translation starts with ``forced`` (token IDs), the model's own
    choices after them ("what if it had chosen another word?"); decoding only, no trace. Shared like get_run."""
    from transformer_viz.engine import run_sentence

    return run_sentence(get_checkpoint(name), sentence, trace=False, forced_prefix=list(forced))


@dataclass
class Selection:
    checkpoint: str
    sentence: str
    layer: int
    head: int
    src_lang: str
    tgt_lang: str

    @property
    def direction(self) -> str:
        return direction_name(self.src_lang, self.tgt_lang)

    @property
    def src_name(self) -> str:
        return language_name(self.src_lang)

    @property
    def tgt_name(self) -> str:
        return language_name(self.tgt_lang)


_LAST_CHECKPOINT = "_last_checkpoint"  # the direction of the previous run, to notice a change
_CARRY = "_carry_from"  # (checkpoint, sentence) whose translation may become the new source


def _direction_changed() -> None:
    # The reader chose another direction: offer to carry the old direction's translation over.
    state = st.session_state
    if state.get(_LAST_CHECKPOINT) and state.get(_LAST_CHECKPOINT) != state.get("checkpoint"):
        state[_CARRY] = (state[_LAST_CHECKPOINT], state.get("sentence", ""))


def _carry_translation(translation: str) -> None:
    st.session_state["sentence"] = translation[:MAX_INPUT_CHARS]
    st.session_state.pop(_CARRY, None)


def _swap_direction(other: str) -> None:
    # The text is in the other language already: switch the model, keep the text.
    st.session_state["checkpoint"] = other
    st.session_state.pop(_CARRY, None)


def _carry_offer(name: str, sentence: str) -> None:
    """After a change of direction: the previous direction's translation of the sentence, and a button that
    makes it the new source (a round trip)."""
    carried = st.session_state.get(_CARRY)
    if not carried or carried[1] != sentence or carried[0] == name or carried[0] not in list_checkpoints():
        st.session_state.pop(_CARRY, None)
        return
    try:
        translation = get_run(carried[0], sentence).translation
    except (InputError, CheckpointError):
        return
    if not translation:
        return
    show_user_text(f"Its translation by the {direction_label(carried[0])} model", translation)
    st.button("Use this translation as the sentence", key="carry_translation", on_click=_carry_translation,
              args=(translation,), help="Translate it back: a round trip through both models.")


def _query_int(key: str, default: int, upper: int) -> int:
    try:
        value = int(st.query_params.get(key, default))
    except (TypeError, ValueError):
        return default
    return min(max(value, 0), upper - 1)


def query_index(key: str, n: int) -> int:
    """An index in range(n) from the URL's ``key`` (0 when absent or not a number; clamped into range)."""
    return _query_int(key, 0, n)


def _layer_and_head(cfg: ModelConfig) -> tuple[int, int]:
    """The Layer and Head pickers side by side under the model: on a 1280×720 projector they stay on the
    sidebar's first screen, below the list of pages."""
    state = st.session_state
    if "layer" not in state:
        state["layer"] = _query_int("layer", 0, cfg.N)
        state["head"] = _query_int("head", 0, cfg.h)
    state["layer"] = min(state["layer"], cfg.N - 1)
    state["head"] = min(state["head"], cfg.h - 1)
    layer_col, head_col = st.columns(2)
    layer = layer_col.selectbox("Layer", list(range(cfg.N)), key="layer", help=f"N = {cfg.N} layers")
    head = head_col.selectbox("Head", list(range(cfg.h)), key="head", help=f"h = {cfg.h} heads")
    return layer, head


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
        name = st.selectbox("Model (direction)", names, key="checkpoint", format_func=direction_label,
                            on_change=_direction_changed,
                            help="Trained checkpoints found in checkpoints/ (and any the operator configured).")
        try:
            cfg, metadata = checkpoint_info(name)
        except CheckpointError as exc:
            st.error(f"This checkpoint cannot be loaded: {exc}")
            return None
        layer, head = _layer_and_head(cfg)
        src_lang = metadata.get("src_lang", "de")
        tgt_lang = metadata.get("tgt_lang", "en")
        examples = EXAMPLES.get(src_lang, EXAMPLES["de"])
        if "sentence" not in state:
            from_url = st.query_params.get("s", examples[0])
            if len(from_url) > MAX_INPUT_CHARS:
                st.warning(f"The sentence in the link was cut to its first {MAX_INPUT_CHARS} characters.")
            state["sentence"] = from_url[:MAX_INPUT_CHARS]

        def use_example() -> None:
            if state.get("example"):
                state["sentence"] = state["example"]

        st.selectbox("Example sentences", [""] + examples, key="example", on_change=use_example,
                     format_func=lambda s: s or "— pick an example —")
        sentence = st.text_area(f"Sentence ({language_name(src_lang)})", key="sentence", max_chars=MAX_INPUT_CHARS, height=80)
        if len(sentence) > MAX_INPUT_CHARS:  # max_chars is enforced by the browser only
            st.warning(f"The text was cut to its first {MAX_INPUT_CHARS} characters.")
            sentence = sentence[:MAX_INPUT_CHARS]
        _carry_offer(name, sentence)
    state[_LAST_CHECKPOINT] = name
    st.query_params.update({"ckpt": name, "s": sentence, "layer": str(layer), "head": str(head)})
    return Selection(name, sentence, layer, head, src_lang, tgt_lang)


def current_run(sel: Selection, beam_size: int = 1, causal: bool = True) -> SentenceRun | None:
    """Run the selection (cached), showing input problems as messages in the page, never a traceback."""
    try:
        run = get_run(sel.checkpoint, sel.sentence, beam_size, causal)
    except InputError as exc:
        st.warning(escape_markdown(str(exc)))
        return None
    except CheckpointError as exc:
        st.error(f"This checkpoint cannot be loaded: {exc}")
        return None
    show_input_notes(sel, run)
    return run


_NOTES_SLOT = "_notes_slot"  # where page_header keeps the place under the title for the input notes


def show_input_notes(sel: Selection, run: SentenceRun) -> None:
    """What the reader should know about the input, at the top of the page (under the title), whatever the
    page draws first: what was removed or cut, and the warnings (another language, far too long, a
    fragment) with, for another language, a button that swaps the direction and keeps the text."""
    slot = st.session_state.get(_NOTES_SLOT)
    with slot if slot is not None else st.container():
        for note in run.messages:
            st.info(escape_markdown(note))
        warnings = input_warnings(language_stats(sel.checkpoint), run.source_text, run.src_ids, sel.src_lang,
                                  sel.tgt_lang)
        for warning in warnings:
            st.warning(escape_markdown(warning))
        stats = language_stats(sel.checkpoint)
        other = reverse_checkpoint(sel.checkpoint) if stats is not None else None
        if other and check_language(stats, run.src_ids, sel.src_lang).looks_like == sel.tgt_lang:
            st.button(f"Translate it {direction_label(other)} instead", key="swap_direction",
                      on_click=_swap_direction, args=(other,))


_URL_STEP = "_url_step"  # (page title, the step named in the link the session was opened with)
_OPEN_PAGE = "_open_page"  # where app.py leaves this run's page title and selection for the page


@dataclass(frozen=True)
class OpenPage:
    title: str
    selection: Selection | None


def open_page(title: str, selection: Selection | None) -> None:
    """Called by app.py on every run, after the sidebar and before the page: what the page is, and the
    sidebar's choice (None when there is no usable checkpoint), for :func:`page_header`."""
    st.session_state[_OPEN_PAGE] = OpenPage(title, selection)
    if _URL_STEP not in st.session_state:  # the session's first run: the link's open step, for this page only
        st.session_state[_URL_STEP] = (title, st.query_params.get("step"))
    st.query_params.pop("step", None)  # a page with steps writes its own back; one without has none
    st.session_state[_NOTES_SLOT] = None  # page_header makes this run's place for the input notes


def selection() -> Selection:
    """The sidebar's choice for this run; stops the page when there is none (the sidebar says why)."""
    opened = st.session_state.get(_OPEN_PAGE)
    if opened is None or opened.selection is None:
        st.stop()
    return opened.selection


def require_run(sel: Selection, beam_size: int = 1, causal: bool = True) -> SentenceRun:
    """The selection's run (cached); stops the page when the input was refused (the message is shown)."""
    run = current_run(sel, beam_size, causal)
    if run is None:
        st.stop()
    return run


# The look every page shares. Style-only HTML takes no room on the page (Streamlit puts it out of the flow).
PAGE_CSS = """<style>
/* A projector shows 720 px: less empty space above a smaller title, so that the main figure starts on
   the first screen. */
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem; }  /* just below the 3.75rem header bar */
[data-testid="stMain"] h1 { font-size: 2.1rem; padding: 0.25rem 0 0.5rem; }
/* Fourteen pages: closer links (30 px apart instead of 34, each still 28 px tall) keep the Layer and Head
   pickers below them on the sidebar's first screen at 720 px. */
[data-testid="stSidebarNavItems"] li { margin: 0; }
[data-testid="stSidebarNavLink"] { margin: 1px 0; }
/* The sentence bar is for narrow screens (a phone), where the sidebar is folded away. */
@media (min-width: 768px) { .st-key-sentence_bar { display: none; } }
/* A figure of several panels side by side, or a block diagram, keeps the width it needs (webapp.chart)
   and scrolls sideways on a narrower screen, instead of drawing its parts over each other. */
[class*="st-key-wide"] { overflow-x: auto; overflow-y: hidden; }
""" + "\n".join(f'[class*="st-key-wide{w}-"] > * {{ min-width: {w}px; }}'
                for w in range(300, 1300, 50)) + """
</style>"""


def page_style() -> None:
    st.html(PAGE_CSS)


_BAR_TEXT = "sentence_bar_text"


def _run_bar_sentence() -> None:
    text = st.session_state.get(_BAR_TEXT, "")
    if text.strip():
        st.session_state["sentence"] = text[:MAX_INPUT_CHARS]


def sentence_bar(sel: Selection) -> None:
    """On a phone the sidebar (and its sentence box) is folded away behind a small arrow, and a text area
    there takes Enter as a new line: a one-line box at the top of the page with a Translate button, where
    Enter (the keyboard's Go) runs the sentence. Hidden on wide screens, which have the sidebar."""
    st.session_state[_BAR_TEXT] = sel.sentence  # what the sidebar holds, each run (a form sends only on submit)
    with st.container(key="sentence_bar"), st.form("sentence_bar_form", border=False):
        text_col, button_col = st.columns([4, 1], vertical_alignment="bottom")
        text_col.text_input(f"Type a sentence ({language_name(sel.src_lang)})", key=_BAR_TEXT, max_chars=MAX_INPUT_CHARS)
        button_col.form_submit_button("Translate ▶", on_click=_run_bar_sentence, width="stretch")


def page_header(intro: str, formula: str | None = None, *, run: bool = True) -> tuple[Selection, SentenceRun | None]:
    """The top of every page: the selection, the page's title (as the navigation names it), what the page
    shows and its formula; then the sentence's run, or a stop where the input was refused.

    ``run=False`` leaves the run to the page (returned as None), for a page that has something to show
    before it, or without it.
    """
    sel = selection()
    st.title(st.session_state[_OPEN_PAGE].title)
    st.session_state[_NOTES_SLOT] = st.container()  # the input notes go here, above everything else
    sentence_bar(sel)
    st.markdown(intro)
    if formula:
        st.latex(formula)
    return sel, (require_run(sel) if run else None)


def reset_stale_index(key: str, n: int) -> None:
    """Call before a keyed selectbox over range(n) whose labels describe the data (tokens, lengths).

    After a new sentence the kept choice may be out of range, and, when its old label is no longer
    among the options, Streamlit hands back that label (a str) instead of an index. Either way the
    choice goes back to 0 rather than failing.
    """
    value = st.session_state.get(key, 0)
    if not isinstance(value, int) or not 0 <= value < n:
        st.session_state[key] = 0


def link_step() -> str | None:
    """The step named in the link this session was opened with (``step=7``, as text, unchecked), when the
    link opened this page; once: later runs get None, and the session's own choice counts."""
    state = st.session_state
    title, wanted = state.get(_URL_STEP) or (None, None)
    if wanted is None or title != state[_OPEN_PAGE].title:
        return None
    state[_URL_STEP] = (None, None)
    return wanted


def steps(labels: list[str], key: str) -> list:
    """A page's numbered steps as tabs, of which only the open one runs (`if tab.open:`): a new sentence
    then builds, sends and draws only that step's figures, about half the CPU of the whole page for
    the server and for the student's browser. Each session keeps its open step under `key`; a widget
    inside a closed step is not rendered, so it starts from its default when the step opens again. The open
    step is in the URL (``step=2``), so a shared link reopens it."""
    state = st.session_state
    title, wanted = state.get(_URL_STEP) or (None, None)
    if wanted is not None and title == state[_OPEN_PAGE].title:  # a shared link names the open step: 1, 2, …
        state[_URL_STEP] = (None, None)  # used once; later the session's own choice counts
        if str(wanted).isdigit() and 1 <= int(wanted) <= len(labels):
            state[key] = labels[int(wanted) - 1]
    tabs = st.tabs(labels, key=key, on_change="rerun")
    # The open step is mirrored in the URL like the page, sentence, layer and head: a link reopens it.
    opened = state.get(key)
    st.query_params["step"] = str(labels.index(opened) + 1 if opened in labels else 1)
    return tabs


@st.fragment(run_every=timedelta(hours=1))
def rerun_after_reconnect() -> None:
    """Shows nothing; its presence makes the browser rerun the page whenever its websocket reconnects.

    Streamlit's frontend asks for a full rerun after a reconnect only when it thinks the server lost
    the session's run, for instance when the page holds a fragment that reruns on a timer, as this
    one does (hourly, at the cost of a run that draws nothing). Behind a proxy with several processes,
    a reconnect can land on another process that has never seen the session (its own process died):
    without the rerun the page would keep showing the old figures while nothing behind it runs any more
    (no widget, tab or download would answer until the student touched something). With it, the new
    process runs the page from the widgets' values and the URL: same page, sentence, direction, layer,
    head and open step. After a reconnect to the same process it is one cheap rerun from the caches.
    """


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


def row_names(tokens: list[str]) -> list[str]:
    """Position and token ("3 ▁Hund") as row and column names of a CSV download: the figures' labels
    (plots.token_labels) without their HTML escaping, since a CSV is data, not markup."""
    return [f"{i} {t}" for i, t in enumerate(tokens)]


def token_frame(values, row_tokens: list[str], col_tokens: list[str] | None = None):
    """A matrix whose rows (and columns) are tokens, for a CSV download: rows and columns named as in
    :func:`row_names`; −∞ is written as -inf."""
    import numpy as np
    import pandas as pd

    return pd.DataFrame(np.asarray(values), index=row_names(row_tokens),
                        columns=row_names(col_tokens) if col_tokens is not None else None)


# The figure's own template (plots.common) gives its look, not Streamlit's theme; the toolbar shows on
# hover (on a touch screen: after a tap), so it does not sit over a chart's title.
CHART_CONFIG = {"displaylogo": False, "displayModeBar": "hover", "scrollZoom": False}


def chart(fig, data, name: str, caption: str | None = None) -> None:
    """A figure with its data as a CSV download (plotly's own toolbar saves the image)."""
    import pandas as pd

    from transformer_viz.plots.common import min_width

    needed = min_width(fig)
    # The keyed container carries the figure's minimum width into the page's style (PAGE_CSS), rounded up
    # to 50 px.
    with st.container(key=f"wide{min(1250, -(-needed // 50) * 50)}-{name}") if needed else st.container():
        st.plotly_chart(fig, width="stretch", key=f"chart-{name}", theme=None, config=CHART_CONFIG | {
            "toImageButtonOptions": {"filename": name, "scale": 2}})
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    # A callable: the CSV is built only when someone downloads it, not on every rerun.
    st.download_button("Download the data (CSV)", lambda: frame.to_csv().encode("utf-8"), file_name=f"{name}.csv",
                       mime="text/csv", key=f"csv-{name}")
    if caption:
        st.caption(caption)


def cached_figure(factory, *args, **kwargs):
    """``factory(*args, **kwargs)``, built once per input and shared by every session: plotly figures are
    slow to build, and no page changes one once built (``st.plotly_chart`` only reads it)."""
    return _cached_figure(factory, f"{factory.__module__}.{factory.__qualname__}", *args, **kwargs)


@st.cache_resource(max_entries=256, ttl=3600, show_spinner=False)
def _cached_figure(_factory, factory_name: str, *args, **kwargs):
    # Streamlit cannot hash a function: the "_" keeps it out of the cache key, and its name stands in.
    return _factory(*args, **kwargs)


def long_form(row_labels: list[str], col_labels: list[str], values: dict, names: tuple[str, str] = ("query", "key")):
    """Matrices of (rows × columns) as a CSV with one line per cell: the row's label, the column's label and
    each matrix's value there (``values``: column name -> matrix), the layout a spreadsheet filters."""
    import numpy as np

    row, col = names
    return {row: np.repeat(row_labels, len(col_labels)), col: np.tile(col_labels, len(row_labels)),
            **{name: np.ravel(matrix) for name, matrix in values.items()}}


_RUN_LOG_LOCK = threading.Lock()


@contextmanager
def logged_run(page_title: str):
    """Time one script run (sidebar and page) and append it to the file named by TRANSFORMER_VIZ_RUN_LOG.

    The server's own share of a rerun, apart from the browser's drawing: what an operator (and
    bench/load_test.py) reads to see whether the server keeps up. Nothing is written when it is unset.
    Each line also says which process and session ran it (several processes may share one file behind
    a proxy), the CPU time of the run's own thread (`cpu_s`), and the whole process's CPU time so far
    (`process_cpu_s`): its difference between two lines is the server's CPU for everything in between,
    including what other threads did (sending messages, other sessions).
    """
    path = os.environ.get(RUN_LOG_ENV)
    if not path:
        yield
        return
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    start, cpu_start, outcome = time.perf_counter(), time.thread_time(), "ok"
    try:
        yield
    except BaseException as exc:  # st.stop() and reruns end a run by raising; they are not failures
        outcome = type(exc).__name__
        raise
    finally:
        record = {"time": round(time.time(), 3), "page": page_title, "outcome": outcome,
                  "seconds": round(time.perf_counter() - start, 4),
                  "cpu_s": round(time.thread_time() - cpu_start, 4), "process_cpu_s": round(time.process_time(), 3),
                  "pid": os.getpid(), "session": ctx.session_id if ctx else None}
        with _RUN_LOG_LOCK, open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
