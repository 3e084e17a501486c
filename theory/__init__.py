"""draftsim.theory — the math: closed forms, LPs and DPs for speculative decoding. Pure functions.

Imports nothing from ``simulator``, ``models`` or ``profiles``. Modules:

* :mod:`theory.chain` — chain SD (Leviathan et al.): expected tokens, speedup, ops, optimal gamma,
  acceptance-rate definitions and conversions.
* :mod:`theory.multidraft` / :mod:`theory.multidraft_sampling` / :mod:`theory.multidraft_optimal` —
  multi-draft verifiers (rrs, rrs_wor, kseq, naive), their samplers, and the optimal acceptance (LP and
  a proven sort-based closed form).
* :mod:`theory.trees` / :mod:`theory.tree_search` / :mod:`theory.tree_builders` — token trees, Sequoia's
  DP, builders used by real systems, hardware-aware size choice.
* :mod:`theory.policies` — SmartSpec, TETRIS, SpecDec++, PEARL.

The names below are re-exported lazily (PEP 562) so that ``import theory`` stays cheap and PuLP is only
loaded when the LP is used.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "theory.chain": ("expected_tokens", "expected_tokens_positional", "expected_accepted", "accepted_fraction",
                     "speedup", "ops_factor", "optimal_gamma", "alpha_from_expected_tokens",
                     "alpha_from_accepted_fraction", "sample_chain_steps"),
    "theory.multidraft": ("SCHEMES", "single_draft_acceptance", "acceptance", "kseq_rho"),
    "theory.multidraft_sampling": ("sample_verification", "estimate_acceptance", "MultiDraftSamples"),
    "theory.multidraft_optimal": ("optimal_acceptance", "optimal_coupling", "sample_optimal"),
    "theory.trees": ("Tree", "positional_tree", "with_positional_accept", "positional_accept_probs",
                     "simulate_tree_verification"),
    "theory.tree_search": ("optimal_tree", "tree_table", "brute_force_optimal_tree", "choose_tree_size",
                           "step_time_s"),
    "theory.tree_builders": ("chain_tree", "kary_tree", "medusa_tree", "eagle2_tree", "top_n_tree",
                             "positional_child_probs"),
    "theory.policies": ("goodput_optimal_gamma", "tetris_allocate", "specdecpp_length",
                        "specdecpp_optimal_threshold", "pearl", "pearl_optimal_gamma"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'theory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
