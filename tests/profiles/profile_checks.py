"""A `draftsim profile --check` re-priced from a shipped profile (the H100 profile tests share it)."""
from __future__ import annotations

import warnings

from profiles.predictor import ProfiledLatencyModel


def repriced(profile_dir, check: dict) -> dict[str, tuple[float, dict]]:
    """Each check shape's error re-priced from the profile in `profile_dir` against the forward `check`
    measured (predicted / measured − 1), with the shape's row."""
    from profiles.profiler.check import SHAPES, check_models, predicted_seconds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = ProfiledLatencyModel(profile_dir)
    target, drafter = check_models(["llama-3-8b", "qwama-0.5b"])
    by_name = {row["name"]: row for row in check["shapes"]}
    out = {}
    for shape in SHAPES:
        row = by_name[shape.name]
        spec = target if shape.model == "target" else drafter
        out[shape.name] = (predicted_seconds(profile, spec, shape, "bf16") / row["measured_s"] - 1.0, row)
    return out
