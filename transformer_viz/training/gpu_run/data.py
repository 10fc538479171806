"""The prepared folder that travels with the GPU command: the joint BPE and every split encoded once
as int16 IDs (``prepare``, here), read back on the GPU (``Prepared``), and the greedy dev scores
that both sides compute from it (``dev_scores``)."""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch

DATA_FILE, DEV_FILE, DATA_MANIFEST = "corpora.safetensors", "dev.json", "manifest.json"
# The same bytes as DATA_FILE through the stdlib's xz: a third of the size, so that one direction's
# returned shards fit beside the data in what a GPU command may carry; 0.2 s to read back.
XZ_SUFFIX = ".xz"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
LANGS = ("de", "en")  # the order in which every prepared split stores its two sides
TRAIN_SPLITS = ("multi30k_train", "tatoeba_train")
DEV_SETS = ("val", "tatoeba_dev")  # Multi30k val and the Tatoeba dev split; never a test set
DIRECTIONS = {"de-en": ("de", "en"), "en-de": ("en", "de")}
MANIFEST_SUFFIX = ".manifest.json"


def _encode(tokenizer, texts: list[str], chunk: int = 20_000) -> list[list[int]]:
    ids: list[list[int]] = []
    for start in range(0, len(texts), chunk):
        ids += tokenizer(texts[start : start + chunk], add_special_tokens=False)["input_ids"]
    return ids


