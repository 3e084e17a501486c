"""PEARL (Liu et al. 2025): parallel drafting with pre-/post-verify vs sequential speculative decoding.

The algorithm is modelled as a semi-Markov chain in theory/policies/pearl.py (time unit: one target
forward; c = draft forward / target forward; i.i.d. acceptance α). The figure shows the best speedup
over autoregressive decoding vs c for PEARL (best window γ) and for Leviathan's sequential SD (best γ).

Checks:

- The chain's closed form against an explicit token-by-token run of the algorithm (theory's
  simulate_pearl) at three (α, γ, c) points (tolerance 4 standard errors of the ratio estimate, delta
  method over phases).
- Limits the algorithm implies: α = 0 ⇒ speedup 1/max(1, c); α = 1 ⇒ γ / max(1, γ c).
- The paper's claim that parallel drafting removes the draft/target mutual waiting and beats sequential
  SD: PEARL's best speedup >= SD's best speedup for α in 0.5..0.9 whenever drafting is expensive
  (c >= 0.2). In this model SD wins for very cheap drafters (c <= 0.1 at α <= 0.6), where waiting for the
  draft costs little; the figure shows the crossover.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE = "Liu et al. 2025 (ICLR), PEARL: Parallel Speculative Decoding with Adaptive Draft Length (arXiv:2408.11850)"
MC_POINTS = ((0.6, 4, 0.3), (0.8, 6, 0.15), (0.9, 3, 0.5))
MC_PHASES, SEED = 60_000, 29
ALPHAS, CLAIM_CS = (0.5, 0.6, 0.7, 0.8, 0.9), (0.2, 0.3, 0.5)


def _mc(alpha: float, gamma: int, c: float, rng: np.random.Generator) -> tuple[float, float]:
    """Speedup estimate and its standard error from independent batches of phases."""
    from theory.policies.pearl import simulate_pearl

    batches = 30
    tokens, times = np.empty(batches), np.empty(batches)
    for i in range(batches):
        tokens[i], times[i] = simulate_pearl(alpha, gamma, c, MC_PHASES // batches, rng)
    ratio = tokens.sum() / times.sum()
    resid = tokens - ratio * times  # delta method for a ratio of sums
    se = np.sqrt(batches / (batches - 1) * (resid ** 2).sum()) / times.sum()
    return float(ratio), float(se)


def run() -> Outcome:
    from theory.chain import optimal_gamma
    from theory.policies.pearl import pearl, pearl_optimal_gamma

    rng = np.random.default_rng(SEED)
    checks = []
    for alpha, gamma, c in MC_POINTS:
        est, se = _mc(alpha, gamma, c, rng)
        checks.append(Check(f"speedup α={alpha} γ={gamma} c={c}: chain vs run of the algorithm",
                            "model vs Monte Carlo", SOURCE, pearl(alpha, gamma, c).speedup, est, 4 * se))
    checks.append(Check("α=0, c=0.4: speedup = 1/max(1, c)", "model limit", SOURCE, 1.0,
                        pearl(0.0, 4, 0.4).speedup, 1e-12))
    checks.append(Check("α=1, γ=5, c=0.3: speedup = γ/max(1, γc)", "model limit", SOURCE, 5 / 1.5,
                        pearl(1.0, 5, 0.3).speedup, 1e-12))
    margin = min(pearl_optimal_gamma(a, c)[1] - optimal_gamma(a, c)[1] for a in ALPHAS for c in CLAIM_CS)
    checks.append(Check("smallest margin best PEARL - best SD (α 0.5..0.9, c 0.2..0.5)", "published claim",
                        SOURCE, 0.0, float(margin), 1e-12, "≥"))
    rows = []
    for alpha in (0.6, 0.8, 0.9):
        for c in np.round(np.linspace(0.02, 1.0, 50), 4):
            g_p, s_p = pearl_optimal_gamma(alpha, float(c))
            g_s, s_s = optimal_gamma(alpha, float(c))
            rows.append({"alpha": alpha, "c": float(c), "pearl_gamma": g_p, "pearl_speedup": s_p,
                         "sd_gamma": g_s, "sd_speedup": s_s})
    data = pd.DataFrame(rows)
    figure, ax = new_figure()
    for alpha, part in data.groupby("alpha"):
        line, = ax.plot(part.c, part.pearl_speedup, label=f"PEARL α={alpha}")
        ax.plot(part.c, part.sd_speedup, "--", color=line.get_color(), label=f"sequential SD α={alpha}")
    ax.set(xlabel="c = draft forward / target forward", ylabel="best speedup over autoregressive",
           title="PEARL vs sequential speculative decoding")
    ax.legend(fontsize=7)
    return Outcome(data, checks, figure)


REPRODUCTION = Reproduction(
    name="pearl", title="Parallel drafting (PEARL) vs sequential speculative decoding",
    citation="Liu et al. PEARL: Parallel Speculative Decoding with Adaptive Draft "
             "Length. ICLR 2025 (arXiv:2408.11850)",
    run=run)
