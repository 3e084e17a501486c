"""Bulk and step-by-step modes give identical requests and steps with every target-cost variant
(simulator.cluster.target_costs), each run with the small scenario its own test file uses."""
from __future__ import annotations

import pytest

from sim_helpers import assert_bulk_equals_step, scenario
from test_sim_cascade import BASE as CASCADE
from test_sim_early_exit import DATA as EARLY_EXIT
from test_sim_layer_parallel import BASE as LAYER_PARALLEL
from test_sim_ragged import DATA as REALIGNED
from test_sim_shadowkv import DATA as SHADOWKV

CASES = {"cascade": CASCADE, "early_exit": EARLY_EXIT, "layer_parallel": LAYER_PARALLEL, "realigned": REALIGNED,
         "shadowkv": SHADOWKV}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bulk_equals_step_mode(name):
    assert_bulk_equals_step(scenario(**CASES[name]))
