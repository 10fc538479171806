"""The commands that write files for others to read: ``language-stats`` (a checkpoint's
language_stats.json, for the app's input warnings), ``export-hf`` (a checkpoint as a transformers
Marian model directory) and ``download-data`` (the Multi30k corpus)."""

from __future__ import annotations

import json
from pathlib import Path

from transformer_viz.cli.common import DEFAULT_CHECKPOINT, fail, load_translation_model


def _training_pairs(corpora: list[str], args) -> list[tuple[str, str]]:
    from transformer_viz.text.corpora import LANGUAGES, read_split, read_tatoeba

    pairs = read_split(args.data_dir, "train", *LANGUAGES) if "multi30k" in corpora else []
    if "tatoeba" in corpora:  # the training part only: tatoeba_dev stays unseen, for the report
        pairs += read_tatoeba(args.tatoeba_dir, "tatoeba_train", *LANGUAGES, data_dir=args.data_dir)
    return pairs


def cmd_language_stats(args) -> int:
    """Write the checkpoint's language_stats.json from its training data, and optionally report how
    often the input warnings fire on held-out sentences of either language."""
    from transformer_viz.checkpoints import TOKENIZER_DIR, load_metadata
    from transformer_viz.text.corpora import LANGUAGES, read_any_split
    from transformer_viz.text.language_stats import (LANGUAGE_STATS, load_language_stats,
                                                     save_language_stats, stats_from_pairs,
                                                     trained_corpora, warning_report)
    from transformer_viz.text.tokenizer import load_tokenizer

    directory = Path(args.checkpoint)
    tokenizer = load_tokenizer(directory / TOKENIZER_DIR)
    metadata = load_metadata(directory)
    src_lang, tgt_lang = metadata.get("src_lang", "de"), metadata.get("tgt_lang", "en")
    if not args.report_only:
        corpora = args.corpora or trained_corpora(metadata)
        pairs = _training_pairs(corpora, args)
        path = save_language_stats(directory,
                                   stats_from_pairs(tokenizer, pairs, LANGUAGES, corpora))
        print(f"wrote {path} ({path.stat().st_size:,} bytes) from {len(pairs):,} sentence pairs "
              f"({', '.join(corpora)})")
    stats = load_language_stats(directory)
    if stats is None:
        return fail(f"{directory} has no {LANGUAGE_STATS}")
    for split in args.report:
        pairs = read_any_split(split, src_lang, tgt_lang, args.data_dir, args.tatoeba_dir)
        for row in warning_report(stats, tokenizer, split, pairs, src_lang, tgt_lang):
            print(json.dumps(row))
    return 0


def cmd_export_hf(args) -> int:
    from transformer_viz.interop.marian_export import export_hf

    out = export_hf(load_translation_model(args.checkpoint), args.out)
    print(f"wrote {out}: MarianMTModel.from_pretrained({str(out)!r}) and "
          "AutoTokenizer.from_pretrained(…) load it")
    return 0


def cmd_download(args) -> int:
    from transformer_viz.text.corpora import download

    for path in download(args.directory):
        print(path)
    return 0


def add_commands(sub) -> None:
    from transformer_viz.text.corpora import SPLITS, TATOEBA_SPLITS

    p = sub.add_parser("language-stats",
                       help="write a checkpoint's language_stats.json (token → language, "
                            "source lengths) from its training data, for the input warnings")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory")
    p.add_argument("--data-dir", help="Multi30k directory (or set TRANSFORMER_VIZ_DATA)")
    p.add_argument("--tatoeba-dir",
                   help="Tatoeba directory (default: 'tatoeba-large', else 'tatoeba', beside the "
                        "Multi30k directory)")
    p.add_argument("--corpora", nargs="+", choices=["multi30k", "tatoeba"],
                   help="training corpora to count (default: those the model card names)")
    p.add_argument("--report", nargs="*", default=[], choices=SPLITS + TATOEBA_SPLITS,
                   help="held-out splits on which to print how often each warning fires, in either "
                        "language")
    p.add_argument("--report-only", action="store_true",
                   help="keep the stored statistics, only report")
    p.set_defaults(func=cmd_language_stats)

    p = sub.add_parser("export-hf", help="write a Transformer checkpoint as a transformers Marian "
                                         "model directory (MarianMTModel, safetensors, "
                                         "generation_config.json, tokenizer)")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--out", required=True, help="the directory to write")
    p.set_defaults(func=cmd_export_hf)

    p = sub.add_parser("download-data", help="fetch the Multi30k task 1 raw files (needs internet)")
    p.add_argument("directory")
    p.set_defaults(func=cmd_download)
