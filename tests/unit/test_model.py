"""The model against the paper: shapes, masks, causality, padding, PE formula, fast vs traced,
references."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_viz.core.trace import Trace
from transformer_viz.generation.decoding import beam_search, greedy_decode
from transformer_viz.models.trace_docs import names_markdown
from transformer_viz.models.transformer.config import ModelConfig, preset
from transformer_viz.models.transformer.model import Transformer, sinusoidal_positional_encoding
from transformer_viz.models.transformer.names import trace_names, transformerlens_hook


def _shape(template: str, dims: dict) -> tuple[int, ...] | None:
    if template.startswith("broadcastable"):
        return None
    return tuple(dims[p.strip()] for p in template.strip("()").split(",") if p.strip())


@pytest.fixture(scope="module")
def base_trace():
    torch.manual_seed(0)
    cfg = preset("base", dropout=0.0)
    model = Transformer(cfg).eval()
    S, T = 9, 7
    src = torch.randint(4, cfg.vocab_size, (1, S))
    tgt = torch.randint(4, cfg.vocab_size, (1, T))
    trace = Trace()
    with torch.no_grad():
        model(src, tgt, trace=trace)
    return cfg, trace, S, T


def test_every_documented_name_has_documented_shape_for_base(base_trace):
    cfg, trace, S, T = base_trace
    dims = {"B": 1, "S": S, "T": T, "h": cfg.h, "d_k": cfg.d_k, "d_model": cfg.d_model,
            "d_ff": cfg.d_ff, "V": cfg.vocab_size}
    documented = trace_names(cfg.N)
    assert [name for name, _, _ in documented] == trace.names()
    for name, template, _ in documented:
        expected = _shape(template, dims)
        if expected is None:  # masks: must broadcast to the scores
            scores = trace[name.replace(".mask", ".scores")]
            assert torch.broadcast_shapes(trace[name].shape, scores.shape) == scores.shape, name
        else:
            assert tuple(trace[name].shape) == expected, name
    assert tuple(trace["encoder.0.self_attn.q"].shape) == (1, 8, S, 64)
    assert tuple(trace["encoder.5.out"].shape) == (1, S, 512)
    assert tuple(trace["encoder.out"].shape) == (1, S, 512)
    assert tuple(trace["decoder.5.cross_attn.weights"].shape) == (1, 8, T, S)
    assert tuple(trace["probs"].shape) == (1, T, cfg.vocab_size)


def test_the_documentation_is_written_from_trace_names():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "trace_names.md").read_text(
        encoding="utf-8")
    assert doc == names_markdown(), ("regenerate it: python -m transformer_viz.models.trace_docs > "
                                     "docs/trace_names.md")
    for name, shape, _ in trace_names(1):
        assert f"| `{name.replace('.0.', '.{i}.')}` | {shape} |" in doc, name


def test_transformerlens_names_for_the_attention_of_every_kind():
    assert transformerlens_hook("encoder.{i}.self_attn.weights") == "encoder.{i}.attn.hook_pattern"
    assert transformerlens_hook("decoder.{i}.cross_attn.heads") == "decoder.{i}.cross_attn.hook_z"
    assert (transformerlens_hook("decoder.{i}.self_attn.masked_scores")
            == "decoder.{i}.attn.hook_attn_scores")
    assert transformerlens_hook("decoder.{i}.cross_attn.out") == "decoder.{i}.hook_cross_attn_out"
    assert transformerlens_hook("decoder.{i}.norm3.out") == "decoder.{i}.ln3.hook_normalized"
    # TransformerLens hooks the scores after the mask
    assert transformerlens_hook("encoder.{i}.self_attn.scores") == ""
    assert transformerlens_hook("logits") == ""


def test_softmax_rows_sum_to_one_and_masked_weights_are_exactly_zero(tiny_model):
    torch.manual_seed(1)
    src = torch.tensor([[5, 6, 7, 8, 2, 0, 0]])
    tgt = torch.tensor([[1, 9, 10, 11, 0]])
    trace = Trace()
    with torch.no_grad():
        tiny_model(src, tgt, trace=trace)
    for name in trace.names():
        if name.endswith(".weights"):
            w = trace[name]
            mask = trace[name.replace(".weights", ".mask")].expand_as(w)
            assert torch.allclose(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-6), name
            assert (w[~mask] == 0).all(), name
            masked = trace[name.replace(".weights", ".masked_scores")]
            assert torch.isneginf(masked[~mask]).all(), name
    # The decoder's self-attention mask is causal and padding-aware.
    m = trace["decoder.0.self_attn.mask"][0, 0]
    assert m.tolist() == [[True, False, False, False, False], [True, True, False, False, False],
                          [True, True, True, False, False], [True, True, True, True, False],
                          [True, True, True, True, False]]
    assert trace["encoder.0.self_attn.mask"][0, 0, 0].tolist() == [True] * 5 + [False] * 2


def random_batch(model, seed: int, B: int, S: int, T: int):
    """V and random source (B, S) and target (B, T) IDs of ordinary tokens (none below 4, the
    special ones)."""
    torch.manual_seed(seed)
    V = model.cfg.vocab_size
    return V, torch.randint(4, V, (B, S)), torch.randint(4, V, (B, T))


def test_causality_changing_later_target_tokens_never_changes_earlier_outputs(tiny_model):
    V, src, tgt = random_batch(tiny_model, 2, 2, 6, 8)
    with torch.no_grad():
        base = tiny_model(src, tgt)
        for t in range(7):
            changed = tgt.clone()
            changed[:, t + 1:] = torch.randint(4, V, changed[:, t + 1:].shape)
            out = tiny_model(src, changed)
            assert torch.allclose(out[:, : t + 1], base[:, : t + 1], atol=1e-5), t
            if not torch.equal(changed[:, t + 1:], tgt[:, t + 1:]):
                assert not torch.allclose(out[:, t + 1:], base[:, t + 1:], atol=1e-5)


def test_padding_never_changes_outputs_for_real_tokens(tiny_model):
    _, src, tgt = random_batch(tiny_model, 3, 1, 5, 4)
    with torch.no_grad():
        base = tiny_model(src, tgt)
        padded = tiny_model(torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1),
                            torch.cat([tgt, torch.zeros(1, 2, dtype=torch.long)], 1))
        for trace_mode in (None, Trace()):
            padded_traced = tiny_model(torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1),
                                       tgt, trace=trace_mode)
            assert torch.allclose(padded_traced, base, atol=1e-5)
    assert torch.allclose(padded[:, :4], base, atol=1e-5)


def test_positional_encoding_equals_closed_form():
    d_model, base = 16, 10000.0
    pe = sinusoidal_positional_encoding(50, d_model, base)
    for pos in (0, 1, 7, 49):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    other = sinusoidal_positional_encoding(50, d_model, 100.0)
    assert not torch.allclose(pe, other)
    cfg = preset("tiny", vocab_size=50, pe_base=100.0)
    assert torch.allclose(Transformer(cfg).pe,
                          sinusoidal_positional_encoding(cfg.max_len, cfg.d_model, 100.0))


def test_embeddings_are_scaled_by_sqrt_d_model(tiny_model):
    trace = Trace()
    src = torch.tensor([[5, 6, 2]])
    with torch.no_grad():
        tiny_model(src, torch.tensor([[1, 7]]), trace=trace)
    E = tiny_model.src_embed.weight
    assert torch.allclose(trace["src.embedding"][0],
                          E[src[0]] * math.sqrt(tiny_model.cfg.d_model), atol=1e-6)
    assert torch.allclose(trace["src.input"],
                          trace["src.embedding"] + trace["src.positional"], atol=1e-6)


@pytest.mark.parametrize("pre_ln", [False, True])
def test_traced_and_fused_paths_give_the_same_logits(pre_ln):
    torch.manual_seed(4)
    model = Transformer(preset("tiny", vocab_size=60, pre_ln=pre_ln)).eval()
    src = torch.randint(4, 60, (3, 9))
    src[1, 6:] = 0
    tgt = torch.randint(4, 60, (3, 7))
    tgt[2, 5:] = 0
    with torch.no_grad():
        fast = model(src, tgt)
        traced = model(src, tgt, trace=Trace())
    assert torch.allclose(fast, traced, atol=1e-5)


def test_recorded_tensors_never_share_memory_with_the_model(tiny_model):
    # Traces are kept in a cache shared by every session: none may alias a parameter or a buffer
    # (the positional-encoding table is recorded through a slice of one), or a later edit would
    # leak.
    trace = Trace()
    with torch.no_grad():
        tiny_model(torch.tensor([[5, 6, 7, 2]]), torch.tensor([[1, 8, 9]]), trace=trace)
    model_storage = {t.untyped_storage().data_ptr()
                     for t in [*tiny_model.parameters(), *tiny_model.buffers()]}
    shared = [name for name, t in trace.items() if t.untyped_storage().data_ptr() in model_storage]
    assert shared == []
    assert torch.equal(trace["src.positional"], tiny_model.pe[:4])


def test_bfloat16_model_stays_close_and_its_trace_reads_as_float32():
    torch.manual_seed(6)
    model = Transformer(preset("tiny", vocab_size=60)).eval()
    low = Transformer(preset("tiny", vocab_size=60)).eval()
    low.load_state_dict(model.state_dict())
    low.to(torch.bfloat16)
    src = torch.randint(4, 60, (2, 9))
    src[1, 6:] = 0
    tgt = torch.randint(4, 60, (2, 7))
    trace = Trace()
    with torch.no_grad():
        expected = model(src, tgt)
        fused = low(src, tgt)
        traced = low(src, tgt, trace=trace)
    assert fused.dtype == torch.bfloat16
    scale = expected.abs().max().item()
    # bfloat16 keeps 8 bits of mantissa: a few hundredths of the logits' range, not 1e-5.
    torch.testing.assert_close(fused.float(), expected, rtol=0, atol=0.05 * scale)
    torch.testing.assert_close(traced.float(), fused.float(), rtol=0, atol=0.05 * scale)
    for name in trace.names():
        if name.endswith(".weights"):
            w = trace[name]
            assert w.dtype == torch.float32, name
            assert (w[~trace[name.replace(".weights", ".mask")].expand_as(w)] == 0).all(), name
            assert torch.allclose(w.sum(-1)[0], torch.ones(w.shape[1:-1]), atol=2e-2), name


def test_incremental_decoding_equals_full_recompute(tiny_model):
    torch.manual_seed(5)
    V = tiny_model.cfg.vocab_size
    src = torch.randint(4, V, (2, 6))
    src[1, 4:] = 0
    result = greedy_decode(tiny_model, src, max_len=8)
    # Greedy again without any cache: a full forward over the prefix at every step.
    tokens = torch.full((2, 1), tiny_model.cfg.bos_id)
    with torch.no_grad():
        for _ in range(8):
            nxt = tiny_model(src, tokens)[:, -1].argmax(-1)
            tokens = torch.cat([tokens, nxt[:, None]], 1)
        for b in range(2):
            recomputed = tokens[b, 1:].tolist()
            expected = recomputed[: recomputed.index(2)] if 2 in recomputed else recomputed
            assert result.tokens[b] == expected
        state = tiny_model.start_state(src)
        for t in range(tokens.size(1)):
            step_logits = tiny_model.decode_step(tokens[:, t], state)
            full = tiny_model(src, tokens[:, : t + 1])[:, -1]
            assert torch.allclose(step_logits, full, atol=1e-5)


def test_beam_search_width_one_equals_greedy_and_records_parents(tiny_model):
    torch.manual_seed(6)
    src = torch.randint(4, tiny_model.cfg.vocab_size, (3, 5))
    greedy = greedy_decode(tiny_model, src, max_len=6)
    beam1 = beam_search(tiny_model, src, beam_size=1, max_len=6, alpha=0.0)
    assert beam1.tokens == greedy.tokens
    beam = beam_search(tiny_model, src, beam_size=4, max_len=6, alpha=0.0)
    assert len(beam.steps) >= 1 and len(beam.steps[0].parents[0]) == 4
    assert all(0 <= p < 4 for step in beam.steps for row in step.parents for p in row)
    # With alpha = 0 the chosen hypothesis is at least as probable as the greedy one.
    for b in range(3):
        assert beam.scores[b] >= greedy.scores[b] - 1e-4


def _reference_attention(x_q, x_kv, mha, mask):
    """Attention written out separately from the model code: per head, with explicit loops."""
    d_model = x_q.size(-1)
    h, d_k = mha.h, d_model // mha.h
    Q, K, V = mha.w_q(x_q), mha.w_k(x_kv), mha.w_v(x_kv)
    heads = []
    for i in range(h):
        q, k, v = (M[..., i * d_k:(i + 1) * d_k] for M in (Q, K, V))
        s = q @ k.transpose(-1, -2) / math.sqrt(d_k)
        s = s.masked_fill(~mask[:, 0], float("-inf"))  # mask (B, 1, 1, S) -> (B, 1, S)
        heads.append(torch.softmax(s, -1) @ v)
    return mha.w_o(torch.cat(heads, -1))


def test_attention_agrees_with_torch_multihead_attention_and_a_loop_reference():
    torch.manual_seed(7)
    d_model, h = 32, 4
    from transformer_viz.models.transformer.model import MultiHeadAttention

    ours = MultiHeadAttention(d_model, h).eval()
    ref = torch.nn.MultiheadAttention(d_model, h, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        ref.out_proj.bias.copy_(ours.w_o.bias)
    x = torch.randn(2, 6, d_model)
    mem = torch.randn(2, 8, d_model)
    key_ok = torch.ones(2, 8, dtype=torch.bool)
    key_ok[1, 5:] = False
    mask = key_ok[:, None, None, :]
    with torch.no_grad():
        expected, _ = ref(x, mem, mem, key_padding_mask=~key_ok)
        for trace in (None, Trace()):
            assert torch.allclose(ours(x, mem, mask, trace, "t"), expected, atol=1e-5)
        assert torch.allclose(_reference_attention(x, mem, ours, mask), expected, atol=1e-5)
        causal = torch.ones(6, 6, dtype=torch.bool).tril()
        expected_causal, _ = ref(x, x, x, attn_mask=~causal)
        assert torch.allclose(ours(x, x, causal[None, None]), expected_causal, atol=1e-5)


def test_config_rejects_bad_sizes_and_round_trips(tmp_path):
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(d_model=30, h=4)
    cfg = preset("small", vocab_size=123)
    cfg.save(tmp_path / "c.json")
    assert ModelConfig.load(tmp_path / "c.json") == cfg
    with pytest.raises(ValueError, match="unknown config preset"):
        preset("huge")
