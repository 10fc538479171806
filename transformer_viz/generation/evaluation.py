"""Translation of many sentences in batches, and scoring with sacreBLEU and chrF."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from transformer_viz.generation.decoding import generate
from transformer_viz.generation.decoding_defaults import GenerationDefaults
from transformer_viz.text.tokenizer import decode


@dataclass
class Scores:
    bleu: float  # sacreBLEU: cased, detokenized input, 13a tokenization
    chrf: float
    bleu_lower_tok: float  # lowercased 13a-tokenized BLEU, closer to how tutorials report

    def as_dict(self) -> dict:
        return {"bleu": self.bleu, "chrf": self.chrf, "bleu_lower_tok": self.bleu_lower_tok}


def score(hypotheses: list[str], references: list[str]) -> Scores:
    import sacrebleu

    return Scores(
        bleu=sacrebleu.corpus_bleu(hypotheses, [references]).score,
        chrf=sacrebleu.corpus_chrf(hypotheses, [references]).score,
        bleu_lower_tok=sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True).score,
    )


def sentence_chrf(hypothesis: str, reference: str) -> float:
    """chrF (0–100) of one translation against one reference, as sacreBLEU computes it for a
    sentence."""
    from sacrebleu.metrics import CHRF

    return CHRF().sentence_score(hypothesis, [reference]).score


def has_repetition(ids: list[int], times: int = 4, longest_unit: int = 3) -> bool:
    """True when some unit of 1 to ``longest_unit`` tokens occurs ``times`` times in a row
    ("Comomomom": the unit "om"; "Hiiiii": "i"; "a dog a dog a dog a dog")."""
    for unit in range(1, longest_unit + 1):
        need = unit * times
        for start in range(0, len(ids) - need + 1):
            chunk = ids[start:start + unit]
            if all(ids[start + k * unit:start + (k + 1) * unit] == chunk for k in range(1, times)):
                return True
    return False


def repetition_rate(tokenizer, hypotheses: list[str], times: int = 4) -> float:
    """Share of outputs in which a token, or a loop of up to three subwords, repeats ``times`` times
    in a row, counted on the subwords of the model's own vocabulary."""
    if not hypotheses:
        return 0.0
    ids = tokenizer(hypotheses, add_special_tokens=False)["input_ids"]
    return sum(has_repetition(row, times) for row in ids) / len(hypotheses)


@torch.no_grad()
def translate_texts(model, tokenizer, texts: list[str],
                    generation: GenerationDefaults | None = None,
                    batch_tokens: int = 2000, progress: bool = False, device=None) -> list[str]:
    """Translate many sentences, batched by length, as ``generation`` says (default: greedy);
    returns outputs in input order."""
    from transformer_viz.text.corpora import encode_pairs

    sources = [s for s, _ in encode_pairs(tokenizer, [(t, "") for t in texts], model.cfg.max_len)]
    return translate_encoded(model, tokenizer, sources, generation, batch_tokens, progress, device)