def _flat(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """ID lists -> (all IDs in int16, offsets in int32: row i is ids[offsets[i]:offsets[i + 1]])."""
    lengths = torch.tensor([0] + [len(r) for r in rows], dtype=torch.int64)
    flat = torch.tensor([i for r in rows for i in r], dtype=torch.int16)  # (total tokens,)
    return flat, torch.cumsum(lengths, 0).to(torch.int32)  # (total tokens,), (rows + 1,)


def _rows(flat: torch.Tensor, offsets: torch.Tensor) -> list[list[int]]:
    ids, ends = flat.tolist(), offsets.tolist()
    return [ids[a:b] for a, b in zip(ends[:-1], ends[1:])]


def _prepared_tokenizer(out: Path, tokenizer_dir, tc, corpora):
    """The shipped tokenizer copied into ``out``, or a joint BPE learned as the trainer does."""
    from transformer_viz.text.tokenizer import load_tokenizer
    from transformer_viz.training.common import Distributed
    from transformer_viz.training.translation import build_tokenizer

    if tokenizer_dir:
        (out / "tokenizer").mkdir(exist_ok=True)
        for name in TOKENIZER_FILES:
            shutil.copyfile(Path(tokenizer_dir) / name, out / "tokenizer" / name)
        tokenizer = load_tokenizer(out / "tokenizer")
    else:
        shutil.rmtree(out / "tokenizer", ignore_errors=True)
        tokenizer = build_tokenizer(tc, out, corpora, Distributed())
    if len(tokenizer) > 2**15:
        raise ValueError(f"a vocabulary of {len(tokenizer)} does not fit int16 IDs")
    return tokenizer


def _write_corpora(out: Path, tensors: dict, compress: bool) -> tuple[str, str]:
    """(the file written, the SHA-256 of the safetensors bytes). The hash is of the bytes before
    compression, so the data's identity (which manifests and --init-from compare) does not depend
    on how it is stored."""
    from safetensors.torch import save

    raw = save(tensors)
    name = DATA_FILE + XZ_SUFFIX if compress else DATA_FILE
    for stale in (DATA_FILE, DATA_FILE + XZ_SUFFIX):
        (out / stale).unlink(missing_ok=True)
    (out / name).write_bytes(lzma.compress(raw) if compress else raw)
    return name, hashlib.sha256(raw).hexdigest()


def prepare(out: str | Path, data_dir=None, tatoeba_dir=None,
            tokenizer_dir: str | Path | None = None, vocab_size: int = 8000,
            pairs: dict | None = None, log=print, compress: bool = False) -> dict:
    """Encode Multi30k train + Tatoeba train and the two dev sets into ``out``; returns its
    manifest.

    The corpora come through training.translation.load_corpora, so the Tatoeba dev split is carved
    exactly as the trainer carves it. ``tokenizer_dir``: reuse that tokenizer (the shipped
    checkpoints'); without it a joint BPE of ``vocab_size`` is learned as the trainer learns it
    (build_tokenizer). ``pairs`` replaces reading files, as in load_corpora (tests). ``compress``:
    the IDs xz-compressed (corpora.safetensors.xz), to carry less to the GPU.
    """
    from transformer_viz.checkpoints.compact import sha256
    from transformer_viz.training.translation import TrainConfig, load_corpora

    t0 = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tc = TrainConfig(src_lang=LANGS[0], tgt_lang=LANGS[1], multi30k_copies=1, tatoeba_copies=1,
                     vocab_size=vocab_size)
    corpora = load_corpora(tc, data_dir, tatoeba_dir, pairs)
    n_multi30k = corpora.sizes["multi30k_train"]
    splits = {"multi30k_train": corpora.train[:n_multi30k],
              "tatoeba_train": corpora.train[n_multi30k:], **corpora.validation}
    if set(splits) != set(TRAIN_SPLITS + DEV_SETS):
        raise ValueError(f"expected the splits {TRAIN_SPLITS + DEV_SETS}, got {sorted(splits)}")
    tokenizer = _prepared_tokenizer(out, tokenizer_dir, tc, corpora)
    tensors, counts = {}, {}
    for split, split_pairs in splits.items():
        counts[split] = len(split_pairs)
        for side, lang in enumerate(LANGS):
            rows = _encode(tokenizer, [pair[side] for pair in split_pairs])
            tensors[f"{split}.{lang}.ids"], tensors[f"{split}.{lang}.offsets"] = _flat(rows)
    stored, corpora_sha256 = _write_corpora(out, tensors, compress)
    dev = {name: [list(p) for p in splits[name]] for name in DEV_SETS}  # references stay text
    (out / DEV_FILE).write_text(json.dumps(dev, ensure_ascii=False), encoding="utf-8")
    files = [stored, DEV_FILE, "tokenizer/tokenizer.json"]
    learned = f"joint BPE of {vocab_size} learned here"
    manifest = {"pairs": counts, "languages": list(LANGS), "vocab_size": len(tokenizer),
                "tokenizer": str(tokenizer_dir) if tokenizer_dir else learned,
                "tokens": {k: int(v.numel()) for k, v in tensors.items() if k.endswith(".ids")},
                "sha256": {DATA_FILE: corpora_sha256,
                           **{name: sha256(out / name) for name in files[1:]}},
                "stored": stored,
                "bytes": sum((out / name).stat().st_size for name in files),
                "seconds": round(time.time() - t0, 1)}
    (out / DATA_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"wrote {out}: {manifest['bytes'] / 2**20:.1f} MiB, {counts} in {manifest['seconds']} s")
    return manifest


def _corpora_bytes(directory: Path, manifest: dict) -> bytes:
    """The safetensors bytes of the IDs, stored plain or xz-compressed, checked against the
    manifest's SHA-256 (a wrong corpus would train without complaint)."""
    plain, packed = directory / DATA_FILE, directory / (DATA_FILE + XZ_SUFFIX)
    raw = plain.read_bytes() if plain.is_file() else lzma.decompress(packed.read_bytes())
    if hashlib.sha256(raw).hexdigest() != manifest["sha256"][DATA_FILE]:
        raise ValueError(f"{directory}: the corpora's SHA-256 is not the manifest's")
    return raw


@dataclass
class Prepared:
    """The prepared folder, read back: the tokenizer (for decoding), every split's IDs and the dev
    texts."""

    directory: Path
    tokenizer: object
    ids: dict[str, dict[str, list[list[int]]]]  # split -> language -> ID lists (no special tokens)
    dev: dict[str, list[tuple[str, str]]]  # dev set -> (de, en) text pairs
    manifest: dict

    @classmethod
    def load(cls, directory: str | Path) -> "Prepared":
        from safetensors.torch import load

        from transformer_viz.text.tokenizer import load_tokenizer

        directory = Path(directory)
        manifest = json.loads((directory / DATA_MANIFEST).read_text())
        tensors = load(_corpora_bytes(directory, manifest))
        ids: dict[str, dict[str, list[list[int]]]] = {}
        for key in tensors:
            if key.endswith(".ids"):
                split, lang, _ = key.split(".")
                offsets = tensors[f"{split}.{lang}.offsets"]
                ids.setdefault(split, {})[lang] = _rows(tensors[key], offsets)
        dev_text = json.loads((directory / DEV_FILE).read_text(encoding="utf-8"))
        dev = {name: [tuple(p) for p in pairs] for name, pairs in dev_text.items()}
        return cls(directory, load_tokenizer(directory / "tokenizer"), ids, dev, manifest)

    def examples(self, split: str, src: str, tgt: str,
                 max_len: int) -> list[tuple[list[int], list[int]]]:
        """What text.corpora.encode_pairs gives for the split's pairs: sources cut and ended by
        </s>, targets cut to max_len - 1."""
        eos = self.tokenizer.eos_token_id
        return [(s[: max_len - 1] + [eos], t[: max_len - 1])
                for s, t in zip(self.ids[split][src], self.ids[split][tgt])]

    def dev_set(self, name: str, src: str, tgt: str, max_len: int, limit: int = 0):
        """(encoded sources, reference texts) of the first ``limit`` pairs (0: all) of a dev set."""
        examples = self.examples(name, src, tgt, max_len)[: limit or None]
        references = [pair[LANGS.index(tgt)] for pair in self.dev[name]][: limit or None]
        return [s for s, _ in examples], references


def dev_scores(model, prepared: Prepared, src: str, tgt: str, limit: int,
               batch_tokens: int = 2000) -> dict[str, dict]:
    """Greedy translations of each dev set's first ``limit`` sentences, scored with sacreBLEU and
    chrF."""
    from transformer_viz.generation.decoding_defaults import GenerationDefaults
    from transformer_viz.generation.evaluation import repetition_rate, score, translate_encoded

    greedy = GenerationDefaults(num_beams=1)
    out = {}
    for name in DEV_SETS:
        sources, references = prepared.dev_set(name, src, tgt, model.cfg.max_len, limit)
        hyps = translate_encoded(model, prepared.tokenizer, sources, greedy, batch_tokens)
        out[name] = {"sentences": len(hyps), **score(hyps, references).as_dict(),
                     "repetition_rate": repetition_rate(prepared.tokenizer, hyps),
                     "hypotheses": hyps}
    return out


def loss_batches(examples, cfg) -> list:
    """Padded batches of about 8,000 tokens, in length order, for a loss over a whole set."""
    from transformer_viz.text.corpora import make_batch, token_batches

    return [make_batch([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
            for idx in token_batches(examples, 8000, shuffle=False)]


def split_losses(model, prepared: Prepared, src: str, tgt: str, limit: int = 1000,
                 smoothing: float = 0.1) -> dict[str, float]:
    """Label-smoothed loss per target token on ``limit`` pairs of every training split and dev set,
    evenly spaced through each (the Tatoeba training pairs are sorted by length): a training split
    against its dev set shows how much of what was fitted carries over (the gap), which the
    training loss of mixed batches hides."""
    from transformer_viz.training.common import validation_loss

    cfg, device, out = model.cfg, next(model.parameters()).device, {}
    for split in TRAIN_SPLITS[:1] + DEV_SETS[:1] + TRAIN_SPLITS[1:] + DEV_SETS[1:]:
        examples = prepared.examples(split, src, tgt, cfg.max_len)
        examples = examples[:: max(1, len(examples) // limit)][:limit]
        with torch.no_grad():
            out[split] = validation_loss(model, loss_batches(examples, cfg), device, smoothing)
    return out
