"""One shared model, many sessions at once: every trace belongs to its own call.

Streamlit runs each browser session's script in its own thread, and all of them call the one cached
model (webapp.get_checkpoint). These tests do the same with plain threads.
"""

from __future__ import annotations

import threading

import torch

from transformer_viz.engine import run_sentence

SENTENCES = [
    "ein mann spielt im park .",
    "zwei kinder sitzen am strand .",
    "eine frau läuft auf der straße mit einem ball .",
    "ein hund .",
    "der mann und die frau spielen im park mit zwei blau ball .",
    "kinder",
    "rot blau rot blau rot blau rot blau rot blau rot blau rot blau",
    "eine frau sitzt am strand <pad> </s> .",
    "ein mann 😀 läuft",
    "am strand spielt ein hund mit einem roten ball und zwei kinder sitzen im park auf der straße "
    ".",
    "blau",
    "ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein ein "
    "ein",
    "zwei hund .",
    "frau mit ball",
    "ein\u200bmann\u202e spielt",
    "straße straße straße .",
]
THREADS = 16
# each thread runs two different sentences, so a call also follows another one in the same thread
ROUNDS = 2


def module_state(model: torch.nn.Module) -> dict[str, tuple]:
    """Every module's attributes, and any tensor kept outside its parameters and buffers."""
    state = {}
    for name, module in model.named_modules():
        stray = sorted(k for k, v in vars(module).items() if isinstance(v, torch.Tensor))
        state[name] = (sorted(vars(module)), stray, sorted(module._buffers),
                       sorted(module._parameters))
    return state


def snapshot(run) -> dict:
    """A copy of everything a run returned, taken at once: later calls cannot reach into it."""
    return {"source_text": run.source_text, "src_ids": list(run.src_ids),
            "tgt_ids": list(run.tgt_ids), "translation": run.translation,
            "trace": {name: t.clone() for name, t in run.trace.items()}}


def assert_same_run(got, expected: dict, sentence: str) -> None:
    """``got`` is read after every thread has finished, so a trace shared or overwritten by another
    call would show here."""
    assert got.source_text == expected["source_text"], sentence
    assert got.src_ids == expected["src_ids"], sentence
    assert got.tgt_ids == expected["tgt_ids"], sentence
    assert got.translation == expected["translation"], sentence
    assert got.trace.names() == list(expected["trace"])
    for name, tensor in expected["trace"].items():
        assert torch.equal(got.trace[name], tensor), (sentence, name)


def test_sessions_at_once_each_get_their_own_trace(tiny_checkpoint):
    assert len(set(SENTENCES)) == THREADS
    before = module_state(tiny_checkpoint.model)
    weights = {k: v.clone() for k, v in tiny_checkpoint.model.state_dict().items()}
    # one after the other
    expected = [snapshot(run_sentence(tiny_checkpoint, s)) for s in SENTENCES]
    # the sentences really give different traces, so a mix-up would be seen
    assert len({tuple(r["src_ids"]) for r in expected}) == THREADS
    assert len({r["trace"]["logits"].sum().item() for r in expected}) == THREADS

    results: dict[tuple[int, int], object] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def session(index: int) -> None:
        try:
            barrier.wait()  # all threads enter the model together
            for r in range(ROUNDS):
                sentence = SENTENCES[(index + r) % THREADS]  # a different sentence each round
                results[index, r] = run_sentence(tiny_checkpoint, sentence)
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread's sentence
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert len(results) == THREADS * ROUNDS
    for (index, r), run in results.items():
        k = (index + r) % THREADS
        assert_same_run(run, expected[k], SENTENCES[k])

    # the model kept nothing from those calls and changed nothing
    assert module_state(tiny_checkpoint.model) == before
    assert all(not stray for _, stray, _, _ in before.values())
    for name, value in tiny_checkpoint.model.state_dict().items():
        assert torch.equal(value, weights[name]), name
    assert not tiny_checkpoint.model.training


def test_beam_and_greedy_at_once(tiny_checkpoint):
    """Beam search and greedy decoding of the same sentence, in parallel, do not disturb each
    other."""
    sentence = SENTENCES[2]
    expected = {beam: snapshot(run_sentence(tiny_checkpoint, sentence, beam_size=beam))
                for beam in (1, 3)}
    results, errors = [], []

    def session(beam: int) -> None:
        try:
            results.append((beam, run_sentence(tiny_checkpoint, sentence, beam_size=beam)))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(1 + 2 * (i % 2),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(results) == 4
    for beam, run in results:
        assert_same_run(run, expected[beam], f"beam {beam}")
        assert run.decoding.method == ("beam" if beam > 1 else "greedy")


def test_torch_threads_setting(monkeypatch):
    from transformer_viz.app import threads as webapp

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv(webapp.TORCH_THREADS_ENV, "2")
        assert webapp.configure_torch_threads() == 2 and torch.get_num_threads() == 2
        for raw in ("", "zero", "0", "-3"):  # unset or nonsense: the safe default
            monkeypatch.setenv(webapp.TORCH_THREADS_ENV, raw)
            assert webapp.configure_torch_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.delenv(webapp.TORCH_THREADS_ENV)
        assert webapp.configure_torch_threads() == 1
        # the setting reaches threads started later, as Streamlit's session threads are
        seen = []
        thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        thread.start()
        thread.join()
        assert seen == [1]
    finally:
        torch.set_num_threads(before)
