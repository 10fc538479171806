"""The decoder-only model: its causal mask, its trace names, saving and loading, and GPT-2's weights
mapped onto it (a randomly initialised tiny GPT2LMHeadModel, no network)."""

from __future__ import annotations

import json

import pytest
import torch

from transformer_viz.checkpoints import (CheckpointError, checkpoint_arch, load_checkpoint,
                                         save_checkpoint)
from transformer_viz.checkpoints.cards import gpt_card
from transformer_viz.checkpoints.gpt2 import gpt2_model_config, gpt2_state_dict
from transformer_viz.core.trace import Trace
from transformer_viz.models.gpt.config import GPTConfig
from transformer_viz.models.gpt.model import GPT
from transformer_viz.models.gpt.names import trace_names
from transformer_viz.models.registry import architecture

TINY = dict(vocab_size=40, d_model=32, d_ff=64, h=4, N=2, max_len=24, dropout=0.0)


def tiny_gpt(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(**{**TINY, **overrides})).eval()


def test_no_position_attends_to_a_later_one_in_any_layer_or_head():
    model = tiny_gpt()
    tokens = torch.tensor([[1, 5, 9, 7, 12, 30, 8]])
    trace = Trace()
    model(tokens, trace=trace)
    T = tokens.size(1)
    later = torch.ones(T, T, dtype=torch.bool).triu(1)  # (T, T): key after query
    for i in range(model.cfg.N):
        weights = trace[f"decoder.{i}.self_attn.weights"][0]  # (h, T, T)
        assert weights.shape == (model.cfg.h, T, T)
        assert torch.all(weights[:, later] == 0)  # exactly zero, every head
        assert torch.all(weights[:, ~later] > 0)
        assert torch.allclose(weights.sum(-1), torch.ones(model.cfg.h, T))


def test_a_later_token_changes_no_earlier_logit():
    model = tiny_gpt()
    a = model(torch.tensor([[1, 5, 9, 7]]))
    b = model(torch.tensor([[1, 5, 9, 20]]))
    assert torch.allclose(a[0, :3], b[0, :3], atol=1e-6)
    assert not torch.allclose(a[0, 3], b[0, 3])


def test_traced_and_fused_attention_give_the_same_logits_and_the_documented_names():
    model = tiny_gpt(pre_ln=True)
    tokens = torch.tensor([[1, 4, 8, 15, 16, 23, 2]])
    trace = Trace()
    traced = model(tokens, trace=trace)
    assert torch.allclose(traced, model(tokens), atol=1e-5)
    documented = [name for name, _, _ in trace_names(model.cfg.N)]
    assert list(trace) == documented
    assert architecture("gpt").trace_names(N=2) == trace_names(2)
    assert not any(name.startswith(("src.", "encoder.")) or "cross_attn" in name
                   for name in documented)
    assert torch.allclose(trace["probs"], torch.softmax(traced, -1), atol=1e-6)


def test_padding_is_hidden_as_a_key():
    model = tiny_gpt()
    short = model(torch.tensor([[1, 5, 9]]))
    padded = model(torch.tensor([[1, 5, 9, 0, 0]]))  # <pad> = 0
    assert torch.allclose(short, padded[:, :3], atol=1e-6)


def test_saved_checkpoint_loads_through_the_registry(tmp_path):
    from transformer_viz.text.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(["a dog runs", "a cat sleeps", "the dog sleeps"] * 5, vocab_size=40)
    model = tiny_gpt(vocab_size=len(tokenizer))
    meta = {"name": "tiny GPT",
            "held_out": {"multi30k_val": {"sentences": 3, "loss": 2.0, "perplexity": 7.39}},
            "history": [{"epoch": 1, "step": 3, "train_loss": 3.0, "multi30k_val_loss": 2.0,
                         "multi30k_val_ppl": 7.39}]}
    save_checkpoint(tmp_path / "gpt", model, tokenizer, meta, card=gpt_card)
    assert checkpoint_arch(tmp_path / "gpt") == "gpt"
    ckpt = load_checkpoint(tmp_path / "gpt")
    tokens = torch.tensor([[1, 5, 6, 7]])
    assert isinstance(ckpt.model, GPT)
    # weights stored as float32 here
    assert torch.allclose(ckpt.model(tokens), model(tokens), atol=1e-2)
    assert "| multi30k_val | 3 | 2.000 | 7.39 |" in (tmp_path / "gpt" / "README.md").read_text()


