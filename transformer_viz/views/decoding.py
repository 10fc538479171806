"""The decoding views: one step of greedy decoding (its candidates, its causal mask, the newest
position's cross-attention) and the beam-search tree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from transformer_viz.plots.common import token_labels
from transformer_viz.plots.decoding import (attention_row_figure, beam_tree_figure,
                                            causal_mask_figure, topk_figure)
from transformer_viz.text.analysis import beam_tree_data, step_candidates
from transformer_viz.views.attention import check_head, check_layer
from transformer_viz.views.spec import FigureSpec
from transformer_viz.views.tables import long_form

if TYPE_CHECKING:
    from transformer_viz.engine import SentenceRun

STEP_PARTS = ("topk", "mask", "cross")
IdsToTokens = Callable[[list[int]], list[str]]


def steps_shown(run: SentenceRun) -> int:
    """The greedy steps a run has to show: one per token written, </s> included."""
    return min(len(run.decoding.steps), len(run.tgt_ids))


def decoding_step(run: SentenceRun, step: int = 1, part: str = "topk", layer: int = 0,
                  head: int = 0, *, id_to_tokens: IdsToTokens) -> FigureSpec:
    """Greedy decoding at ``step`` (1 … the number of tokens written, </s> included), as the
    Decoding page draws it: "topk", the candidates' probabilities (the one written in orange);
    "mask", the causal mask (step × step); "cross", the newest position's cross-attention over the
    S source tokens, in ``layer`` and ``head``. ``id_to_tokens``: the tokenizer's IDs -> tokens,
    which names the candidates."""
    if part not in STEP_PARTS:
        raise ValueError(f"no part {part!r}; the parts are {', '.join(STEP_PARTS)}")
    if run.decoding.method != "greedy" or not run.decoding.steps:
        raise ValueError("the steps are greedy decoding's: run the sentence with beam=1")
    t = min(max(int(step), 1), steps_shown(run))
    labels = token_labels(run.tgt_tokens[:t])
    if part == "topk":
        c = step_candidates(run.decoding.steps[t - 1], id_to_tokens)
        title = f"Top {len(c['ids'])} candidates at step {t}"
        return FigureSpec(topk_figure, (c["tokens"], c["probs"]),
                          {"chosen": c["chosen"], "title": title},
                          {"token": c["tokens"], "id": c["ids"], "probability": c["probs"]})
    if part == "mask":
        may_attend = np.tril(np.ones((t, t), dtype=bool))
        title = f"Causal mask at step {t}: {t}×{t}"
        return FigureSpec(causal_mask_figure, (labels,), {"title": title},
                          long_form(labels, labels, {"may attend": may_attend}))
    layer, head = check_layer(run, layer), check_head(run, head)
    row = run.trace[f"decoder.{layer}.cross_attn.weights"][0, head, t - 1].numpy()  # (S,)
    src_labels = token_labels(run.src_tokens)
    title = f"Cross-attention of the newest position ({labels[-1]}), layer {layer}, head {head}"
    return FigureSpec(attention_row_figure, (row, src_labels), {"title": title},
                      {"source": src_labels, "weight": row})


def beam_tree(run: SentenceRun, beam: int = 3, *, id_to_tokens: IdsToTokens,
              search: Callable[[int], SentenceRun]) -> FigureSpec:
    """The beam-search tree of this sentence with ``beam`` hypotheses, as the Decoding page draws it
    (a row a step, a column a beam; the chosen translation's path thick). ``search(K)``: the
    sentence run by beam search of width K (the app's cached run, or a new one); ``id_to_tokens``
    names the tokens."""
    found = search(beam)
    tree = beam_tree_data(found.decoding.steps, found.decoding.tokens[0], id_to_tokens)
    text, parents = tree["text"], tree["parents"]
    scores, finished = tree["scores"], tree["finished"]
    title = (f"Beam tree, K = {beam}: a line from each hypothesis to the one it extends, the "
             "chosen translation orange")
    table = long_form(list(range(1, len(text) + 1)), list(range(beam)),
                      {"token": text, "parent": parents, "log P": scores, "finished": finished},
                      ("step", "beam"))
    return FigureSpec(beam_tree_figure, (text, parents, scores, finished),
                      {"best_beam": tree["best_beam"], "title": title, "down": True}, table)
