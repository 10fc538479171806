"""The decoding shortcuts change no output: finished sentences leave the batch, beam search gathers
only the self-attention caches (the cross-attention keys/values are computed once per sentence), and
attention runs without a mask when nothing is padded. Each is checked against the straightforward
path."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from transformer_viz.checkpoints import load_checkpoint
from transformer_viz.core.trace import Trace
from transformer_viz.generation.decoding import beam_search, greedy_decode
from transformer_viz.models.transformer.state import DecoderState
from transformer_viz.text.corpora import encode_pairs

ROOT = Path(__file__).resolve().parents[2]
# Sentences of very different lengths, so that in one batch they finish at different steps.
SENTENCES = ["Hallo!", "Ein Hund.", "Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.",
             "Eine Frau in einem roten Mantel liest ein Buch auf einer Bank im Park.",
             "Drei Kinder springen.",
             "Ein älterer Mann mit Hut verkauft auf dem Markt Obst und Gemüse an Touristen.",
             "Danke."]


@pytest.fixture(scope="module")
def shipped():
    """The shipped German→English model and a padded batch of SENTENCES: a trained model writes </s>
    at different steps for different sentences, which a random one hardly does."""
    path = ROOT / "checkpoints" / "de-en"
    if not (path / "model.safetensors").is_file():
        pytest.skip(f"no shipped checkpoint at {path}")
    ckpt = load_checkpoint(path)
    rows = [s for s,
            _ in encode_pairs(ckpt.tokenizer, [(s, "") for s in SENTENCES], ckpt.config.max_len)]
    src = torch.full((len(rows), max(map(len, rows))), ckpt.config.pad_id)
    for i, r in enumerate(rows):
        src[i, :len(r)] = torch.tensor(r)
    return ckpt.model.eval(), src


def _reference_greedy(model, src: torch.Tensor, max_len: int) -> list[list[int]]:
    """Greedy decoding the straightforward way: no cache, the whole batch to the end, every step a
    full traced forward (explicit attention with its masks) over the prefix."""
    cfg = model.cfg
    tokens = torch.full((src.size(0), 1), cfg.bos_id)
    with torch.no_grad():
        for _ in range(max_len):
            tokens = torch.cat([tokens,
                                model(src, tokens, trace=Trace())[:, -1].argmax(-1)[:, None]], 1)
    out = []
    for row in tokens[:, 1:].tolist():
        out.append(row[:row.index(cfg.eos_id)] if cfg.eos_id in row else row)
    return out


def test_greedy_sentences_leaving_the_batch_change_no_output(shipped):
    model, src = shipped
    shrunk = greedy_decode(model, src, max_len=30, record=False, shrink=True)
    whole = greedy_decode(model, src, max_len=30, record=False, shrink=False)
    recorded = greedy_decode(model, src, max_len=30, record=True)
    # the sentences really finish at different steps
    assert len({len(t) for t in whole.tokens}) >= 5
    assert shrunk.tokens == whole.tokens == recorded.tokens == _reference_greedy(model, src, 30)
    assert shrunk.scores == pytest.approx(whole.scores, abs=1e-4)
    guarded = [greedy_decode(model, src, max_len=30, record=False, shrink=s, max_loop_repeats=1)
               for s in (True, False)]
    assert guarded[0].tokens == guarded[1].tokens


@pytest.mark.parametrize("alpha, guard", [(1.4, 0), (0.0, 2)])
def test_beam_sentences_leaving_the_batch_change_no_output(shipped, alpha, guard):
    model, src = shipped
    kwargs = {"beam_size": 5, "max_len": 30, "alpha": alpha, "max_loop_repeats": guard}
    shrunk = beam_search(model, src, record=False, shrink=True, **kwargs)
    whole = beam_search(model, src, record=False, shrink=False, **kwargs)
    recorded = beam_search(model, src, record=True, **kwargs)
    assert len({len(t) for t in whole.tokens}) >= 5
    assert shrunk.tokens == whole.tokens == recorded.tokens
    assert shrunk.scores == pytest.approx(whole.scores, abs=1e-4)
    # the record keeps every sentence at every step
    assert len(recorded.steps[0].tokens) == len(SENTENCES)


def test_beam_search_gathering_only_self_attention_caches_equals_gathering_everything(
        shipped, monkeypatch):
    model, src = shipped
    fast = beam_search(model, src, beam_size=5, max_len=30, alpha=1.4, record=False, shrink=False)
    # The straightforward reorder: every row of every tensor (memory, mask, both caches) gathered
    # each step.
    monkeypatch.setattr(DecoderState, "select_beams", DecoderState.select)
    slow = beam_search(model, src, beam_size=5, max_len=30, alpha=1.4, record=False, shrink=False)
    assert fast.tokens == slow.tokens
    assert fast.scores == slow.scores


def test_select_beams_gathers_self_attention_and_keeps_cross_attention(tiny_model):
    src = torch.randint(4, tiny_model.cfg.vocab_size, (2, 5))
    # 2 sentences × 3 beams
    state = tiny_model.start_state(src).select(torch.arange(2).repeat_interleave(3))
    tiny_model.decode_step(torch.full((6,), tiny_model.cfg.bos_id), state)
    index = torch.tensor([2, 0, 0, 4, 5, 3])  # beams reordered within each sentence
    picked = state.select_beams(index)
    for before, after in zip(state.caches, picked.caches):
        assert (after["cross"]["k"] is before["cross"]["k"]
                and after["cross"]["v"] is before["cross"]["v"])
        assert torch.equal(after["self"]["k"], before["self"]["k"][index])
        assert torch.equal(after["self"]["v"], before["self"]["v"][index])
    assert picked.memory is state.memory


def test_cross_attention_keys_values_are_computed_once_when_decoding_starts(tiny_model):
    src = torch.randint(4, tiny_model.cfg.vocab_size, (2, 5))
    state = tiny_model.start_state(src)
    memory = state.memory
    for layer, cache in zip(tiny_model.decoder_layers, state.caches):
        assert torch.allclose(cache["cross"]["k"],
                              layer.cross_attn.split_heads(layer.cross_attn.w_k(memory)))
        assert torch.allclose(cache["cross"]["v"],
                              layer.cross_attn.split_heads(layer.cross_attn.w_v(memory)))


def test_attention_runs_without_a_mask_only_when_nothing_is_padded(tiny_model):
    torch.manual_seed(3)
    src = torch.randint(4, tiny_model.cfg.vocab_size, (2, 6))
    assert tiny_model.start_state(src).src_mask is None
    padded = src.clone()
    padded[1, 4:] = tiny_model.cfg.pad_id
    assert tiny_model.start_state(padded).src_mask is not None
    with torch.no_grad():
        fused, _ = tiny_model.encode(src)  # no mask handed to attention
        # softmax with the all-True mask, written out
        explicit, _ = tiny_model.encode(src, trace=Trace())
    assert torch.allclose(fused, explicit, atol=1e-5)


def test_the_products_layouts_write_what_plain_products_write(shipped, monkeypatch):
    """models/products.py (transposed weights for few rows, fused Q|K|V) against plain F.linear on
    each weight: the whole padded batch and every sentence alone, greedy and beam 5."""
    import torch.nn.functional as F

    from transformer_viz.models import products

    model, src = shipped
    runs = {}
    layouts = products.project
    plain = lambda x, weights, biases: tuple(F.linear(x, w, b) for w, b in zip(weights, biases))  # noqa: E731
    for fast in (True, False):
        monkeypatch.setattr(products, "project", layouts if fast else plain)
        alone = [row[row != model.cfg.pad_id][None] for row in src]  # (1, S_i) each
        runs[fast] = [greedy_decode(model, src, max_len=30, record=False).tokens,
                      beam_search(model, src, beam_size=5, max_len=30, alpha=1.4,
                                  record=False).tokens,
                      [greedy_decode(model, s, max_len=30, record=False).tokens for s in alone],
                      [beam_search(model, s, beam_size=5, max_len=30, alpha=1.4,
                                   record=False).tokens for s in alone]]
    assert runs[True] == runs[False]
