"""How fast does the page "What does a head do?" answer a new sentence? For the shipped small
checkpoints, on --sentences sentences of a Multi30k split (each new to the process), the median of:

(a) library   the page's own work for a new sentence once the sentence's run (translation + trace,
              shared by every page) exists: step 1's batched ablation pass, the logit lens that
              comes with it, and both figures built (text.explain.heads_run + plots.heads), in this
              process;
(b) page      the script run of the page for a new sentence through streamlit.testing.v1.AppTest,
              with step 1 (ablation bars) or step 2 (logit lens) open: everything a rerun does,
              including the sentence's translation and trace (engine.run_sentence) that any page
              needs first, and AppTest's overhead;
(c) attribution  integrated gradients (IG_STEPS) + gradient × input for a new sentence (not held to
              the target: the page shows a spinner and keeps the result per sentence).

Target (the issue): (a)/(b) median ≤ 300 ms. One torch thread, as the app runs (app/threads.py).
Beside each wall-clock median, the median CPU seconds of this process (time.process_time) for the
same work: on a machine busy with other jobs the wall clock includes the time waiting for a core,
the CPU time does not.

    .venv/bin/python bench/heads_speed.py        # checkpoints/de-en and en-de, 20 sentences
    .venv/bin/python bench/heads_speed.py --checkpoints de-en --sentences 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_viz.checkpoints import load_checkpoint  # noqa: E402
from transformer_viz.engine import run_sentence  # noqa: E402
from transformer_viz.plots.common import token_labels  # noqa: E402
from transformer_viz.plots.heads import head_drop_figure, lens_figure, token_prob_figure  # noqa: E402
from transformer_viz.interpret import explain as X  # noqa: E402
from transformer_viz.text.corpora import read_any_split  # noqa: E402
from new_sentence_speed import timed_reruns  # noqa: E402  (bench/, this script's folder)

ROOT = Path(__file__).resolve().parent.parent
PAGE = "transformer_viz/app/pages/heads.py"


def library_times(ckpt, sentences: list[str], attributions: int) -> dict[str, list[float]]:
    out = {"library": [], "library_cpu": [], "attribution": []}
    for n, sentence in enumerate(sentences):
        run = run_sentence(ckpt, sentence)
        t, c = time.perf_counter(), time.process_time()
        numbers = X.heads_run(ckpt.model, run.src_ids, run.tgt_ids)
        names = [str(h) for h in numbers.heads]
        written = run.tgt_tokens[1:] + ["</s>"]
        token_prob_figure(written, numbers.p_base, numbers.p_off)
        head_drop_figure(names, numbers.drops)
        top = [[ckpt.tokenizer.convert_ids_to_tokens(list(map(int, ids))) for ids in layer]
               for layer in numbers.lens["top_ids"]]
        lens_figure(numbers.lens["rank"], top, numbers.lens["top_probs"],
                    token_labels(run.tgt_tokens))
        out["library"].append(time.perf_counter() - t)
        out["library_cpu"].append(time.process_time() - c)
        if n >= attributions:
            continue
        t = time.perf_counter()
        X.integrated_gradients(ckpt.model, run.src_ids, run.tgt_ids)
        X.gradient_x_input(ckpt.model, run.src_ids, run.tgt_ids)
        out["attribution"].append(time.perf_counter() - t)
    return out


def page_times(name: str, sentences: list[str], step: int) -> tuple[list[float], list[float]]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params.update({"ckpt": name, "s": "Ein Hund.", "step": str(step)})
    at.switch_page(PAGE)
    at.run()  # the model loads: not a new sentence's rerun
    times, cpu, error = timed_reruns(at, sentences)
    if error:
        raise SystemExit(error)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", nargs="+", default=["de-en", "en-de"])
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--split", default="test_2017_flickr")
    parser.add_argument("--attribution-sentences", type=int, default=5,
                        help="how many of them (c) times")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("TRANSFORMER_VIZ_CHECKPOINTS", str(ROOT / "checkpoints"))
    print("| checkpoint | (a) library: ablation + lens + figures | (b) page, step 1 (bars) "
          "| (b) page, step 2 (lens) | (c) attribution |")
    print("|---|---|---|---|---|")
    ms = lambda xs: f"{1000 * statistics.median(xs):.0f}"  # noqa: E731
    for name in args.checkpoints:
        ckpt = load_checkpoint(ROOT / "checkpoints" / name)
        src, tgt = ckpt.metadata.get("src_lang", "de"), ckpt.metadata.get("tgt_lang", "en")
        pairs = read_any_split(args.split, src, tgt, limit=3 * args.sentences + 1)
        lib = library_times(ckpt, [s for s, _ in pairs[1:args.sentences + 1]],
                            args.attribution_sentences)
        bars = page_times(name, [s for s, _ in pairs[args.sentences + 1:2 * args.sentences + 1]], 1)
        lens = page_times(name, [s for s, _ in pairs[2 * args.sentences + 1:]], 2)
        print(f"| {name} | {ms(lib['library'])} ms (CPU {ms(lib['library_cpu'])} ms) "
              f"| {ms(bars[0])} ms (CPU {ms(bars[1])} ms) "
              f"| {ms(lens[0])} ms (CPU {ms(lens[1])} ms) | {ms(lib['attribution'])} ms |",
              flush=True)

if __name__ == "__main__":
    main()
