"""The data layouts of the figures' CSV downloads: tokens as row and column names, and matrices as
one line per cell."""

from __future__ import annotations

import numpy as np


def row_names(tokens: list[str]) -> list[str]:
    """Position and token ("3 ▁Hund") as row and column names of a CSV download: the figures'
    labels (plots.token_labels) without their HTML escaping, since a CSV is data, not markup."""
    return [f"{i} {t}" for i, t in enumerate(tokens)]


def token_frame(values, row_tokens: list[str], col_tokens: list[str] | None = None):
    """A matrix whose rows (and columns) are tokens, for a CSV download: rows and columns named as
    in :func:`row_names`; −∞ is written as -inf."""
    import pandas as pd  # here: importing the views does not wait for pandas

    columns = row_names(col_tokens) if col_tokens is not None else None
    return pd.DataFrame(np.asarray(values), index=row_names(row_tokens), columns=columns)


def long_form(row_labels: list[str], col_labels: list[str], values: dict,
              names: tuple[str, str] = ("query", "key")):
    """Matrices of (rows × columns) as a CSV with one line per cell: the row's label, the column's
    label and each matrix's value there (``values``: column name -> matrix), the layout a
    spreadsheet filters."""
    row, col = names
    return {row: np.repeat(row_labels, len(col_labels)), col: np.tile(col_labels, len(row_labels)),
            **{name: np.ravel(matrix) for name, matrix in values.items()}}
