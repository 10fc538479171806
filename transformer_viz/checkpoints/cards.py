"""Model cards: the README.md of a checkpoint directory, written from its metadata.json, one writer
per kind of model (the translation models share one; the ViT and the DETR have their own)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from transformer_viz.checkpoints.known_errors import known_errors_lines
from transformer_viz.models.transformer.config import ModelConfig

if TYPE_CHECKING:
    from transformer_viz.models.detr.config import DETRConfig
    from transformer_viz.models.vit.config import ViTConfig


def _architecture_line(cfg) -> str:
    if isinstance(cfg, ModelConfig):
        return (f"- d_model {cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N}, vocabulary "
                f"{cfg.vocab_size}, dropout {cfg.dropout}, {'Pre' if cfg.pre_ln else 'Post'}-LN, "
                f"tied embeddings: {cfg.tie_embeddings}")
    return (f"- {cfg.name}: one-layer unidirectional GRU encoder and GRU decoder, d_emb "
            f"{cfg.d_emb}, d_hidden {cfg.d_hidden}, vocabulary {cfg.vocab_size}, dropout "
            f"{cfg.dropout}; "
            + ("additive attention (Bahdanau et al., 2015) over the encoder states"
               if cfg.attention else
               "no attention: the decoder sees the source only through the encoder's last state")
            + "; embeddings shared by source, target and output")


def length_entries(meta: dict) -> dict[str, dict]:
    """Split -> the bucketed-BLEU entry that ``bleu-by-length --record`` stored for it
    (``bleu_by_length_splits``; a card written before there were several holds one,
    ``bleu_by_length``)."""
    entries = dict(meta.get("bleu_by_length_splits") or {})
    single = meta.get("bleu_by_length")
    if single and single.get("split") not in entries:
        entries[single.get("split", "?")] = single
    return entries


def _length_table(entry: dict | None) -> list[str]:
    """The model card's "BLEU by source length" section (metadata's ``bleu_by_length``)."""
    if not entry or not entry.get("buckets"):
        return []
    rows = entry["buckets"]
    lines = ["## BLEU by source length", "",
             f"{entry.get('split', '?')}, {entry.get('decoding', 'greedy')} decoding; sentences "
             f"bucketed by their number of source {entry.get('tokens', 'subword tokens')}; "
             "sacreBLEU within each bucket (all sentences: "
             f"{entry.get('bleu', float('nan')):.2f}). Written by `python -m transformer_viz "
             "bleu-by-length`.", "",
             "| source tokens | " + " | ".join(str(r["bucket"]) for r in rows) + " |",
             "|---|" + "---|" * len(rows),
             "| sentences | " + " | ".join(str(r["sentences"]) for r in rows) + " |",
             "| sacreBLEU | "
             + " | ".join("–" if r["bleu"] is None else f"{r['bleu']:.2f}" for r in rows) + " |",
             ""]
    return lines


def _examples_table(rows: list[dict] | None) -> list[str]:
    """The model card's "Example sentences" section (metadata's ``examples``: source, translation,
    reference, chrF), written by ``bench/lecture_sentences.py --record``."""
    if not rows:
        return []
    lines = ["## Example sentences", "",
             "The lecture's own sentences, default decoding; chrF against the lecture's "
             "translation (below 50: wrong, and the app says so).", "",
             "| source | translation | reference | chrF |", "|---|---|---|---|"]
    lines += [f"| {r['source']} | {r['translation']} | {r['reference']} | {r['chrf']:.1f} |"
              for r in rows]
    return lines + [""]


def _scores_table(rows: list[dict] | None) -> list[str]:
    """The model card's "Scores" section (metadata's ``scores``, one row per split and decoding)."""
    if not rows:
        return []
    lines = ["## Scores", "",
             "| split | decoding | sentences | sacreBLEU | chrF | BLEU (lowercased, tokenized) "
             "| outputs with a repetition |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        rep = row.get("repetition_rate")
        lines.append(f"| {row.get('split')} | {row.get('decoding')} | {row.get('sentences', '')} | "
                     f"{row.get('bleu', float('nan')):.2f} | {row.get('chrf', float('nan')):.2f} | "
                     f"{row.get('bleu_lower_tok', float('nan')):.2f} | "
                     f"{'' if rep is None else f'{100 * rep:.2f} %'} |")
    return lines + ["", "sacreBLEU: cased, detokenized, 13a tokenization. A repetition is a token, "
                    "or a loop of up to three subwords, repeated four or more times in a row.", ""]


def _cell(row: dict, key: str, decimals: int) -> str:
    """A number of a history row, or a dash where the row has none (weights scored as loaded,
    before any update, have no training loss)."""
    value = row.get(key)
    return "—" if value is None else f"{value:.{decimals}f}"


def _history_table(meta: dict) -> list[str]:
    """The model card's "Training history" section: one row per epoch of metadata's ``history``."""
    if not meta.get("history"):
        return []
    both = any("tatoeba_dev_bleu" in h for h in meta["history"])
    titles = ["Multi30k val BLEU", "Tatoeba dev BLEU"] if both else ["val BLEU"]
    keys = ["val_bleu", "tatoeba_dev_bleu"] if both else ["val_bleu"]
    lines = ["## Training history", "",
             "| epoch | step | train loss | val loss | " + " | ".join(titles) + " | minutes |",
             "|---|---|---|---|" + "---|" * len(titles) + "---|"]
    for h in meta["history"]:
        lines.append(f"| {h.get('epoch')} | {h.get('step')} | {_cell(h, 'train_loss', 3)} | "
                     f"{_cell(h, 'val_loss', 3)} | "
                     + " | ".join(_cell(h, k, 2) for k in keys)
                     + f" | {h.get('elapsed_s', 0) / 60:.1f} |")
    if meta.get("history_note"):
        lines.append("\n" + meta["history_note"])
    elif both:
        lines.append("\nGreedy BLEU after each epoch; the selection score is their mean.")
    return lines + [""]


def model_card(cfg, meta: dict) -> str:
    """A readable summary of metadata.json."""
    lines = [f"# {meta.get('name', 'transformer-viz checkpoint')}", ""]
    if meta.get("description"):
        lines += [meta["description"], ""]
    parameters = meta.get("parameters", "?")
    lines += ["## Model", "",
              f"- Parameters: {parameters:,}" if isinstance(parameters, int)
              else f"- Parameters: {parameters}", _architecture_line(cfg),
              f"- Weights stored as {meta.get('weights_dtype', 'float32')}", ""]
    for key, title in (("data", "Data"), ("training", "Training"), ("hardware", "Hardware")):
        if meta.get(key):
            lines += [f"## {title}", ""]
            value = meta[key]
            if isinstance(value, dict):
                lines += [f"- {k}: {v}" for k, v in value.items()]
            else:
                lines.append(str(value))
            lines.append("")
    lines += _scores_table(meta.get("scores"))
    for entry in length_entries(meta).values():
        lines += _length_table(entry)
    lines += _examples_table(meta.get("examples"))
    lines += known_errors_lines(meta)
    lines += _history_table(meta)
    return "\n".join(lines)


def vit_card(cfg: ViTConfig, meta: dict) -> str:
    from transformer_viz.vision.digits import DATA_CREDIT, SPLIT_TEXT

    training = meta.get("training", {})
    return "\n".join([
        f"# {meta.get('name', 'ViT')}", "", meta.get("description", ""), "",
        "## Model", "", f"- Parameters: {meta.get('parameters', '?'):,}",
        f"- {cfg.patch_size}×{cfg.patch_size}-pixel patches of {cfg.image_size}×{cfg.image_size} "
        f"images: {cfg.n_patches} patch tokens + [CLS]; learned position embeddings; d_model "
        f"{cfg.d_model}, d_ff {cfg.d_ff}, h {cfg.h}, N {cfg.N}, dropout {cfg.dropout}, "
        f"{'Pre' if cfg.pre_ln else 'Post'}-LN", "",
        "## Data", "", f"- {DATA_CREDIT}", f"- Split: {SPLIT_TEXT}", "",
        "## Training", "",
        f"- AdamW, lr {training.get('lr')}, weight decay {training.get('weight_decay')}, batch "
        f"{training.get('batch_size')}, {training.get('epochs_run')} epochs (cosine schedule, "
        f"{training.get('warmup_epochs')} warm-up), random shifts of up to {training.get('shift')} "
        "pixel",
        f"- {training.get('minutes')} minutes on {training.get('threads')} CPU thread(s), seed "
        f"{training.get('seed')}",
        f"- Final training loss {training.get('final_train_loss')}, training accuracy "
        f"{100 * training.get('train_accuracy', float('nan')):.2f} %", "",
        "## Held-out accuracy", "",
        f"**{100 * meta.get('held_out_accuracy', float('nan')):.2f} %** of the "
        f"{meta.get('held_out_images')} held-out images, measured once after training (no choice "
        f"was made on them). Retrain with `python -m transformer_viz train-vit --out DIR`.", ""])


def detr_card(cfg: DETRConfig, meta: dict) -> str:
    from transformer_viz.vision.canvases import CANVAS_TEXT

    training, val = meta.get("training", {}), meta.get("validation", {})
    test = meta.get("test", {})
    lines = [
        f"# {meta.get('name', 'DETR')}", "", meta.get("description", ""), "",
        "## Model", "", f"- Parameters: {meta.get('parameters', '?'):,}",
        f"- Backbone: four 3×3 convolutions ({cfg.backbone_channels}, then "
        f"{2 * cfg.backbone_channels} channels, two of stride 2) and a 1×1 projection: a "
        f"{cfg.grid}×{cfg.grid} feature map of d_model {cfg.d_model}",
        f"- Transformer: {cfg.n_encoder_layers} encoder and {cfg.n_decoder_layers} decoder layers "
        f"(Pre-LN), h {cfg.h}, d_ff {cfg.d_ff}; {cfg.n_queries} learned object queries; learned "
        "position embedding",
        "- Heads: a linear classifier over 10 digits + ∅ (no object) and a 3-layer MLP for the box",
        "", "## Data", "", f"- {CANVAS_TEXT}", f"- Digits: {meta.get('digits_credit', '')}", "",
        "## Training", "",
        "- Set loss with Hungarian matching (cost: class 1, L1 5, GIoU 2; ∅ weight 0.1), "
        f"auxiliary losses on every decoder layer; AdamW, lr {training.get('lr')}, weight decay "
        f"{training.get('weight_decay')}, batch {training.get('batch_size')}, "
        f"{training.get('steps_run')} steps ({training.get('warmup_steps')} warm-up, cosine decay)",
        f"- {training.get('minutes')} minutes on {training.get('threads')} CPU thread(s), seed "
        f"{training.get('seed')}",
        "", "## Scores", "",
        "Precision and recall at IoU ≥ 0.5 with the right class (`python -m transformer_viz "
        "detr-eval`):", "",
        "| canvases | images | seed | precision | recall |", "|---|---|---|---|---|"]
    for name, row in (("validation (watched during training, nothing chosen on it)", val),
                      ("test", test)):
        if row:
            lines.append(f"| {name}: {row.get('canvases')} | {row.get('images')} | "
                         f"{row.get('seed')} | {100 * row['precision']:.1f} % | "
                         f"{100 * row['recall']:.1f} % |")
    lines += ["", "Retrain with `python -m transformer_viz train-detr --run-dir RUN --out DIR`.",
              ""]
    return "\n".join(lines)


def _perplexity_table(held_out: dict) -> list[str]:
    """The decoder-only card's "Held-out perplexity" section, one row per held-out set."""
    lines = ["", "## Held-out perplexity", "",
             "Per token (subwords, the closing </s> included) on sentences never trained on, with "
             "the weights kept:",
             "", "| held-out set | sentences | loss (nats/token) | perplexity |",
             "|---|---|---|---|"]
    for name, row in held_out.items():
        if row.get("loss") is not None:
            lines.append(f"| {name} | {row['sentences']:,} | {row['loss']:.3f} | "
                         f"{row['perplexity']:.2f} |")
    return lines + ["", "multi30k_val: Multi30k val; tatoeba_dev: the Tatoeba dev split of the "
                    "translation models; multi30k_test_2016: Multi30k test_2016_flickr (reported "
                    "only, never used to choose).", ""]