# --- GPT-2 ----------------------------------------------------------------------------------------

def tiny_gpt2(tmp_path=None):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=60, n_positions=32, n_embd=24, n_layer=3, n_head=4,
                        bos_token_id=59, eos_token_id=59, resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, initializer_range=0.3)
    torch.manual_seed(3)
    hf = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # LayerNorms away from their initial 1 and 0, so that a mix-up would show
        for name, p in hf.named_parameters():
            if "ln_" in name:
                p.add_(torch.randn_like(p) * 0.2)
    return hf, config


def test_gpt2_weights_give_gpt2s_logits():
    hf, config = tiny_gpt2()
    cfg = gpt2_model_config(config.to_dict())
    assert ((cfg.d_model, cfg.N, cfg.h, cfg.d_ff, cfg.activation, cfg.eos_id)
            == (24, 3, 4, 96, "gelu_tanh", 59))
    model = GPT(cfg).eval()
    model.load_state_dict(gpt2_state_dict(hf.state_dict(), cfg), strict=True)
    tokens = torch.tensor([[59, 3, 17, 42, 8, 8, 30, 11]])
    with torch.no_grad():
        theirs = hf(tokens).logits
    assert torch.allclose(model(tokens), theirs, atol=1e-5, rtol=1e-4)


def test_gpt2_directory_loads_with_its_tokenizer(tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf, config = tiny_gpt2()
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=59, special_tokens=[], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet()[:40])
    backend.train_from_iterator(["where there is a will"] * 3, trainer)
    while backend.get_vocab_size() < 59:
        backend.add_tokens([f"x{backend.get_vocab_size()}"])
    backend.add_special_tokens(["<|endoftext|>"])
    assert backend.get_vocab_size() == 60 and backend.token_to_id("<|endoftext|>") == 59
    hf.save_pretrained(tmp_path / "gpt2")
    backend.save(str(tmp_path / "gpt2" / "tokenizer.json"))
    assert checkpoint_arch(tmp_path / "gpt2") == "gpt"
    ckpt = load_checkpoint(tmp_path / "gpt2")
    tokens = torch.tensor([[59, 1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.allclose(ckpt.model(tokens), hf(tokens).logits, atol=1e-5, rtol=1e-4)
    assert ckpt.tokenizer.eos_token_id == 59


def test_gpt2_variants_we_do_not_implement_are_refused(tmp_path):
    _, config = tiny_gpt2()
    data = {**config.to_dict(), "scale_attn_by_inverse_layer_idx": True}
    with pytest.raises(ValueError, match="not implemented"):
        gpt2_model_config(data)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text(json.dumps(data))
    (tmp_path / "bad" / "model.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match="not implemented"):
        load_checkpoint(tmp_path / "bad")


@pytest.mark.parametrize("pre_ln", [True, False])
def test_extending_with_cached_keys_and_values_equals_the_whole_forward_pass(pre_ln):
    model = tiny_gpt(pre_ln=pre_ln)
    tokens = torch.tensor([[1, 5, 9, 7, 12, 30, 8, 3]])
    full = model(tokens)  # (1, T, V)
    caches = [{} for _ in range(model.cfg.N)]
    with torch.no_grad():
        # the prompt at once
        assert torch.allclose(model.extend(tokens[:, :4], caches), full[:, 3], atol=1e-5)
        for t in range(4, tokens.size(1)):
            assert torch.allclose(model.extend(tokens[:, t:t + 1], caches), full[:, t], atol=1e-5)
        assert caches[0]["k"].shape == (1, model.cfg.h, 8, model.cfg.d_k)
