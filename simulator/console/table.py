"""Plain-text tables that stay aligned for any magnitude: each column is as wide as its widest cell."""
from __future__ import annotations

from typing import Sequence

GAP = "  "


def format_columns(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """Header and rows as text; the first `left` columns are left-aligned, the others right-aligned
    (numbers). Every cell is already text; a column is never narrower than its widest cell, so large
    values widen their column instead of running into the next one."""
    table = [list(map(str, header)), *[list(map(str, row)) for row in rows]]
    ncols = max(len(row) for row in table)
    for row in table:
        row.extend([""] * (ncols - len(row)))
    widths = [max(len(row[c]) for row in table) for c in range(ncols)]
    lines = []
    for row in table:
        cells = [row[c].ljust(widths[c]) if c < left else row[c].rjust(widths[c]) for c in range(ncols)]
        lines.append(GAP.join(cells).rstrip())
    return "\n".join(lines)
