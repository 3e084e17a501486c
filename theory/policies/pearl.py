"""PEARL: parallel drafting with pre-verify and post-verify (Liu et al. 2024), as a semi-Markov chain.

Time unit: one target forward ``T = 1``; ``c`` = draft forward / target forward. The drafter and the
target run concurrently; ``gamma`` = draft tokens per drafting window. Per-token acceptance is i.i.d.
with probability ``alpha`` (as in :mod:`theory.chain`). Our model of the algorithm, phase by phase:

* **Draft phase D** (no verified-ahead drafts). The drafter writes ``d_1..d_gamma`` while the target,
  from the committed prefix, computes the distribution at the position of ``d_1`` (*pre-verify*).
  If ``d_1`` is rejected (1 - alpha): the target's correction token is committed (1 token), drafting is
  abandoned, the phase ends at ``max(1, c)`` and the next phase is D. If accepted (alpha): ``d_1`` is
  committed (1 token); the phase ends when the window is drafted, ``max(1, gamma c)``, and the next
  phase is V with ``m = gamma - 1`` pending drafts.
* **Verify phase V** (m = gamma - 1 pending drafts). The target verifies them in one forward while the
  drafter already writes the next window ``e_1..e_gamma`` assuming all are accepted (*post-verify*).
  If k < m are accepted: k + 1 tokens (accepted + correction), the early-drafted window is discarded,
  the phase ends at 1, next D. If all m are accepted: the forward's last distribution checks ``e_1``
  (the pre-verify of the next window): m + 1 tokens either way; if ``e_1`` is accepted the phase ends
  at ``max(1, gamma c)`` and the next is V again, otherwise at ``max(1, c)`` and the next is D.

Chain: ``P(D->V) = alpha``, ``P(V->V) = alpha^gamma``; expected tokens ``g_D = 1`` and
``g_V = (1 - alpha^gamma)/(1 - alpha)``; expected durations
``t_D = (1-alpha) max(1,c) + alpha max(1,gamma c)`` and
``t_V = (1 - alpha^m) + alpha^m (alpha max(1, gamma c) + (1-alpha) max(1, c))``. Stationary odds
``pi_V / pi_D = alpha / (1 - alpha^gamma)``; by renewal-reward the rate is
``(pi_D g_D + pi_V g_V) / (pi_D t_D + pi_V t_V)`` tokens per target forward = the speedup over plain
autoregressive decoding. Limits: alpha = 0 gives ``1/max(1, c)``; alpha = 1 gives
``gamma / max(1, gamma c)``. :func:`simulate_pearl` runs the same process token by token (independent
code) to check this, and tests compare with :func:`theory.chain.speedup`.

``verify`` (default 1) generalises the target's cost: the V phase's pass verifies gamma query tokens and
may take ``verify`` times the D phase's one-token pass (both still "one target forward" in the paper; a
serving engine prices them apart, simulator.speculation.control.pearl). Every V-phase duration above then
has ``verify`` in place of 1: ``t_V = (1 - alpha^m) v + alpha^m (alpha max(v, gamma c) + (1-alpha)
max(v, c))``; the speedup stays in units of the one-token pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory import _checks
from theory.chain import expected_tokens


@dataclass(frozen=True)
class PearlResult:
    """Stationary quantities of the PEARL chain (time in units of one target forward)."""

    tokens_per_phase: float
    phase_time: float
    draft_phase_share: float  # stationary probability that a phase is a draft phase

    @property
    def speedup(self) -> float:
        """Tokens per target-forward time = speedup over autoregressive decoding with the target."""
        return self.tokens_per_phase / self.phase_time


def pearl(alpha: float, gamma: int, c: float, verify: float = 1.0) -> PearlResult:
    """Expected tokens per phase, mean phase time and speedup of PEARL (see module docstring)."""
    alpha = _checks.probability(alpha, "alpha")
    gamma = _checks.positive_int(gamma, "gamma")
    c = _checks.non_negative_float(c, "c")
    v = _checks.positive_float(verify, "verify")   # (0 with alpha 1, c 0: a 0 s phase, ZeroDivisionError)
    m = gamma - 1
    short, full = max(1.0, c), max(1.0, gamma * c)
    g_d, g_v = 1.0, float(expected_tokens(alpha, m))
    t_d = (1.0 - alpha) * short + alpha * full
    t_v = (1.0 - alpha**m) * v + alpha**m * (alpha * max(v, gamma * c) + (1.0 - alpha) * max(v, c))
    if alpha >= 1.0:
        share_d = 0.0
    else:
        odds_v = alpha / (1.0 - alpha**gamma)
        share_d = 1.0 / (1.0 + odds_v)
    tokens = share_d * g_d + (1.0 - share_d) * g_v
    time = share_d * t_d + (1.0 - share_d) * t_v
    return PearlResult(tokens, time, share_d)


def pearl_optimal_gamma(alpha: float, c: float, max_gamma: int = 64) -> tuple[int, float]:
    """Window length in ``1..max_gamma`` with the largest PEARL speedup (ties: smallest)."""
    max_gamma = _checks.positive_int(max_gamma, "max_gamma")
    speeds = [pearl(alpha, g, c).speedup for g in range(1, max_gamma + 1)]
    best = int(np.argmax(speeds))
    return best + 1, float(speeds[best])


def simulate_pearl(alpha: float, gamma: int, c: float, phases: int, rng: np.random.Generator,
                   verify: float = 1.0) -> tuple[int, float]:
    """Run ``phases`` PEARL phases with Bernoulli(alpha) acceptances; returns (tokens, elapsed time).

    Written as an explicit process (a window of drafted tokens, each carrying its own accept coin) rather
    than from the chain's formulas, so that tests can check :func:`pearl` against it.
    """
    alpha = _checks.probability(alpha, "alpha")
    gamma = _checks.positive_int(gamma, "gamma")
    c = _checks.non_negative_float(c, "c")
    phases = _checks.positive_int(phases, "phases")
    rng = _checks.generator(rng)
    v = _checks.positive_float(verify, "verify")   # (0 with alpha 1, c 0: a 0 s phase, ZeroDivisionError)
    committed, clock = 0, 0.0
    pending: list[bool] = []  # accept coins of drafts waiting for verification (empty = draft phase)
    in_verify = False
    for _ in range(phases):
        if not in_verify:
            window = list(rng.random(gamma) < alpha)  # drafter writes d_1..d_gamma
            committed += 1  # d_1 if accepted, otherwise the target's correction token
            if window[0]:
                clock += max(1.0, gamma * c)
                pending, in_verify = window[1:], True
            else:
                clock += max(1.0, c)
            continue
        early = list(rng.random(gamma) < alpha)  # drafter writes the next window during verification
        accepted = 0
        while accepted < len(pending) and pending[accepted]:
            accepted += 1
        if accepted < len(pending):
            committed += accepted + 1
            clock += v
            in_verify = False
        else:
            committed += accepted + 1  # all pending + (e_1 or the correction token)
            if early[0]:
                clock += max(v, gamma * c)
                pending = early[1:]
            else:
                clock += max(v, c)
                in_verify = False
    return committed, clock