@torch.no_grad()
def translate_encoded(model, tokenizer, sources: list[list[int]],
                      generation: GenerationDefaults | None = None, batch_tokens: int = 2000,
                      progress: bool = False, device=None) -> list[str]:
    """:func:`translate_texts` for sources already encoded (each ending in </s>, as encode_pairs
    gives them): a GPU run scores its dev sets from IDs prepared elsewhere, the tokenizer only
    decoding."""
    from transformer_viz.text.corpora import make_batch, token_batches

    generation = generation or GenerationDefaults()
    beam_size = generation.num_beams

    device = device or next(model.parameters()).device
    cfg = model.cfg
    pairs = [(ids, []) for ids in sources]  # (source IDs, no target)
    outputs: list[str] = [""] * len(sources)
    # Beam search multiplies every batch by the beam width; keep the work per batch about the same.
    # token_batches counts padded source + target, here twice the padded source: so twice the
    # budget.
    source_tokens = max(1, batch_tokens // max(beam_size, 1))
    batches = token_batches(pairs, 2 * source_tokens, shuffle=False)
    bar = None
    if progress:
        from tqdm import tqdm

        what = "greedy" if beam_size <= 1 else f"beam {beam_size}"
        bar = tqdm(total=len(sources), desc=f"translating ({what})", unit="sent")
    was_training = model.training
    model.eval()
    try:
        for idx in batches:
            batch = make_batch([pairs[i] for i in idx], cfg.pad_id, cfg.bos_id,
                               cfg.eos_id).to(device)
            result = generate(model, batch.src, generation, record=False)
            for i, ids in zip(idx, result.tokens):
                outputs[i] = decode(tokenizer, ids)
            if bar:
                bar.update(len(idx))
    finally:
        model.train(was_training)
        if bar:
            bar.close()
    return outputs


def evaluate_split(ckpt, pairs: list[tuple[str, str]], split: str, beam_size: int, alpha: float,
                   progress: bool = False, max_loop_repeats: int = 0) -> tuple[dict, list[str]]:
    """Translate a split's sources and score them: the report row of a model card, and the
    hypotheses."""
    # The checkpoint's beam search and the tokens it never writes (an imported Marian model's
    # <pad>).
    gen = replace(ckpt.generation, num_beams=beam_size, length_penalty=alpha,
                  max_loop_repeats=max_loop_repeats)
    hyps = translate_texts(ckpt.model, ckpt.tokenizer, [s for s, _ in pairs], gen,
                           progress=progress)
    result = score(hyps, [t for _, t in pairs])
    decoding = gen.describe()
    return {"split": split, "sentences": len(pairs), "decoding": decoding, **result.as_dict(),
            "repetition_rate": repetition_rate(ckpt.tokenizer, hyps)}, hyps


def select_length_penalty(ckpt, sets: dict[str, list[tuple[str, str]]], beam_size: int,
                          alphas: list[float], progress: bool = False, log=print,
                          max_loop_repeats: int = 0) -> tuple[float, list[dict]]:
    """The α whose beam search scores best on the validation sets (mean BLEU over them); every row
    measured."""
    rows, best, best_alpha = [], float("-inf"), alphas[0]
    for alpha in alphas:
        reports = [evaluate_split(ckpt, pairs, split, beam_size, alpha, progress,
                                  max_loop_repeats)[0]
                   for split, pairs in sets.items()]
        mean = sum(r["bleu"] for r in reports) / len(reports)
        log(f"α {alpha:g}: " + ", ".join(f"{r['split']} {r['bleu']:.2f}" for r in reports)
            + f" (mean {mean:.2f})")
        rows += reports
        if mean > best:
            best, best_alpha = mean, alpha
    return best_alpha, rows


# --- BLEU by source length: the bottleneck, measured (Bahdanau et al., 2015, Figure 2) ------------

# source subword tokens, </s> not counted
LENGTH_BUCKETS = ((1, 10), (11, 15), (16, 20), (21, 25), (26, None))


def bucket_label(low: int, high: int | None) -> str:
    return f"≤ {high}" if low <= 1 else (f"> {low - 1}" if high is None else f"{low}–{high}")


def bleu_by_length(tokenizer, pairs: list[tuple[str, str]], hypotheses: list[str],
                   buckets=LENGTH_BUCKETS) -> list[dict]:
    """sacreBLEU (corpus-level, within each bucket) of the hypotheses, with the sentences bucketed
    by the number of subword tokens of their source (the tokens the models read, without </s>)."""
    lengths = [len(ids)
               for ids in tokenizer([s for s, _ in pairs], add_special_tokens=False)["input_ids"]]
    rows = []
    for low, high in buckets:
        chosen = [i for i, n in enumerate(lengths) if n >= low and (high is None or n <= high)]
        bleu = (score([hypotheses[i] for i in chosen], [pairs[i][1] for i in chosen]).bleu
                if chosen else None)
        rows.append({"bucket": bucket_label(low, high), "min_tokens": low, "max_tokens": high,
                     "sentences": len(chosen), "bleu": bleu})
    return rows
