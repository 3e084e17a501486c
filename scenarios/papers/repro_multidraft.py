"""Optimal multi-draft acceptance vs the number of drafts n (Khisti et al. 2024; Hu et al. 2025).

Setting: n i.i.d. drafts from q, a lossless verifier must output y ~ p; acceptance = Pr(output is one of
the drafts). The same fixed (p, q) over 6 tokens as ``scenarios/papers/multidraft_vs_n.py`` (a badly
calibrated drafter, so the schemes separate).

Checks:

- The published closed form of the optimum, ``min over token sets T of p(T) + 1 - q(T)^n`` (Khisti et al.
  give it for two identical drafts; Hu et al. for any n), evaluated by enumerating all 2^6 sets, equals
  the optimum of the coupling LP solved over draft sets (an independent computation), n = 1..6.
- n = 1 reduces to single-draft speculative sampling: ``Σ min(p, q)`` (Leviathan et al.).
- A real run of the optimal verifier (drafts sampled, output drawn from the LP's coupling) accepts at the
  closed-form rate (4 standard errors) and is lossless (every output frequency within 4 standard errors
  of p), n = 2 and 4.
- The optimum is an upper bound for the lossless schemes used in practice (recursive rejection sampling,
  SpecTr's k-sequential, naive): smallest margin >= 0.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE_CF = ("Khisti et al. 2024 (arXiv:2410.18234), optimal acceptance for identical drafts; Hu et al. 2025, "
             "Towards Optimal Multi-draft Speculative Decoding (ICLR 2025)")
SOURCE_SD = "Leviathan, Kalman, Matias 2023 (ICML), acceptance Σ min(p, q)"
P = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
Q = np.array([0.05, 0.10, 0.15, 0.20, 0.20, 0.30])
MAX_N, MC_RUNS, SEED = 6, 200_000, 17
MC_NS = (2, 4)


def closed_form(p: np.ndarray, q: np.ndarray, n: int) -> float:
    """min over all token sets T of p(T) + 1 - q(T)^n, by enumeration."""
    best = 1.0
    for size in range(len(p) + 1):
        for subset in itertools.combinations(range(len(p)), size):
            idx = list(subset)
            best = min(best, float(p[idx].sum()) + 1.0 - float(q[idx].sum()) ** n)
    return best


def run() -> Outcome:
    from theory.multidraft import SCHEMES, acceptance
    from theory.multidraft_optimal import optimal_acceptance, optimal_coupling, sample_optimal

    rows, checks = [], []
    worst_gap, smallest_margin = 0.0, np.inf
    schemes = [s for s in SCHEMES if s != "rrs_wor"]  # rrs_wor samples without replacement: other bound
    for n in range(1, MAX_N + 1):
        lp = optimal_acceptance(P, Q, n, method="lp")
        cf = closed_form(P, Q, n)
        worst_gap = max(worst_gap, abs(lp - cf))
        row = {"n": n, "optimum (LP)": lp, "optimum (closed form)": cf}
        for scheme in schemes:
            row[scheme] = acceptance(P, Q, n, scheme)
            smallest_margin = min(smallest_margin, lp - row[scheme])
        rows.append(row)
    checks.append(Check("max |LP optimum - closed form| over n = 1..6", "published formula", SOURCE_CF,
                        0.0, worst_gap, 1e-7))
    checks.append(Check("optimum at n = 1", "published formula", SOURCE_SD, float(np.minimum(P, Q).sum()),
                        rows[0]["optimum (LP)"], 1e-7))
    rng = np.random.default_rng(SEED)
    for n in MC_NS:
        samples = sample_optimal(optimal_coupling(P, Q, n), MC_RUNS, rng)
        hit = samples.output_is_draft
        se = hit.std(ddof=1) / np.sqrt(MC_RUNS)
        checks.append(Check(f"acceptance of a real run of the optimal verifier, n = {n}", "published formula",
                            SOURCE_CF, closed_form(P, Q, n), float(hit.mean()), 4 * se))
        freq = np.bincount(samples.output, minlength=len(P)) / MC_RUNS
        z = np.abs(freq - P) / np.sqrt(P * (1 - P) / MC_RUNS)
        checks.append(Check(f"losslessness: max |output freq - p| in standard errors, n = {n}", "published claim",
                            SOURCE_CF, 0.0, float(z.max()), 4.0))
    checks.append(Check("smallest margin optimum - {" + ", ".join(schemes) + "}", "published claim", SOURCE_CF,
                        0.0, float(smallest_margin), 1e-9, "≥"))
    data = pd.DataFrame(rows)

    figure, ax = new_figure()
    for column in ["optimum (LP)", *schemes]:
        ax.plot(data.n, data[column], marker="o", ls="--" if "optimum" in column else "-", label=column)
    ax.set(xlabel="number of drafts n", ylabel="acceptance (output is a draft)",
           title="Optimal multi-draft acceptance vs n (i.i.d. drafts)")
    ax.legend(fontsize=7)
    return Outcome(data, checks, figure)


REPRODUCTION = Reproduction(
    name="multidraft-optimal-vs-n", title="Optimal multi-draft acceptance vs number of drafts",
    citation="Khisti, Ebrahimi, Dbouk, Behboodi, Memisevic, Louizos. Multi-Draft Speculative Sampling: "
             "Canonical Architectures and Theoretical Limits. arXiv:2410.18234 (2024); Hu et al. Towards "
             "Optimal Multi-draft Speculative Decoding. ICLR 2025",
    run=run)
