"""One call that the CLI and the app share: a sentence in, the translation and every traced tensor
out.

Decoding (greedy or beam) produces the translation and its per-step record; one teacher-forced,
traced forward over (source, <s> + generated target) then gives every decoder tensor at full length.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from transformer_viz.checkpoints import Checkpoint
from transformer_viz.core.trace import Trace
from transformer_viz.generation.completion import Completion, SamplingSettings, complete_text
from transformer_viz.generation.decoding import DecodeResult, generate, max_output_length
from transformer_viz.models.transformer.config import ModelConfig, preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.tokenizer import BOS, EOS, decode, encode_source


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
    # what the user should be told (cleaning, cuts, <unk>)
    messages: list[str] = field(default_factory=list)

    @property
    def predicted_ids(self) -> list[int]:
        """What each decoder position predicts: the generated tokens followed by </s>."""
        return self.tgt_ids[1:] + [self.config.eos_id]


@torch.no_grad()
def traced_forward(model: Transformer, src_ids: list[int], tgt_ids: list[int],
                   causal: bool = True) -> Trace:
    """Teacher-forced forward of one sentence pair, recording every intermediate tensor."""
    device = next(model.parameters()).device
    trace = Trace()
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)
    model(src, tgt, trace=trace, causal=causal)
    return trace


@torch.no_grad()
def run_sentence(ckpt: Checkpoint, text: str, beam_size: int = 1, trace: bool = True,
                 causal: bool = True, top_k: int = 10, max_output: int | None = None,
                 alpha: float | None = None, max_loop_repeats: int | None = None,
                 forced_prefix: list[int] | None = None) -> SentenceRun:
    """Clean and tokenize ``text``, translate it, and trace the forward pass over the translation.

    ``alpha`` and ``max_loop_repeats`` (the repetition guard) default to the checkpoint's decoding
    defaults for beam search; greedy decoding, which the pages show step by step, keeps the model's
    own choices unless a guard is asked for. ``forced_prefix`` (greedy only): the translation starts
    with these tokens, whatever the model prefers, and greedy decoding continues from them.

    Raises :class:`~transformer_viz.text.tokenizer.InputError` for text that cannot be run (empty).
    """
    model, tokenizer, cfg = ckpt.model, ckpt.tokenizer, ckpt.config
    encoded = encode_source(tokenizer, text, max_tokens=cfg.max_len)
    device = next(model.parameters()).device
    src = torch.tensor([encoded.ids], device=device)  # (1, S)
    max_output = max_output or max_output_length(cfg, len(encoded.ids))
    # Beam search decodes as the checkpoint's scores were measured, unless told otherwise; greedy
    # decoding, which the pages show step by step, keeps the model's own choices unless a guard is
    # asked for.
    repeats = (max_loop_repeats or 0) if beam_size <= 1 else max_loop_repeats
    config = ckpt.generation.override(num_beams=max(beam_size, 1), length_penalty=alpha,
                                      max_loop_repeats=repeats)
    result = generate(model, src, config, max_len=max_output, top_k=top_k,
                      forced_prefix=forced_prefix if beam_size <= 1 else None)
    generated = result.tokens[0][: cfg.max_len - 1]  # <s> + generated must fit the positions
    tgt_ids = [cfg.bos_id] + generated  # the decoder's start token (<pad> for a Marian model)
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


def retraced(ckpt: Checkpoint, run: SentenceRun, causal: bool = True) -> SentenceRun:
    """``run`` with its trace taken again over the same source and translation, with or without the
    decoder's causal mask: what ``run_sentence(ckpt, text, causal=causal)`` returns, without
    decoding a second time. Decoding does not depend on the mask (it writes one token at a time, so
    there is no future to hide); only the teacher-forced pass over the translation does."""
    return replace(run, trace=traced_forward(ckpt.model, run.src_ids, run.tgt_ids, causal))


EXAMPLE_SENTENCE = "Ein Mann fährt mit dem Fahrrad durch die Stadt."
# the random model's 'translation' is this much longer than its source: T = S + 2
RANDOM_EXTRA_TARGET = 2


@functools.lru_cache(maxsize=2)
def _random_model(config_name: str, seed: int) -> Transformer:
    # Built once per process: the base config has 48M parameters (V = 8000) and takes seconds to
    # initialise. Shared read-only, like the trained model.
    generator_state = torch.get_rng_state()
    torch.manual_seed(seed)
    model = Transformer(preset(config_name)).eval()
    torch.set_rng_state(generator_state)
    return model


def random_model_run(config_name: str = "base", sentence: str | None = None,
                     seed: int = 0) -> SentenceRun:
    """Trace a randomly initialised model of a preset config (no trained weights needed).

    Words are mapped to IDs by a hash (there is no trained vocabulary), and the 'translation' is
    RANDOM_EXTRA_TARGET tokens longer than the source, so that T ≠ S and a (B, h, T, S)
    cross-attention cannot be mistaken for (B, h, T, T): only the shapes mean anything here.
    """
    model = _random_model(config_name, seed)
    cfg = model.cfg
    words = (sentence or EXAMPLE_SENTENCE).split()[: cfg.max_len - 1 - RANDOM_EXTRA_TARGET] or ["."]
    # S = words + 1
    src_ids = [4 + zlib.crc32(w.encode()) % (cfg.vocab_size - 4) for w in words] + [EOS]
    n_out = len(words) + RANDOM_EXTRA_TARGET
    # T = S + RANDOM_EXTRA_TARGET
    tgt_ids = [BOS] + [4 + (i * 7919) % (cfg.vocab_size - 4) for i in range(n_out)]
    trace = traced_forward(model, src_ids, tgt_ids)
    tokens = words + ["</s>"]
    empty = DecodeResult([tgt_ids[1:]], [0.0], [], "none")
    return SentenceRun(" ".join(words), src_ids, tokens, tgt_ids,
                       ["<s>"] + [f"y{i}" for i in range(n_out)], "", empty, trace, cfg,
                       ["random weights: only the shapes are meaningful"])


def random_model_parameters(config_name: str = "base", seed: int = 0) -> int:
    """The number of parameters of the random model that :func:`random_model_run` traces."""
    return _random_model(config_name, seed).num_parameters()


@torch.no_grad()
def batch_trace(ckpt: Checkpoint,
                sentences: list[str]) -> tuple[Trace, list[list[str]], list[list[str]]]:
    """Translate each sentence greedily on its own, then run ONE traced, teacher-forced forward over
    the padded batch: sources (B, S_max) and targets <s> + translation (B, T_max), filled with
    <pad>.

    Returns the trace and, per row, the unpadded source tokens (ending in </s>) and decoder input
    tokens (starting with <s>). Real positions of row b equal those of ``traced_forward`` on
    sentence b alone: <pad> keys are masked to −∞, so they get weight exactly 0.
    """
    model, tokenizer, cfg = ckpt.model, ckpt.tokenizer, ckpt.config
    device = next(model.parameters()).device
    sources, targets = [], []
    for text in sentences:
        ids = encode_source(tokenizer, text, max_tokens=cfg.max_len).ids
        # The same cap as run_sentence, so that a sentence gets the same translation alone and in
        # the batch.
        greedy = ckpt.generation.override(num_beams=1, max_loop_repeats=0)
        result = generate(model, torch.tensor([ids], device=device), greedy,
                          max_len=max_output_length(cfg, len(ids)), record=False)
        sources.append(ids)
        targets.append([cfg.bos_id] + result.tokens[0][: cfg.max_len - 1])
    S, T = max(map(len, sources)), max(map(len, targets))
    src = torch.full((len(sources), S), cfg.pad_id, dtype=torch.long, device=device)  # (B, S_max)
    tgt = torch.full((len(targets), T), cfg.pad_id, dtype=torch.long, device=device)  # (B, T_max)
    for b, (s_ids, t_ids) in enumerate(zip(sources, targets)):
        src[b, : len(s_ids)] = torch.tensor(s_ids)
        tgt[b, : len(t_ids)] = torch.tensor(t_ids)
    trace = Trace()
    model(src, tgt, trace=trace)
    return (trace, [tokenizer.convert_ids_to_tokens(ids) for ids in sources],
            [tokenizer.convert_ids_to_tokens(ids) for ids in targets])


BATCH_ATOL = 1e-5  # a padded row computes what its sentence computes alone, to float32 rounding


def batch_differences(trace: Trace, src_tokens: list[list[str]], tgt_tokens: list[list[str]],
                      singles: list[SentenceRun], atol: float = BATCH_ATOL) -> list[dict]:
    """How far each row of a padded batch (from :func:`batch_trace`) is from its sentence run alone
    (``singles``): the largest weight any query of any layer and head gives a <pad> key, whether the
    row's target is the single run's, and the largest difference of the encoder's and (for the same
    target) the decoder's outputs over the real positions; ``matches``: all four say that padding
    changed nothing (weight exactly 0 on every <pad> key, the same target, both outputs within
    ``atol``)."""
    cfg = singles[0].config
    pad_keys = trace["src.token_ids"].numpy() == cfg.pad_id  # (B, S_max)
    checks = []
    for b, single in enumerate(singles):
        S_b, T_b = len(src_tokens[b]), len(tgt_tokens[b])
        same_target = single.tgt_ids == trace["tgt.token_ids"][b, :T_b].tolist()
        # weights (B, h, L_q, S): the largest weight of any query and head on each key, then on row
        # b's <pad> keys
        pad_weight = max(float(trace[f"{side}.{n}.{kind}.weights"][b].numpy()
                               .max(axis=(0, 1))[pad_keys[b]].max(initial=0.0))
                         for n in range(cfg.N)
                         for side, kind in (("encoder", "self_attn"), ("decoder", "cross_attn")))
        encoder_diff = float((trace["encoder.out"][b, :S_b]
                              - single.trace["encoder.out"][0]).abs().max())
        # another target: the decoder outputs do not compare
        decoder_diff = (float((trace["decoder.out"][b, :T_b]
                               - single.trace["decoder.out"][0]).abs().max())
                        if same_target else float("nan"))
        checks.append({"pad_weight": pad_weight, "same_target": same_target,
                       "encoder_diff": encoder_diff, "decoder_diff": decoder_diff,
                       "matches": pad_weight == 0.0 and same_target
                       and encoder_diff <= atol and decoder_diff <= atol})
    return checks


@torch.no_grad()
def teacher_forced_logits(ckpt: Checkpoint, text: str,
                          target_text: str) -> tuple[list[int], list[int], torch.Tensor]:
    """Teacher forcing on a given target (e.g. a reference translation), as in training.

    The target is tokenized like a source (ending in </s>): that is the expected output y_1 … y_n
    </s>; the decoder input is the same shifted right, <s> y_1 … y_n. Returns (decoder input IDs,
    expected IDs, logits (T, V)). Raises InputError for an empty text or target.
    """
    model, tokenizer, cfg = ckpt.model, ckpt.tokenizer, ckpt.config
    device = next(model.parameters()).device
    src_ids = encode_source(tokenizer, text, max_tokens=cfg.max_len).ids
    expected = encode_source(tokenizer, target_text, max_tokens=cfg.max_len).ids
    decoder_input = [cfg.bos_id] + expected[:-1]
    logits = model(torch.tensor([src_ids], device=device),
                   torch.tensor([decoder_input], device=device))
    return decoder_input, expected, logits[0].float().cpu()  # (T, V)


@torch.no_grad()
def teacher_forcing_losses(logits: torch.Tensor, expected_ids: list[int], smoothing: float,
                           pad_id: int) -> dict:
    """The loss of one teacher-forced sentence as training computes it. logits (T, V); expected_ids
    (T,), the target shifted left (what each position must predict).

    Returns p (T,), the probability of each expected token; nll (T,) = −log p; ce = mean(nll); and
    smoothed, the label-smoothed loss that training minimises (target (1 − ε)·one-hot + ε/V).
    """
    # the training loss itself, not a copy of it
    from transformer_viz.models.losses import label_smoothed_loss

    logits = torch.as_tensor(logits, dtype=torch.float64)  # (T, V)
    target = torch.as_tensor(expected_ids, dtype=torch.long)  # (T,)
    nll = F.cross_entropy(logits, target, reduction="none")  # (T,)
    smoothed = label_smoothed_loss(logits[None], target[None], smoothing, pad_id)
    return {"p": torch.exp(-nll).numpy(), "nll": nll.numpy(), "ce": float(nll.mean()),
            "smoothed": float(smoothed)}


@torch.no_grad()
def time_per_sentence(model, length: int, repeats: int = 3) -> float:
    """Seconds to translate one sentence of ``length`` source tokens into ``length`` tokens,
    greedily, by incremental decoding (the Transformer's with its key/value cache), the best of
    ``repeats``. The output length is fixed (no stop at </s>), so models compare on the same work
    whatever they would write."""
    import time

    device = next(model.parameters()).device
    src = (4 + torch.arange(length, device=device) % 50)[None]  # (1, S): ordinary tokens …
    src[0, -1] = EOS  # … ending in </s>
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        state = model.start_state(src)
        last = torch.full((1,), BOS, dtype=torch.long, device=device)
        for _ in range(length):
            last = model.decode_step(last, state).argmax(dim=-1)  # (1,)
        best = min(best, time.perf_counter() - start)
    return best


# --- a decoder-only model: a prompt in, its completion and every traced tensor out ----------------

@dataclass
class PromptRun:
    prompt: str  # the prompt as typed
    completion: Completion  # every step's logits, the settings, why it stopped
    text: str  # prompt + continuation, special tokens dropped
    # the traced sequence: <s> + prompt + continuation (a final </s> not included: nothing reads it)
    ids: list[int]
    tokens: list[str]
    trace: Trace | None
    config: object  # models.gpt.config.GPTConfig

    @property
    def n_prompt(self) -> int:
        """Positions of <s> + the prompt."""
        return len(self.completion.prompt_ids)


@torch.no_grad()
def run_prompt(ckpt: Checkpoint, prompt: str, settings: SamplingSettings,
               trace: bool = True) -> PromptRun:
    """Complete ``prompt`` with a decoder-only checkpoint, then trace one forward pass over <s> +
    prompt + continuation: thanks to the causal mask, row t of every traced tensor is what the model
    computed when it chose token t + 1. Raises InputError for a prompt that cannot be run
    (empty)."""
    completion, text = complete_text(ckpt.model, ckpt.tokenizer, prompt, settings)
    ids = (completion.ids[:-1]
           if completion.new_ids and completion.new_ids[-1] == ckpt.config.eos_id
           else completion.ids)
    run_trace = None
    if trace:
        run_trace = Trace()
        ckpt.model(torch.tensor([ids], device=next(ckpt.model.parameters()).device),
                   trace=run_trace)
    return PromptRun(prompt, completion, text, ids, ckpt.tokenizer.convert_ids_to_tokens(ids),
                     run_trace, ckpt.config)
