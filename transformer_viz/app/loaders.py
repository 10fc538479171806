"""The models and their runs, loaded once per process and shared read-only by every session
(st.cache_resource): a checkpoint of any model family by its listed name, a sentence's run with its
trace, a decoding from a forced prefix, a digit through the Vision Transformer, a canvas through the
DETR, and the models' speed measured on this server."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import streamlit as st

from transformer_viz.app import coldstart
from transformer_viz.app.catalogue import checkpoint_names, list_checkpoints
from transformer_viz.app.shared import shared_resource
from transformer_viz.app.threads import configure_torch_threads
from transformer_viz.app.widgets import escape_markdown
from transformer_viz.checkpoints import Checkpoint, CheckpointError, load_checkpoint
from transformer_viz.models.registry import DEFAULT_ARCH, architecture

# torch and the engine are imported on first use, not here: the sidebar and the top of a page need
# only JSON, so on a cold start the browser draws them (and fetches its chart code) while torch is
# loading.
if TYPE_CHECKING:
    from concurrent.futures import Future

    import numpy as np

    from transformer_viz.core.trace import Trace
    from transformer_viz.engine import SentenceRun


# One load at a time: the first model loads in a background thread (loading_in_background) while a
# page may ask for another model in the script thread, and two threads importing transformers at
# once fail (its lazy module replaces itself in sys.modules, so the second finds names missing
# instead of waiting).
_LOAD_LOCK = threading.Lock()


def load_listed(arch: str, name: str) -> Checkpoint:
    """A checkpoint of this model family by its listed name (never a typed path)."""
    available = list_checkpoints(arch)
    if name not in available:
        what = "" if arch == DEFAULT_ARCH else f"{architecture(arch).title} "
        raise CheckpointError(f"unknown {what}checkpoint {name!r}")
    with _LOAD_LOCK:
        configure_torch_threads()
        return load_checkpoint(available[name])


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def get_checkpoint(name: str) -> Checkpoint:
    """One model per process, shared by every session: never mutate it. When a background thread is
    loading it (:func:`loading_in_background`), this waits for that thread's model instead of
    reading it again."""
    checkpoint = _background_result(name)
    if checkpoint is None:
        checkpoint = load_listed(DEFAULT_ARCH, name)
    _LOADED.add(name)
    freeze_long_lived_objects()
    return checkpoint


_BACKGROUND_LOCK = threading.Lock()
# checkpoint name -> its load in a background thread
_BACKGROUND: dict[str, Future[Checkpoint]] = {}
_background_allowed = coldstart.STARTED_COLD  # until the process's first model is asked for


def loading_in_background(name: str) -> bool:
    """Whether a background thread is loading this checkpoint now, for a page that can draw what
    needs no model meanwhile (and reruns once this turns False; :func:`get_checkpoint` then takes
    the thread's model).

    In a process that started cold (:mod:`~transformer_viz.app.coldstart`), the call that asks for
    its first model starts that thread: that model costs seconds of imports (torch) besides its
    weights. Only that one: later models load quickly in the script thread, and a first model asked
    for through :func:`get_checkpoint` (a page that needs it at once) loads there too, so that none
    is read twice.
    """
    global _background_allowed
    with _BACKGROUND_LOCK:
        if _background_allowed and not _LOADED:
            _background_allowed = False
            # The thread imports what the model needs (torch, tokenizers) and nothing that pages use
            # while it runs: plotly, for one, takes pandas from sys.modules without importing it,
            # and would find it half imported (the router imports pandas before any page runs,
            # router.py).
            _BACKGROUND[name] = coldstart.in_background(f"load {name}",
                                                        lambda: load_listed(DEFAULT_ARCH, name))
        future = _BACKGROUND.get(name)
    return future is not None and not future.done()


def _background_result(name: str) -> Checkpoint | None:
    """The model a background thread loaded (waiting for it if it is still loading), or None where
    none did; its error is raised here, once: a later call reads the checkpoint in the script
    thread."""
    global _background_allowed
    with _BACKGROUND_LOCK:
        _background_allowed = False
        future = _BACKGROUND.pop(name, None)
    return future.result() if future is not None else None


def freeze_long_lived_objects() -> None:
    """Move every object alive now (modules, torch, plotly's validators, the model) out of the
    garbage collector's reach, so that later full collections walk only what runs create.

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
    """Whether the model is (very likely) in memory already: pages skip their "while it loads"
    previews."""
    return name in _LOADED


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def _family_checkpoint(arch: str, name: str) -> Checkpoint:
    """A model of another family than the sidebar's Transformers (the RNNs, the ViT, the DETR: each
    page loads its own), once per process, shared by every session: never mutate it."""
    return load_listed(arch, name)


def get_model(arch: str, name: str) -> Checkpoint:
    """A checkpoint of any model family (a key of models.registry.ARCHITECTURES) by its listed
    name."""
    arch = architecture(arch).name
    return get_checkpoint(name) if arch == DEFAULT_ARCH else _family_checkpoint(arch, name)


def page_model(arch: str, missing: str) -> tuple[str, Checkpoint]:
    """The first listed checkpoint of a family, for a page that loads its own model (the ViT, the
    DETR), and its name; where there is none, or it cannot be loaded, the page says so (``missing``:
    what to put where) and stops."""
    names = checkpoint_names(arch)
    if not names:
        st.warning(f"This page needs {missing}, which was not found.")
        st.stop()
    try:
        return names[0], get_model(arch, names[0])
    except CheckpointError as exc:
        st.warning(escape_markdown(str(exc)))
        st.stop()


# A translation without its trace is a few kB: many are kept, so that a page which shows no tensor
# of the sentence (the Overview, the RNN page's first steps, a beam search) never runs a traced
# pass, and a page that does later finds the decoding done. get_translation(a, b) is the same entry
# as get_translation(a, b, 1) (app/shared.py).
@shared_resource(show_spinner="Translating…", max_entries=128, ttl=3600)
def get_translation(name: str, sentence: str, beam_size: int = 1) -> SentenceRun:
    """The sentence decoded (greedy, or beam search with ``beam_size`` > 1), without a trace: run
    once per (checkpoint, sentence, decoding) and shared, read-only, by every session. Concurrent
    sessions call the shared model at the same time: that is safe because the model is in eval mode,
    never mutated, and every call brings its own decoding caches."""
    from transformer_viz.engine import run_sentence

    return run_sentence(get_checkpoint(name), sentence, beam_size=beam_size, trace=False)


# A trace of a typical sentence (~15 tokens, small model) is a few MB, dominated by logits and probs
# (T × V each); a 250-token input can reach ~100 MB. The bound and the expiry keep the cache's
# memory predictable while a lecture hall still shares the runs of the example sentences. get_run(a,
# b) is the same entry as get_run(a, b, 1, True) (app/shared.py).
@shared_resource(show_spinner="Running the model…", max_entries=32, ttl=3600)
def get_run(name: str, sentence: str, beam_size: int = 1, causal: bool = True) -> SentenceRun:
    """The greedy translation (:func:`get_translation`) with its trace, the teacher-forced pass over
    it (``causal=False``: without the decoder's causal mask, the same translation): what
    ``run_sentence(checkpoint, sentence, causal=causal)`` returns, run once and shared, read-only,
    by every session (a cache_data copy would unpickle hundreds of tensors on every rerun).

    A beam run (``beam_size`` > 1, with the mask) is :func:`get_translation`'s, without a trace: the
    pages that show one (the Overview's translation, the Decoding page's tree and scores) show none
    of its tensors."""
    from transformer_viz.engine import retraced

    if beam_size > 1 and causal:
        return get_translation(name, sentence, beam_size)
    return retraced(get_checkpoint(name), get_translation(name, sentence, beam_size), causal=causal)


@st.cache_resource(show_spinner="Decoding from the forced word…", max_entries=64, ttl=3600)
def get_forced_run(name: str, sentence: str, forced: tuple[int, ...]) -> SentenceRun:
    """Greedy decoding of the sentence whose translation starts with ``forced`` (token IDs), the
    model's own choices after them ("what if it had chosen another word?"); decoding only, no trace.
    Shared like get_run."""
    from transformer_viz.engine import run_sentence

    return run_sentence(get_checkpoint(name), sentence, trace=False, forced_prefix=list(forced))


@shared_resource(show_spinner="Running the recurrent model…", max_entries=32, ttl=3600)
def get_rnn_run(name: str, sentence: str, traced: bool = False) -> SentenceRun:
    """A recurrent model's greedy translation of the sentence, run once and shared read-only;
    ``traced``: with its trace, the teacher-forced pass over that translation (about as long again
    as decoding it), taken only for the page's steps that show one."""
    from transformer_viz.engine import retraced, run_sentence

    if traced:
        return retraced(get_model("rnn", name), get_rnn_run(name, sentence))
    return run_sentence(get_model("rnn", name), sentence, top_k=5, trace=False)


def rnn_trace(name: str, sentence: str) -> Trace:
    """The trace of the recurrent model's run of the sentence (:func:`get_rnn_run`), for a step that
    shows it."""
    return get_rnn_run(name, sentence, traced=True).trace


@st.cache_resource(show_spinner="Loading the digits…", max_entries=1)
def digits_split():
    """The digits' fixed train/held-out split (vision/digits.py), read once per process."""
    from transformer_viz.vision.digits import load_split

    return load_split()


@shared_resource(show_spinner="Running the Vision Transformer…", max_entries=64, ttl=3600)
def get_vit_run(name: str, index: int, occluded: tuple[int, ...] = ()):
    """(image (H, W), trace) of the held-out image ``index`` with the patches ``occluded`` (0-based)
    set to 0, run once and shared read-only."""
    import numpy as np

    checkpoint = get_model("vit", name)
    p, grid = checkpoint.config.patch_size, checkpoint.config.grid
    image = np.array(digits_split().test_images[index])  # (H, W), a copy: the split is shared
    for patch in occluded:
        row, col = divmod(patch, grid)
        image[row * p:(row + 1) * p, col * p:(col + 1) * p] = 0.0
    return image, _traced(checkpoint, image)


@st.cache_resource(show_spinner="Running the DETR…", max_entries=64, ttl=3600)
def get_detr_run(name: str, seed: int):
    """(canvas, trace) of canvas 0 of ``seed`` (held-out digits, canvases.make_canvas), run once and
    shared read-only."""
    from transformer_viz.vision.canvases import make_canvas

    checkpoint = get_model("detr", name)
    canvas = make_canvas(seed, 0, "held-out", checkpoint.config.canvas_size)
    return canvas, _traced(checkpoint, canvas.image)


def _traced(checkpoint: Checkpoint, image):
    """The trace of an image model on one image (H, W), as a batch of one."""
    import torch

    from transformer_viz.core.trace import Trace

    trace = Trace()
    with torch.no_grad():
        checkpoint.model(torch.from_numpy(image)[None], trace)  # (1, H, W)
    return trace


@st.cache_resource(show_spinner="Timing the models on this server…", max_entries=4)
def measured_speed(names: tuple[tuple[str, str, str], ...],
                   lengths: tuple[int, ...]) -> dict[str, list[float]]:
    """Seconds per sentence at each length for each (label, model family, checkpoint name), measured
    once per server process (:func:`~transformer_viz.engine.time_per_sentence`)."""
    from transformer_viz.engine import time_per_sentence

    out = {}
    for label, arch, name in names:
        model = get_model(arch, name).model
        # warm-up (first calls set up kernels), not shown
        time_per_sentence(model, lengths[-1], repeats=1)
        out[label] = [time_per_sentence(model, n) for n in lengths]
    return out


@st.cache_resource(show_spinner="Completing the prompt…", max_entries=32, ttl=3600)
def get_prompt_run(name: str, prompt: str, temperature: float, top_k: int, top_p: float, seed: int,
                   max_new_tokens: int):
    """A decoder-only model's completion of the prompt with its trace, run once per settings and
    shared read-only (the sampler is seeded, so the same settings give the same text for
    everyone)."""
    from transformer_viz.engine import run_prompt
    from transformer_viz.generation.completion import SamplingSettings

    return run_prompt(get_model("gpt", name), prompt,
                      SamplingSettings(temperature, top_k, top_p, seed, max_new_tokens))


@st.cache_data(show_spinner="Running the reversed sentence…", max_entries=64)
def reversed_inputs(checkpoint: str, text: str) -> tuple[str, list[str], np.ndarray, np.ndarray]:
    """The Positional encoding page's other word order: its text, tokens, embeddings and inputs."""
    # Only what the comparison needs, as numpy: unpickling a whole traced run on every rerun is
    # slow.
    other = get_run(checkpoint, text)
    return (other.source_text, other.src_tokens, other.trace["src.embedding"][0].numpy(),
            other.trace["src.input"][0].numpy())
