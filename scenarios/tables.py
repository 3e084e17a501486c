"""Printing a scenario script's result table, and saving it as CSV when asked (shared by the scripts)."""
from __future__ import annotations

import pandas as pd

from models.files import ready_to_write


def print_and_save(frame: pd.DataFrame, csv_path: str | None, digits: int = 3) -> None:
    """Print `frame` with `digits` significant digits; also write it to `csv_path` when given."""
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.{digits}g}"))
    if csv_path:
        frame.to_csv(ready_to_write(csv_path), index=False)
