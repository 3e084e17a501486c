"""The summary's `latency_source` as one line (what `draftsim run` and `draftsim estimate` print); apart
from simulator.results.metrics so that `draftsim estimate` does not import pandas."""
from __future__ import annotations

from typing import Mapping


def format_latency_source(source: Mapping) -> str:
    """One line: which source priced which op kinds (summary `latency_source`)."""
    if source.get("source") == "engine_profile":
        return f"engine_profile {source['profile']} (measured {source['measured']})"
    # FP8 weights run weight-only on a GPU without FP8 tensor cores (profiles.roofline.WEIGHT_ONLY_FP8)
    weight_only = "   weight-only FP8 (W8A16 as FP8 Marlin runs it): GEMMs on the roofline" \
        if source.get("weight_only") else ""
    if source.get("source") != "measured":
        return f"{source.get('source')} ({source.get('hardware')}){weight_only}"
    by_source: dict[str, list[str]] = {}
    for kind, used in source.get("op_kinds", {}).items():
        label = "roofline" if used["source"] == "roofline" else "measured"
        by_source.setdefault(label, []).append(kind)
    parts = [f"{label}: {', '.join(kinds)}" for label, kinds in sorted(by_source.items())]
    limit = source.get("power_limit")
    if limit:  # profiles.measured.power_limit: passes priced at the board's power limit under sustained load
        parts.append(f"power limit: {limit['data'].rsplit('/', 1)[-1]}")
    return (f"measured {source['framework']} {source['version']} on {source['system']} "
            f"({source['package']})   " + "   ".join(parts) + weight_only)
