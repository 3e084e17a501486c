"""Serving-level speculation policies: one small module per policy, re-exported here.

* :mod:`.smartspec` — goodput-optimal gamma for a batch (SmartSpec).
* :mod:`.tetris` — batch draft-token selection under a verification budget (TETRIS), greedy proven exact.
* :mod:`.specdecpp` — SpecDec++ threshold stopping and the optimal threshold from its MDP.
* :mod:`.pearl` — PEARL's parallel drafting (pre-/post-verify) as a semi-Markov chain.
"""
from theory.policies.pearl import PearlResult, pearl, pearl_optimal_gamma, simulate_pearl
from theory.policies.smartspec import GammaChoice, goodput_optimal_gamma
from theory.policies.specdecpp import (ThresholdChoice, specdecpp_length, specdecpp_optimal_threshold,
                                       stopping_model, threshold_policy_value)
from theory.policies.tetris import expected_accepted_for_counts, tetris_allocate

__all__ = [
    "GammaChoice", "PearlResult", "ThresholdChoice", "expected_accepted_for_counts", "goodput_optimal_gamma",
    "pearl", "pearl_optimal_gamma", "simulate_pearl", "specdecpp_length", "specdecpp_optimal_threshold",
    "stopping_model", "tetris_allocate", "threshold_policy_value",
]
