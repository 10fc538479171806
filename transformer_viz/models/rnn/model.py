"""Before the Transformer: a GRU encoder–decoder (Cho et al., 2014) and the same with additive
attention (Bahdanau et al., 2015), written as plainly as ``transformer/model.py``.

The encoder reads the source one token at a time: H_s = GRU(E[x_s], H_{s−1}). Without attention the
decoder sees the source only through the last real state, the context c = H_S: its input at every
step is [E[y_{t−1}]; c], and it starts from s_0 = tanh(W_init c). With attention the decoder's input
is [E[y_{t−1}]; c_t], where c_t = Σ_s α_ts H_s and α_t = softmax_s(vᵀ tanh(W_q s_{t−1} + W_k H_s))
over the real (non-pad) source positions. Both predict from [s_t; c_t; E[y_{t−1}]]
(the "deep output"), projected to d_emb and multiplied by the embedding matrix, which source, target
and output share (the joint vocabulary of the Transformer's tokenizer).

Each model offers what the rest of the package uses from a Transformer: ``forward(src, tgt, trace)``
for teacher forcing and tracing, ``start_state`` / ``decode_step`` for greedy and beam search
(:mod:`transformer_viz.generation.decoding` runs unchanged), ``num_parameters`` and ``cfg``
(pad/bos/eos IDs, max_len). The encoder is unidirectional and one layer deep
(Bahdanau et al. used a bidirectional one), so that "the context is the encoder's last state" means
exactly one vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from transformer_viz.core.trace import Trace
from transformer_viz.models.rnn.config import RNNConfig


@dataclass
class RNNState:
    """What incremental decoding carries from one step to the next."""

    # (B, S, d_hidden) encoder states H_1 … H_S (zero beyond each sentence's end)
    states: torch.Tensor
    keys: torch.Tensor | None  # (B, S, d_hidden) W_k H_s, computed once (attention model only)
    src_mask: torch.Tensor  # (B, S) True at real source positions
    context: torch.Tensor  # (B, d_hidden) the last real encoder state
    hidden: torch.Tensor  # (B, d_hidden) the decoder state s_{t−1}
    length: int = 0  # target positions already processed

    def select(self, index: torch.Tensor) -> "RNNState":
        """Reorder/duplicate the batch rows (beam search)."""
        return RNNState(self.states.index_select(0, index),
                        None if self.keys is None else self.keys.index_select(0, index),
                        self.src_mask.index_select(0, index), self.context.index_select(0, index),
                        self.hidden.index_select(0, index), self.length)

    def select_beams(self, index: torch.Tensor) -> "RNNState":
        """Reorder rows among the beams of the same source: only the decoder state differs between
        them."""
        return RNNState(self.states, self.keys, self.src_mask, self.context,
                        self.hidden.index_select(0, index), self.length)


class AdditiveAttention(nn.Module):
    """score(s_{t−1}, H_s) = vᵀ tanh(W_q s_{t−1} + W_k H_s); α_t = softmax over the real source
    positions."""

    def __init__(self, d_hidden: int) -> None:
        super().__init__()
        self.w_q = nn.Linear(d_hidden, d_hidden, bias=False)
        self.w_k = nn.Linear(d_hidden, d_hidden)
        self.v = nn.Linear(d_hidden, 1, bias=False)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, states: torch.Tensor,
                src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """query s_{t−1} (B, d), keys W_k H (B, S, d), states H (B, S, d), mask (B, S) -> c_t
        (B, d), α_t (B, S)."""
        scores = self.v(torch.tanh(self.w_q(query)[:, None, :] + keys)).squeeze(-1)  # (B, S)
        # pads: exactly 0
        weights = torch.softmax(scores.masked_fill(~src_mask, float("-inf")), dim=-1)
        context = (weights[:, :, None] * states).sum(dim=1)  # (B, d)
        return context, weights


class RNNSeq2Seq(nn.Module):
    """GRU encoder–decoder, with or without additive attention. ``forward(src, tgt)`` -> logits
    (B, T, V)."""

    def __init__(self, cfg: RNNConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_emb)
        nn.init.normal_(self.embed.weight, std=cfg.d_emb**-0.5)
        self.encoder = nn.GRU(cfg.d_emb, cfg.d_hidden, batch_first=True)
        self.init_hidden = nn.Linear(cfg.d_hidden, cfg.d_hidden)  # s_0 = tanh(W_init c)
        self.attn = AdditiveAttention(cfg.d_hidden) if cfg.attention else None
        if cfg.attention:
            # one step at a time
            self.decoder_cell = nn.GRUCell(cfg.d_emb + cfg.d_hidden, cfg.d_hidden)
        else:
            # input known ahead
            self.decoder = nn.GRU(cfg.d_emb + cfg.d_hidden, cfg.d_hidden, batch_first=True)
        # [s_t; c_t; E[y_{t−1}]] -> d_emb
        self.out_proj = nn.Linear(2 * cfg.d_hidden + cfg.d_emb, cfg.d_emb)
        self.dropout = nn.Dropout(cfg.dropout)

    # --- the pieces, in the order data flows through them ---------------------------------------

    def encode(self, src: torch.Tensor,
               trace: Trace | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """src (B, S) -> encoder states H (B, S, d_hidden), the source mask (B, S), the context
        (B, d_hidden).

        Padding comes after each sentence's end, so a plain GRU over the padded batch computes every
        real state exactly; the states past the end are set to 0 and masked out, and the context is
        the state at each sentence's last real position (its </s>).
        """
        if src.size(1) > self.cfg.max_len:
            raise ValueError(f"sequence of {src.size(1)} positions exceeds the model's maximum of "
                             f"{self.cfg.max_len}")
        src_mask = src != self.cfg.pad_id  # (B, S)
        x = self.dropout(self.embed(src))  # (B, S, d_emb)
        states, _ = self.encoder(x)  # (B, S, d_hidden)
        states = states * src_mask[:, :, None]  # (B, S, d_hidden), 0 past the end
        last = (src_mask.sum(dim=1) - 1).clamp(min=0)  # (B,) index of the last real position
        context = states[torch.arange(src.size(0), device=src.device), last]  # (B, d_hidden)
        if trace is not None:
            trace.record("src.token_ids", src)
            trace.record("rnn.encoder.hidden", states)
            trace.record("rnn.context", context)
        return states, src_mask, context

    def start_state(self, src: torch.Tensor) -> RNNState:
        states, src_mask, context = self.encode(src)
        return self._state(states, src_mask, context)

    def _state(self, states: torch.Tensor, src_mask: torch.Tensor,
               context: torch.Tensor) -> RNNState:
        keys = self.attn.w_k(states) if self.attn is not None else None  # (B, S, d_hidden)
        return RNNState(states, keys, src_mask, context, torch.tanh(self.init_hidden(context)))

    def decode(self, tgt: torch.Tensor, states: torch.Tensor, src_mask: torch.Tensor,
               trace: Trace | None = None) -> torch.Tensor:
        """Teacher forcing: tgt (B, T) (<s> + target) and the encoder states (B, S, d_hidden) ->
        logits (B, T, V).

        The context is taken from ``states`` at each sentence's last real position: without
        attention no other encoder state reaches the decoder (tests perturb them to check).
        """
        last = (src_mask.sum(dim=1) - 1).clamp(min=0)  # (B,)
        context = states[torch.arange(states.size(0), device=states.device), last]  # (B, d_hidden)
        state = self._state(states, src_mask, context)
        emb = self.dropout(self.embed(tgt))  # (B, T, d_emb)
        if self.attn is None:
            # (B, T, d_hidden): the same c at every step
            ctx = context[:, None, :].expand(-1, tgt.size(1), -1)
            # (B, T, d_hidden)
            hidden, _ = self.decoder(torch.cat([emb, ctx], dim=-1), state.hidden[None])
            weights = None
        else:
            hiddens, contexts, alphas = [], [], []
            for t in range(tgt.size(1)):
                c_t, alpha = self.attn(state.hidden, state.keys, states, src_mask)  # (B, d), (B, S)
                # (B, d)
                state.hidden = self.decoder_cell(torch.cat([emb[:, t], c_t], dim=-1), state.hidden)
                hiddens.append(state.hidden)
                contexts.append(c_t)
                alphas.append(alpha)
            hidden = torch.stack(hiddens, dim=1)  # (B, T, d_hidden)
            ctx = torch.stack(contexts, dim=1)  # (B, T, d_hidden)
            weights = torch.stack(alphas, dim=1)  # (B, T, S)
        if trace is not None:
            trace.record("tgt.token_ids", tgt)
            trace.record("rnn.decoder.hidden", hidden)
            if weights is not None:
                trace.record("rnn.attn.weights", weights)
                trace.record("rnn.attn.context", ctx)
        return self.project(hidden, ctx, emb, trace)

    def project(self, hidden: torch.Tensor, ctx: torch.Tensor, emb: torch.Tensor,
                trace: Trace | None = None) -> torch.Tensor:
        """[s_t; c_t; E[y_{t−1}]] (…, 2·d_hidden + d_emb) -> d_emb -> logits (…, V), through the
        shared embedding."""
        out = self.dropout(self.out_proj(torch.cat([hidden, ctx, emb], dim=-1)))  # (…, d_emb)
        logits = out @ self.embed.weight.t()  # (…, V)
        if trace is not None:
            trace.record("rnn.output", out)
            trace.record("logits", logits)
            trace.record("probs", torch.softmax(logits.float(), dim=-1))
        return logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, trace: Trace | None = None,
                causal: bool = True) -> torch.Tensor:
        """src (B, S), tgt (B, T) token IDs -> logits (B, T, V). Teacher forcing: tgt starts with
        <s>. ``causal`` is accepted for the Transformer's signature; a recurrent decoder never sees
        the future."""
        states, src_mask, _ = self.encode(src, trace)
        return self.decode(tgt, states, src_mask, trace)

    # --- incremental decoding: one new target position per call -----------------------------------

    def decode_step(self, last_tokens: torch.Tensor, state: RNNState) -> torch.Tensor:
        """last_tokens (B,) -> logits (B, V) for the next position; updates ``state.hidden``."""
        emb = self.embed(last_tokens)  # (B, d_emb)
        if self.attn is None:
            ctx = state.context  # (B, d_hidden)
            # (B, 1, d_hidden)
            out, _ = self.decoder(torch.cat([emb, ctx], dim=-1)[:, None], state.hidden[None])
            state.hidden = out[:, 0]  # (B, d_hidden)
        else:
            # (B, d_hidden)
            ctx, _ = self.attn(state.hidden, state.keys, state.states, state.src_mask)
            # (B, d_hidden)
            state.hidden = self.decoder_cell(torch.cat([emb, ctx], dim=-1), state.hidden)
        state.length += 1
        return self.project(state.hidden, ctx, emb)  # (B, V)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def sequential_steps(self, source_length: int, target_length: int) -> int:
        """Steps that must run one after another: S encoder steps, then T decoder steps."""
        return source_length + target_length
