"""The example notebook (examples/lecture_walkthrough.ipynb): stored without outputs, and executed
headless from top to bottom, without an error, in under a minute."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "lecture_walkthrough.ipynb"


def test_the_example_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.skipif(not (ROOT / "checkpoints" / "de-en").is_dir(),
                    reason="the shipped de-en checkpoint is missing")
def test_the_example_notebook_runs_in_under_a_minute(monkeypatch):
    # The kernel imports transformer_viz from this checkout, installed or not.
    monkeypatch.setenv("PYTHONPATH",
                       os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    start = time.monotonic()
    client = NotebookClient(nb, timeout=60, kernel_name="python3",
                            # run in examples/
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    elapsed = time.monotonic() - start
    assert elapsed < 60, f"{elapsed:.0f} s"
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert (len(figures)
            == sum(c.source.splitlines()[-1].startswith("run.") for c in nb.cells
                   if c.cell_type == "code"))
