"""The speculative-decoding trends a planner needs appear from draftsim's defaults and acceptance from the
published registry or a measured trace (scenarios/validation/published/trends.py), nothing tuned."""
from __future__ import annotations

import pytest

from scenarios.validation.published import trends


@pytest.mark.slow  # ~30 s of DES runs
def test_the_four_trends_appear_without_tuning():
    by_batch = [s for _, s in trends.batch_trend(16)]
    assert all(b < a for a, b in zip(by_batch, by_batch[1:]))  # speedup falls with batch
    mtp = trends.mtp_depth_trend(16)
    for batch in (1, 32):
        decayed = {g: s for rule, b, g, s in mtp if rule == "decayed" and b == batch}
        best = max(decayed, key=decayed.get)
        assert best <= 4 and decayed[6] < decayed[best]  # a small best MTP depth
    tree = trends.tree_trend(16)
    assert tree[0][2] > tree[0][1] and tree[-1][2] < tree[-1][1]  # tree wins at batch 1, loses at 64
    draft = {(t, b): s for t, b, s in trends.draft_model_trend(16)}
    assert draft[("vicuna-33b", 1)] > draft[("vicuna-7b", 1)] and draft[("vicuna-33b", 16)] > draft[("vicuna-7b", 16)]