def _curve_table(history: list[dict]) -> list[str]:
    """The decoder-only card's "Training curve": each epoch's loss and held-out perplexities."""
    if not history:
        return []
    names = [k[: -len("_ppl")] for k in history[0] if k.endswith("_ppl")]
    lines = ["", "## Training curve", "",
             "| epoch | step | train loss | " + " | ".join(f"{n} ppl" for n in names)
             + " | tokens/s | minutes |", "|---|---|---|" + "---|" * len(names) + "---|---|"]
    for h in history:
        lines.append(f"| {h['epoch']} | {h['step']} | {h['train_loss']:.3f} | "
                     + " | ".join(f"{h[f'{n}_ppl']:.2f}" for n in names)
                     + f" | {h.get('tokens_per_s', 0):.0f} | {h.get('elapsed_s', 0) / 60:.1f} |")
    return lines


def gpt_card(cfg, meta: dict) -> str:
    """The decoder-only model's card: data, size, held-out perplexity, training curve."""
    lines = [f"# {meta.get('name', 'GPT')}", "", meta.get("description", ""), "", "## Model", "",
             f"- Parameters: {meta.get('parameters', 0):,}",
             f"- Decoder-only: N={cfg.N} Pre-LN blocks of causal self-attention and a feed-forward "
             f"network, d_model={cfg.d_model}, h={cfg.h}, d_ff={cfg.d_ff}, vocabulary "
             f"{cfg.vocab_size:,}, at most {cfg.max_len} positions (learned), output projection "
             "tied to the token embeddings",
             f"- Weights stored as {meta.get('weights_dtype', 'float32')}", "", "## Data", ""]
    lines += [f"- {k}: {v}" for k, v in meta.get("data", {}).items()]
    lines += _perplexity_table(meta.get("held_out", {}))
    lines += ["## Training", ""]
    lines += [f"- {k}: {v}" for k, v in meta.get("training", {}).items()]
    lines += _curve_table(meta.get("history"))
    return "\n".join(lines) + "\n"
