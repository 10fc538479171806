"""Does transformers translate an exported checkpoint as our engine does? Exports the checkpoint
(export-hf) into a temporary directory, then on the first --limit sentences of a Multi30k split
counts the outputs that are identical: transformers' greedy against ours, transformers' beam (the
exported generation_config.json: num_beams, length_penalty = our α) against our
beam_search(scoring="hf") and against our default beam search (GNMT length penalty), and prints the
largest logit difference on the beam outputs. Not a test (the test, on 50 sentences, is
tests/unit/test_hf.py).

    .venv/bin/python bench/hf_agreement.py --checkpoint checkpoints/de-en \\
        --data-dir ../shared/data/multi30k --limit 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.engine import traced_forward  # noqa: E402
from transformer_viz.generation.decoding import beam_search, greedy_decode, max_output_length  # noqa: E402
from transformer_viz.interop.marian_export import export_hf  # noqa: E402
from transformer_viz.text.corpora import read_any_split  # noqa: E402
from transformer_viz.text.tokenizer import encode_source, output_ids  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default="checkpoints/de-en")
    parser.add_argument("--data-dir", default="../shared/data/multi30k")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    from transformers import AutoTokenizer, MarianMTModel

    torch.set_num_threads(1)
    ckpt = load_checkpoint(args.checkpoint)
    cfg, beams, alpha = ckpt.config, ckpt.generation.num_beams, ckpt.generation.length_penalty
    src_lang, tgt_lang = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
    with tempfile.TemporaryDirectory() as tmp:
        export_hf(ckpt, Path(tmp) / "exported")
        model = MarianMTModel.from_pretrained(str(Path(tmp) / "exported")).eval()
        hf_tokenizer = AutoTokenizer.from_pretrained(str(Path(tmp) / "exported"))
    counts = {"tokenizer": 0, "greedy": 0, "beam, scoring hf": 0, "beam, ours (GNMT)": 0}
    worst, n = 0.0, 0
    for source, _ in read_any_split(args.split, src_lang, tgt_lang, Path(args.data_dir),
                                    limit=args.limit):
        ids = encode_source(ckpt.tokenizer, source, cfg.max_len).ids
        cap = max_output_length(cfg, len(ids))
        src = torch.tensor([ids])
        with torch.no_grad():
            theirs_greedy = output_ids(model.generate(src, num_beams=1, max_length=1 + cap)[0, 1:],
                                       cfg.eos_id, cfg.pad_id)
            theirs_beam = output_ids(model.generate(src, max_length=1 + cap)[0, 1:], cfg.eos_id,
                                     cfg.pad_id)
        ours_hf = beam_search(ckpt.model, src, beams, cap, alpha, record=False,
                              scoring="hf").tokens[0]
        counts["tokenizer"] += hf_tokenizer(source)["input_ids"] == ids
        ours_greedy = greedy_decode(ckpt.model, src, cap, record=False).tokens[0]
        counts["greedy"] += ours_greedy == theirs_greedy
        counts["beam, scoring hf"] += ours_hf == theirs_beam
        ours_gnmt = beam_search(ckpt.model, src, beams, cap, alpha, record=False).tokens[0]
        counts["beam, ours (GNMT)"] += ours_gnmt == theirs_beam
        tgt = [cfg.bos_id] + ours_hf
        with torch.no_grad():
            theirs_logits = model(input_ids=src, decoder_input_ids=torch.tensor([tgt])).logits[0]
        ours_logits = traced_forward(ckpt.model, ids, tgt)["logits"][0]
        worst = max(worst, float((ours_logits - theirs_logits).abs().max()))
        n += 1
    print(f"{args.checkpoint}, {args.split}, {n} sentences, beam {beams}, α {alpha:g}: "
          "identical to transformers'")
    for name, count in counts.items():
        print(f"  {name:<20} {count:>4} of {n}")
    print(f"  largest |logit difference| {worst:.2e}")


if __name__ == "__main__":
    main()
