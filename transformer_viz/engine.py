"""One call that the CLI and the app share: a sentence in, the translation and every traced tensor out.

Decoding (greedy or beam) produces the translation and its per-step record; one teacher-forced,
traced forward over (source, <s> + generated target) then gives every decoder tensor at full length.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import torch

from .checkpoint import Checkpoint
from .config import ModelConfig, preset
from .decoding import DecodeResult, translate_ids
from .model import Transformer
from .tokenizer import BOS, EOS, decode, encode_source
from .trace import Trace


@dataclass
class SentenceRun:
    source_text: str  # the cleaned text that was run
    src_ids: list[int]  # encoder input, ending in </s>
    src_tokens: list[str]
    tgt_ids: list[int]  # decoder input: <s> + generated tokens (the T axis of every decoder tensor)
    tgt_tokens: list[str]
    translation: str
    decoding: DecodeResult
    trace: Trace | None
    config: ModelConfig
    messages: list[str] = field(default_factory=list)  # what the user should be told (cleaning, cuts, <unk>)

    @property
    def predicted_ids(self) -> list[int]:
        """What each decoder position predicts: the generated tokens followed by </s>."""
        return self.tgt_ids[1:] + [EOS]


@torch.no_grad()
def traced_forward(model: Transformer, src_ids: list[int], tgt_ids: list[int], causal: bool = True) -> Trace:
    """Teacher-forced forward of one sentence pair, recording every intermediate tensor."""
    device = next(model.parameters()).device
    trace = Trace()
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)
    model(src, tgt, trace=trace, causal=causal)
    return trace


@torch.no_grad()
def run_sentence(ckpt: Checkpoint, text: str, beam_size: int = 1, trace: bool = True, causal: bool = True,
                 top_k: int = 10, max_output: int | None = None) -> SentenceRun:
    """Clean and tokenize ``text``, translate it, and trace the forward pass over the translation.

    Raises :class:`~transformer_viz.tokenizer.InputError` for text that cannot be run (empty).
    """
    model, tokenizer, cfg = ckpt.model, ckpt.tokenizer, ckpt.config
    encoded = encode_source(tokenizer, text, max_tokens=cfg.max_len)
    device = next(model.parameters()).device
    src = torch.tensor([encoded.ids], device=device)  # (1, S)
    max_output = max_output or min(cfg.max_len - 1, int(len(encoded.ids) * 1.5) + 10)
    kwargs = {"top_k": top_k} if beam_size <= 1 else {}
    result = translate_ids(model, src, beam_size=beam_size, max_len=max_output, **kwargs)
    generated = result.tokens[0][: cfg.max_len - 1]  # <s> + generated must fit the positions
    tgt_ids = [BOS] + generated
    run_trace = traced_forward(model, encoded.ids, tgt_ids, causal) if trace else None
    return SentenceRun(
        source_text=encoded.clean.text,
        src_ids=encoded.ids,
        src_tokens=encoded.tokens,
        tgt_ids=tgt_ids,
        tgt_tokens=tokenizer.convert_ids_to_tokens(tgt_ids),
        translation=decode(tokenizer, generated),
        decoding=result,
        trace=run_trace,
        config=cfg,
        messages=encoded.messages(),
    )


EXAMPLE_SENTENCE = "Ein Mann fährt mit dem Fahrrad durch die Stadt."


def random_model_run(config_name: str = "base", sentence: str | None = None, seed: int = 0) -> SentenceRun:
    """Trace a randomly initialised model of a preset config (no trained weights needed).

    Words are mapped to IDs by a hash (there is no trained vocabulary), and the 'translation' is as
    long as the source: only the shapes mean anything here.
    """
    torch.manual_seed(seed)
    cfg = preset(config_name)
    model = Transformer(cfg).eval()
    words = (sentence or EXAMPLE_SENTENCE).split()[: cfg.max_len - 1] or ["."]
    src_ids = [4 + zlib.crc32(w.encode()) % (cfg.vocab_size - 4) for w in words] + [EOS]
    tgt_ids = [BOS] + [4 + (i * 7919) % (cfg.vocab_size - 4) for i in range(len(words))]
    trace = traced_forward(model, src_ids, tgt_ids)
    tokens = words + ["</s>"]
    empty = DecodeResult([tgt_ids[1:]], [0.0], [], "none")
    return SentenceRun(" ".join(words), src_ids, tokens, tgt_ids, ["<s>"] + [f"y{i}" for i in range(len(words))],
                       "", empty, trace, cfg, ["random weights: only the shapes are meaningful"])
