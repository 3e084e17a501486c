"""The optimal multi-draft verifier in serving (Hu et al. 2025; Khisti et al. 2025), run by the DES.

`multidraft-optimal-vs-n` checks the optimum itself (LP = closed form). This reproduction puts the optimal
verifier in the simulator as `speculation: {kind: multidraft, scheme: optimal}` and checks what a serving
run gets from it: Llama-3-8B on an H100 with a Llama-68M draft, n draft sequences of length γ from a
(p, q) pair over 12 tokens where the drafter is overconfident (q ∝ p^2.5, so no verifier accepts always), at light load.

Checks:
- published formula (Khisti et al. Thm.; Hu et al. sort-based optimum): the DES's mean accepted length at
  γ = 1 equals the optimal acceptance for n = 2, 3, 4 (1.5 %);
- published claim (the optimum is attained by a lossless verifier): the optimal coupling run as a sampler
  accepts at the optimum (4e-3) and outputs p (max deviation < 4e-3);
- published claim (the optimum bounds every lossless scheme): in the DES at γ = 3, optimal − best of
  rrs/kseq/naive ≥ 0 for every n, and optimal_wor − rrs_wor ≥ 0;
- the data: tokens per step and TPOT per scheme and n.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import simulator
from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE = ("Khisti et al. 2025 (ICLR), Multi-Draft Speculative Sampling: Canonical Decomposition and Theoretical "
          "Limits (arXiv:2410.18234); Hu et al. 2025, Towards Optimal Multi-draft Speculative Decoding (arXiv:2502.18779)")
PAIR = {"kind": "pair", "vocab": 12, "zipf": 1.2, "q_power": 2.5}  # an overconfident drafter: optimum < 1
SCHEMES = ("naive", "kseq", "rrs", "optimal", "rrs_wor", "optimal_wor")
NS = (2, 3, 4)


def _run(scheme: str, n: int, gamma: int, requests: int = 250):
    data = {"name": "md", "seed": 41,
            "workload": {"arrival": {"process": "poisson", "qps": 4.0},
                         "prompt_tokens": {"kind": "uniform", "low": 64, "high": 512},
                         "output_tokens": {"kind": "uniform", "low": 150, "high": 250}, "num_requests": requests},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3-8b"},
            "drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": gamma},
            "speculation": {"kind": "multidraft", "n": n, "scheme": scheme},
            "acceptance": PAIR, "scheduler": {"kind": "vllm", "max_batch_size": 64},
            "slo": {"ttft_s": 1.0, "tpot_s": 0.05}, "outputs": {"plots": False}}
    result = simulator.run(data)
    st = result.steps[result.steps.decode_seqs > 0]
    return float(st.accepted_tokens.sum() / st.decode_seqs.sum()), float(result.summary["tpot_mean_s"])


def run() -> Outcome:
    from simulator.config.speculation import PairAcceptanceConfig
    from simulator.speculation.shapes import pair_distributions
    from theory.multidraft_optimal import optimal_acceptance, optimal_coupling, sample_optimal

    p, q = pair_distributions(PairAcceptanceConfig(**PAIR))
    checks = []
    for n in NS:
        tau, _ = _run("optimal", n, 1, 400)
        best = optimal_acceptance(p, q, n)
        checks.append(Check(f"DES acceptance at γ=1, n={n} vs the optimum", "published formula", SOURCE, best, tau,
                            0.015 * best))
    samples = sample_optimal(optimal_coupling(p, q, 3), 200_000, np.random.default_rng(43))
    checks.append(Check("optimal coupling n=3: acceptance of its samples", "published claim", SOURCE,
                        optimal_acceptance(p, q, 3), float(samples.output_is_draft.mean()), 4e-3))
    freq = np.bincount(samples.output, minlength=len(p)) / len(samples.output)
    checks.append(Check("optimal coupling n=3: max |output frequency − p|", "published claim", SOURCE, 0.0,
                        float(np.abs(freq - p).max()), 4e-3, "≤"))
    rows = []
    for n in NS:
        for scheme in SCHEMES:
            tau, tpot = _run(scheme, n, 3)
            rows.append({"n": n, "scheme": scheme, "tokens_per_step": tau + 1.0, "tpot_ms": 1e3 * tpot})
    data = pd.DataFrame(rows)
    wide = data.pivot(index="n", columns="scheme", values="tokens_per_step")
    margin = (wide["optimal"] - wide[["rrs", "kseq", "naive"]].max(axis=1)).min()
    checks.append(Check("DES γ=3: smallest optimal − best of rrs/kseq/naive over n", "published claim", SOURCE,
                        0.0, float(margin), 1e-9, "≥"))
    checks.append(Check("DES γ=3: smallest optimal_wor − rrs_wor over n", "published claim", SOURCE, 0.0,
                        float((wide["optimal_wor"] - wide["rrs_wor"]).min()), 1e-9, "≥"))
    figure, ax = new_figure()
    for scheme in SCHEMES:
        ax.plot(wide.index, wide[scheme], "o-", label=scheme)
    ax.set(xlabel="drafts n", ylabel="tokens per step (DES, γ = 3)", title="Multi-draft verifiers in serving")
    ax.legend(fontsize=7)
    return Outcome(data, checks, figure)


REPRODUCTION = Reproduction(
    name="multidraft-optimal-des", title="The optimal multi-draft verifier in a serving run (DES)",
    citation="Khisti et al. ICLR 2025 (arXiv:2410.18234); Hu et al. 2025 (arXiv:2502.18779)",
    run=run)
