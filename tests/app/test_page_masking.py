"""The Masking lab through AppTest: the decoder with and without the causal mask, and a padded batch
whose real tokens compute what they would alone."""

from __future__ import annotations

import re

import numpy as np

from tests.support.apptest import OTHER_SENTENCE, SENTENCE, change_sentence, chart, rerun
from tests.support.figures import traces, z_of


def check_statement_matches_table(at) -> None:
    """The sentence under the table says what the table shows: the direction and the two means."""
    table = at.dataframe[0].value
    before, after = table["p(expected), mask"].mean(), table["p(expected), no mask"].mean()
    changed = int((table["argmax (mask)"] != table["argmax (no mask)"]).sum())
    statement = next(m.value for m in at.markdown if "trained with" in m.value)
    found = re.search(
        r"(falls|rises) from ([0-9.]+) to ([0-9.]+)\*\*, and (\d+) of (\d+)", statement)
    assert found, statement
    assert found[1] == ("falls" if after < before else "rises")
    # The page rounds its own float32 means; the table's means may differ in the last bits (another
    # summation order), so compare within the rounding rather than rounding twice.
    assert abs(float(found[2]) - before) <= 5.01e-4 and abs(float(found[3]) - after) <= 5.01e-4
    assert int(found[4]) == changed and int(found[5]) == len(table)
    metrics = {m.label: m.value for m in at.metric}  # one statistic on both sides
    assert metrics["weight on later positions, with mask (mean per row)"] == "0"
    assert float(metrics["weight on later positions, without mask (mean per row)"]) > 0


def test_masking_lab(open_app, open_step):
    at = open_app("transformer_viz/app/pages/masking.py")
    assert at.title[0].value == "Masking lab"
    on = chart(at, "masking-selected")
    assert traces(on, "masked scores masked")  # the causal mask's grey cells
    # the same cells are grey in the weights panel and in the "with the causal mask" map
    on_grey = ~np.isnan(z_of(traces(on, "masked scores masked")[0]))
    assert np.array_equal(~np.isnan(z_of(traces(on, "weights masked")[0])), on_grey)
    assert np.array_equal(~np.isnan(z_of(traces(chart(at, "masking-weights-causal"),
                                                "masked")[0])), on_grey)
    at.toggle(key="masking_causal").set_value(False)
    off = chart(rerun(at), "masking-selected")
    assert off["data"] != on["data"]
    assert not traces(off, "masked scores masked")  # nothing masked any more
    # attention reaches into the future
    assert np.triu(z_of(traces(off, "weights")[0]), k=1).sum() > 0
    check_statement_matches_table(at)
    check_statement_matches_table(change_sentence(at, OTHER_SENTENCE))  # a second sentence
    change_sentence(at, SENTENCE)
    # the padded batch: <pad> keys get weight exactly 0 and real tokens match the single runs
    open_step(at, "masking_step", 1)
    assert len(at.success) == 1 and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["largest weight on a <pad> key (all layers, heads)"] == "0"
    padded_rows = 0
    for row in range(len(at.selectbox(key="masking_row").options)):
        at.selectbox(key="masking_row").set_value(row)
        rerun(at)
        assert len(at.success) == 1 and not at.error  # every row matches its single-sentence run
        encoder = chart(at, "masking-batch-encoder")
        grey = traces(encoder, "masked scores masked")
        if not grey:
            continue  # the longest row has no <pad>
        padded_rows += 1  # one padded row is enough to check; the others only cost time
        weights = z_of(traces(encoder, "weights")[0])
        pad_columns = ~np.isnan(z_of(grey[0]))[0]
        # the weights panel greys the same <pad> columns (weight exactly 0) rather than colouring
        # them
        assert pad_columns.any() and np.all(np.isnan(weights[:, pad_columns]))
        assert np.array_equal(~np.isnan(z_of(traces(encoder, "weights masked")[0])),
                              ~np.isnan(z_of(grey[0])))
        cross_grey = traces(chart(at, "masking-batch-cross"), "masked")[0]
        assert (np.all(~np.isnan(z_of(cross_grey))[:, pad_columns])
                and np.all(np.isnan(z_of(cross_grey))[:, ~pad_columns]))
        # grey exactly on the <pad> columns, in every row
        assert np.array_equal(~np.isnan(z_of(grey[0])), np.broadcast_to(pad_columns, weights.shape))
        break
    assert padded_rows == 1
    before = chart(open_step(at, "masking_step", 0), "masking-weights-causal")["data"]
    assert chart(change_sentence(at, OTHER_SENTENCE), "masking-weights-causal")["data"] != before
