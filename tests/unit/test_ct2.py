"""The CTranslate2 conversion (transformer_viz/interop/ctranslate2.py): the converted model computes
our model's numbers and translations and leaves our weights and torch's threads alone, so
bench/hf_speed.py compares like with like. Skipped without ctranslate2 (pip install -r
bench/requirements.txt)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

ctranslate2 = pytest.importorskip("ctranslate2")

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.generation.decoding import greedy_decode, max_output_length  # noqa: E402
from transformer_viz.interop.ctranslate2 import CT2Translator  # noqa: E402
from transformer_viz.models.transformer.config import preset  # noqa: E402
from transformer_viz.models.transformer.model import Transformer  # noqa: E402

SENTENCES = ["ein mann spielt im park .", "zwei hunde laufen .",
             "eine frau liest ein buch im park .", "hallo"]


@pytest.fixture(scope="module")
def translator(tiny_checkpoint):
    return CT2Translator(tiny_checkpoint, "float32", threads=1)


def _padded(rows, pad_id):
    src = torch.full((len(rows), max(map(len, rows))), pad_id)
    for i, r in enumerate(rows):
        src[i, :len(r)] = torch.tensor(r)
    return src


def _sources(ckpt):
    from transformer_viz.text.corpora import encode_pairs

    return [s for s,
            _ in encode_pairs(ckpt.tokenizer, [(t, "") for t in SENTENCES], ckpt.config.max_len)]


def test_the_converted_model_gives_our_log_probabilities(tiny_checkpoint, translator):
    model, cfg = tiny_checkpoint.model, tiny_checkpoint.config
    src = _sources(tiny_checkpoint)[0]
    target = [7, 12, 30, 5, 99]
    scored = translator.translator.score_batch([[translator.tokens[i] for i in src]],
                                               [[translator.tokens[i] for i in target]])[0]
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([[cfg.bos_id] + target]))  # (1, T, V)
    ours = torch.log_softmax(logits[0], -1).gather(1,
                                                   torch.tensor(target
                                                                + [cfg.eos_id])[:, None])[:, 0]
    assert len(scored.log_probs) == len(target) + 1  # every target token and </s>
    assert torch.allclose(torch.tensor(scored.log_probs), ours, atol=1e-4)


@pytest.mark.parametrize("options",
                         [{"activation": "swish", "scale_embedding": False, "logits_bias": True,
                           "tie_embeddings": False}, {"activation": "gelu"}])
def test_an_imported_models_options_are_converted(options):
    """Marian models imported from transformers (hf.py) may use swish or GELU, no embedding scale, a
    logits bias and a separate output projection: the converted model computes the same
    log-probabilities."""
    torch.manual_seed(4)
    model = Transformer(preset("tiny", vocab_size=120, **options)).eval()
    if model.cfg.logits_bias:
        model.logits_bias.normal_()
    translator = CT2Translator(SimpleNamespace(model=model, config=model.cfg), "float32", threads=1)
    src, target = [5, 9, 17, 3, model.cfg.eos_id], [8, 40, 7]
    scored = translator.translator.score_batch([[translator.tokens[i] for i in src]],
                                               [[translator.tokens[i] for i in target]])[0]
    with torch.no_grad():
        # (1, T, V)
        logits = model(torch.tensor([src]), torch.tensor([[model.cfg.bos_id] + target]))
    ours = torch.log_softmax(logits[0], -1).gather(1,
                                                   torch.tensor(target
                                                                + [
        model.cfg.eos_id])[:, None])[:, 0]
    assert torch.allclose(torch.tensor(scored.log_probs), ours, atol=1e-4)
    assert translator.translate_ids([src], suppress=(7,)) == greedy_decode(model,
                                                                           torch.tensor([src]),
                                                                           record=False,
                                                                           suppress=(7,)).tokens


def test_greedy_translations_are_ours(tiny_checkpoint, translator):
    rows = _sources(tiny_checkpoint)
    ours = greedy_decode(tiny_checkpoint.model, _padded(rows, tiny_checkpoint.config.pad_id),
                         record=False)
    assert translator.translate_ids(rows) == ours.tokens
    assert all(len(t) <= max_output_length(tiny_checkpoint.config, max(map(len, rows)))
               for t in ours.tokens)


def test_int8_leaves_our_weights_and_torch_threads_alone(checkpoint_dir):
    ckpt = load_checkpoint(checkpoint_dir)
    before = {k: v.clone() for k, v in ckpt.model.state_dict().items()}
    threads = torch.get_num_threads()
    quantised = CT2Translator(ckpt, "int8", threads=1)
    quantised.translate_ids(_sources(ckpt), beam_size=3)
    assert torch.get_num_threads() == threads
    for key, value in ckpt.model.state_dict().items():
        assert torch.equal(value, before[key]), key

