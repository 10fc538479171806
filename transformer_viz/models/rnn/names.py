"""The documented trace names of the recurrent encoder–decoders."""

from __future__ import annotations


def trace_names(attention: bool = True) -> list[tuple[str, str, str]]:
    """Every name an RNN's traced forward records, with its shape and formula."""
    rows = [
        ("src.token_ids", "(B, S)", "source token IDs, padded with <pad>"),
        ("rnn.encoder.hidden", "(B, S, d_hidden)",
         "H_s = GRU(E[x_s], H_{s−1}), H_0 = 0; 0 past each sentence's end"),
        ("rnn.context", "(B, d_hidden)",
         "c = H_S, the state at the last real source position (</s>)"),
        ("tgt.token_ids", "(B, T)", "decoder input: <s> + target"),
        ("rnn.decoder.hidden", "(B, T, d_hidden)",
         "s_t = GRU([E[y_{t−1}]; c_t], s_{t−1}), s_0 = tanh(W_init c); without attention c_t = c"),
    ]
    if attention:
        rows += [
            ("rnn.attn.weights", "(B, T, S)",
             "α_ts = softmax_s(vᵀ tanh(W_q s_{t−1} + W_k H_s)) over real source positions "
             "(pads exactly 0)"),
            ("rnn.attn.context", "(B, T, d_hidden)", "c_t = Σ_s α_ts H_s"),
        ]
    rows += [
        ("rnn.output", "(B, T, d_emb)", "W_o [s_t; c_t; E[y_{t−1}]] + b_o (dropout in training)"),
        ("logits", "(B, T, V)", "rnn.output Eᵀ (output tied to the shared embedding)"),
        ("probs", "(B, T, V)", "softmax(logits) over the vocabulary"),
    ]
    return rows
