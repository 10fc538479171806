"""Completing a prompt with a decoder-only model (models/gpt/), one token at a time.

Each step runs the model over <s> + prompt + what it has written so far, takes the logits of the
last position, and chooses the next token with generation/sampling.py (temperature, top-k, top-p, a
seeded draw). It stops at </s>, after ``max_new_tokens``, or when the model's positions run out.
Every step's logits are kept, so a page can show any step's distribution before and after each cut.

The prompt runs through the model once; after that each step runs only the newest token, attending
to the keys and values of the earlier positions, which are kept (models.gpt.model.GPT.extend).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from transformer_viz.generation.sampling import NextToken, draw, next_token_distribution
from transformer_viz.text.tokenizer import decode, encode_source


@dataclass(frozen=True)
class SamplingSettings:
    temperature: float = 1.0  # 0: greedy
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1: off
    seed: int = 0
    max_new_tokens: int = 20

    def describe(self) -> str:
        if self.temperature == 0:
            return "greedy (T = 0)"
        cuts = (([f"top-k {self.top_k}"] if self.top_k else [])
                + ([f"top-p {self.top_p:g}"] if self.top_p < 1 else []))
        return (f"sampling, T = {self.temperature:g}" + "".join(f", {c}" for c in cuts)
                + f", seed {self.seed}")


@dataclass
class Completion:
    prompt_ids: list[int]  # <s> + the prompt's tokens
    new_ids: list[int]  # what was generated (the final </s> included when it was drawn)
    step_logits: list[np.ndarray]  # step i: the logits (V,) from which new_ids[i] was drawn
    settings: SamplingSettings
    stop_reason: str  # "</s>", "max_new_tokens" or "max_len"
    # what the user should be told about the prompt
    messages: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.new_ids

    def distribution(self, step: int) -> NextToken:
        """Every stage of step ``step``'s choice (model, tempered, kept, final), recomputed from its
        logits."""
        s = self.settings
        return next_token_distribution(self.step_logits[step], s.temperature, s.top_k, s.top_p)


def suppressed_ids(cfg) -> list[int]:
    """Tokens never generated: <pad> and a <s> distinct from </s> (they never follow a token in
    training)."""
    return [i for i in (cfg.pad_id, cfg.bos_id) if i >= 0 and i != cfg.eos_id]


def encode_prompt(tokenizer, text: str, cfg) -> tuple[list[int], list[str]]:
    """<s> + the prompt's token IDs (the input rules of encode_source; no </s>), and the notes for
    the user. Leaves at least one position free for the completion."""
    encoded = encode_source(tokenizer, text, max_tokens=cfg.max_len - 1)
    return [cfg.bos_id] + encoded.ids[:-1], encoded.messages()


@torch.no_grad()
def complete_ids(model, prompt_ids: list[int], settings: SamplingSettings) -> Completion:
    """Generate after ``prompt_ids`` (which start with <s>) with the given settings."""
    cfg = model.cfg
    device = next(model.parameters()).device
    rng = np.random.default_rng(settings.seed)
    ids, new, logits_seen, reason = list(prompt_ids), [], [], "max_new_tokens"
    banned = suppressed_ids(cfg)
    caches: list[dict] = [{} for _ in range(cfg.N)]
    # positions not yet run: the whole prompt first, then one token per step
    pending = list(prompt_ids)
    for _ in range(settings.max_new_tokens):
        if len(ids) >= cfg.max_len:
            reason = "max_len"
            break
        logits = (model.extend(torch.tensor([pending], device=device), caches)[0]
                  .float().cpu().numpy())  # (V,)
        logits[banned] = -np.inf
        logits_seen.append(logits)
        dist = next_token_distribution(logits, settings.temperature, settings.top_k, settings.top_p)
        token = int(np.argmax(dist.final)) if settings.temperature == 0 else draw(dist.final, rng)
        new.append(token)
        ids.append(token)
        pending = [token]
        if token == cfg.eos_id:
            reason = "</s>"
            break
    return Completion(list(prompt_ids), new, logits_seen, settings, reason)


def complete_text(model, tokenizer, text: str,
                  settings: SamplingSettings) -> tuple[Completion, str]:
    """The prompt's completion and the whole text (prompt + continuation, special tokens
    dropped)."""
    prompt_ids, messages = encode_prompt(tokenizer, text, model.cfg)
    completion = complete_ids(model, prompt_ids, settings)
    completion.messages = messages
    return completion, decode(tokenizer, completion.ids[1:])
