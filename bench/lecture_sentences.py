"""The lecture's own sentences through the shipped checkpoints: each translation with default
decoding, its chrF against the lecture's reference, and whether it is below 50 (the line under which
a translation counts as bad). Prints a Markdown table; the README and the model cards quote it.

    python bench/lecture_sentences.py [--checkpoints checkpoints/de-en checkpoints/en-de] [--record]

``--record`` writes the rows into each checkpoint's metadata.json and model card ("Example
sentences").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.app.examples import LECTURE_SENTENCES, WRONG_BELOW  # noqa: E402
from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.checkpoints.records import record_examples  # noqa: E402
from transformer_viz.engine import run_sentence  # noqa: E402
from transformer_viz.generation.evaluation import sentence_chrf  # noqa: E402

BAD = WRONG_BELOW  # chrF below this: the translation is wrong (the Overview says so)


def rows(checkpoint: str) -> list[tuple[str, str, str, float]]:
    ckpt = load_checkpoint(checkpoint)
    src = ckpt.metadata.get("src_lang", "de")
    out = []
    for sentence, reference in LECTURE_SENTENCES.get(src, {}).items():
        # the defaults
        run = run_sentence(ckpt, sentence, beam_size=ckpt.generation.num_beams, trace=False)
        out.append((sentence, run.translation, reference,
                    sentence_chrf(run.translation, reference)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", nargs="+",
                        default=["checkpoints/de-en", "checkpoints/en-de"])
    parser.add_argument("--record", action="store_true",
                        help="write the table into each checkpoint's card")
    args = parser.parse_args()
    for checkpoint in args.checkpoints:
        table = rows(checkpoint)
        bad = sum(score < BAD for *_, score in table)
        print(f"\n{checkpoint}: {bad} of {len(table)} below chrF {BAD:g}\n")
        print("| sentence | translation (default decoding) | lecture's reference | chrF |\n"
              "|---|---|---|---|")
        for sentence, translation, reference, score in table:
            print(f"| {sentence} | {translation} | {reference} | "
                  f"{score:.1f}{' ✗' if score < BAD else ''} |")
        if args.record:
            record_examples(checkpoint, [{"source": s, "translation": t, "reference": r,
                                          "chrf": round(c, 1)} for s, t, r, c in table])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
