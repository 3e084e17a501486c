"""DistServe (Zhong et al., OSDI 2024), Figure 1 / §2.2: colocated vs disaggregated goodput per GPU.

Published setup: a 13B model (Llama-2-13B here, from the catalog), 512 input / 64 output tokens, NVIDIA
A100 80GB, SLOs P90 TTFT ≤ 0.4 s and P90 TPOT ≤ 0.04 s (i.e. ≥ 90 % of requests meet both).
Published numbers: colocated (vLLM, one GPU) goodput 1.6 req/s; one GPU serving only prefill 5.6 req/s
(TTFT SLO), only decoding 10 req/s (TPOT SLO); 2 prefill + 1 decode GPUs therefore 10 req/s, ≈3.3 req/s
per GPU, ≈2.1× the colocated per-GPU goodput ("assuming negligible KV transfer").

Simulated (nothing fitted): the DES on the A100 (fp16; kernels priced from the measured A100 tables,
aiconfigurator-core's a100_sxm vLLM 0.14 kernels, the roofline where they have no entry), vllm
prefill-first batching, Poisson arrivals, 300 requests, seed 0; goodput = the highest rate at which ≥ 90 %
of requests meet both SLOs (bisection, simulator.workflows.goodput). The serving engine is the paper's:
its colocated baseline was vLLM v0.2.3 ("the last version released before the paper submission",
LLMServe/DistServe evaluation docs; branch distserve-baseline-vllm), run with fp16, block size 16,
--max-num-seqs 1024, --max-num-batched-tokens 65536 and --gpu-memory-utilization 0.92
(distserve/evaluation/2-benchmark-serving/2-start-api-server.py), so `cluster.engine` is vLLM 0.2.3: a
synchronous V0 engine without CUDA graphs (they came with v0.2.6), every pass issued eagerly
(profiles/data/engine_time/frameworks.yaml); the scheduler limits do not bind here. The paper does not
name its host CPU: the default host is used. The disaggregated run moves every request's KV cache
(≈0.42 GB) over NVLink with contention; prefill-only / decode-only goodput are measured as in the paper:
one prefill GPU with an ample decode pool under the TTFT SLO alone, one decode GPU fed by an ample prefill
pool under the TPOT SLO alone.

What is checked: the *relative* quantities — the per-GPU gain of disaggregation (published 2.1×), the
paper's arithmetic 2P+1D = min(2·prefill-only, decode-only) against the DES of the real 2P+1D layout, and
the paper's claims that each phase alone and the disaggregated layout beat colocation per GPU. The
absolute rates are reported next to the published ones but not checked: the simulated A100 serves every
configuration ≈2–3× faster than the 2023 systems the paper measured (today's kernels; V0's host work is
a lower-bound stand-in) (measured 2026-11-26: colocated 4.75 vs 1.6, prefill-only 16.9 vs 5.6,
decode-only 21.9 vs 10, 2P+1D 22.1 vs 10 req/s, i.e. 7.4 vs 3.3 req/s per GPU).

Measured gain 1.55× vs published 2.08× (−25 %): outside the check's ±0.45, so this reproduction's first
check FAILS (1.85 when the reproduction was written, 1.636 before the engine-time change 36fd97e and 1.628
after it, all with the measured tables' vLLM 0.14 defaults, which were not the paper's engine). Where the gap is: colocated / prefill-only agrees with the
paper (0.28 vs 0.29: the prefill–decode interference of a prefill-first engine is reproduced), but
decode-only / prefill-only does not (1.30 vs 1.79): the simulated decode GPU serves fewer requests
relative to a prefill GPU than the paper's did. The 2P+1D DES agrees with the paper's min(2P, D)
arithmetic within 1 % (decode-bound in both), and the KV transfer (≈1.7 ms on NVLink) is indeed
negligible. Runtime ≈ 20 s.
"""
from __future__ import annotations

import pandas as pd

from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure
from simulator.workflows.goodput import colocated, disaggregated, max_goodput

SOURCE = "Zhong et al., DistServe, OSDI 2024 (arXiv:2401.09670), Figure 1 and §2.2"
PUBLISHED = {"colocated": 1.6, "prefill_only": 5.6, "decode_only": 10.0, "disaggregated_2p1d_per_gpu": 10.0 / 3}
TTFT_S, TPOT_S, ATTAINMENT = 0.4, 0.04, 0.9
REL_TOL = 0.03
BASE = {
    "name": "distserve", "seed": 0,
    "workload": {"arrival": {"process": "poisson", "qps": 1.0}, "prompt_tokens": {"kind": "fixed", "value": 512},
                 "output_tokens": {"kind": "fixed", "value": 64}, "num_requests": 300},
    "cluster": {"hardware": "a100-80gb", "model": "llama-2-13b", "dtype": "fp16", "gpu_memory_utilization": 0.92,
                "engine": {"framework": "vllm", "version": "0.2.3"}},
    "scheduler": {"kind": "vllm", "max_batch_size": 1024, "max_batched_tokens": 65536},
    "slo": {"ttft_s": TTFT_S, "tpot_s": TPOT_S, "attainment": ATTAINMENT},
    "outputs": {"plots": False},
}


def _with_slo(data: dict, **slo) -> dict:
    return dict(data, slo=dict(slo, attainment=ATTAINMENT))


def run() -> Outcome:
    configs = {
        "colocated": (colocated(BASE, 1, 1, 1), 1),
        "disaggregated_2p1d": (disaggregated(BASE, (2, 1, 1), (1, 1, 1)), 3),
        "prefill_only": (_with_slo(disaggregated(BASE, (1, 1, 1), (4, 1, 1)), ttft_s=TTFT_S), 1),
        "decode_only": (_with_slo(disaggregated(BASE, (4, 1, 1), (1, 1, 1)), tpot_s=TPOT_S), 1),
    }
    results = {name: max_goodput(data, rel_tol=REL_TOL) for name, (data, _) in configs.items()}
    rate = {name: g.rate_rps for name, g in results.items()}
    per_gpu = {name: rate[name] / configs[name][1] for name in configs}
    rows = []
    for name, g in results.items():
        for r, a in g.curve:
            rows.append({"configuration": name, "gpus_counted": configs[name][1], "rate_rps": r,
                         "rate_per_gpu_rps": r / configs[name][1], "slo_attainment": a,
                         "goodput_rps": g.rate_rps, "goodput_per_gpu_rps": per_gpu[name]})
    data = pd.DataFrame(rows)
    published_gain = PUBLISHED["disaggregated_2p1d_per_gpu"] / PUBLISHED["colocated"]
    gain = per_gpu["disaggregated_2p1d"] / per_gpu["colocated"]
    formula = min(2 * rate["prefill_only"], rate["decode_only"])
    checks = [
        Check("goodput/GPU gain of 2 prefill + 1 decode over colocated (×)", "published value", SOURCE,
              published_gain, gain, 0.45),
        Check("2P+1D goodput (DES, with KV transfer) / min(2·prefill-only, decode-only)", "published formula",
              SOURCE + ": 2P+1D rate = min(2×5.6, 10) assuming negligible KV transfer", 1.0,
              rate["disaggregated_2p1d"] / formula, 0.2),
        Check("prefill-only goodput / colocated goodput (one GPU)", "published claim", SOURCE, 1.0,
              rate["prefill_only"] / rate["colocated"], 0.0, "≥"),
        Check("decode-only goodput / colocated goodput (one GPU)", "published claim", SOURCE, 1.0,
              rate["decode_only"] / rate["colocated"], 0.0, "≥"),
        Check("disaggregated goodput/GPU / colocated goodput/GPU", "published claim", SOURCE, 1.0, gain, 0.0, "≥"),
    ]
    notes = [f"{name}: simulated {per_gpu[name]:.2f} req/s per GPU ({rate[name]:.2f} req/s), published "
             f"{PUBLISHED.get(name, PUBLISHED['disaggregated_2p1d_per_gpu']):.2f} req/s per GPU (absolute rates "
             f"not checked, see the module docstring)" for name in configs]
    figure, ax = new_figure()
    for name in ("colocated", "disaggregated_2p1d"):
        part = data[data.configuration == name]
        ax.plot(part.rate_per_gpu_rps, part.slo_attainment * 100, "o-", label=f"{name} ({per_gpu[name]:.2f}/GPU)")
    ax.axhline(ATTAINMENT * 100, color="gray", ls="--", lw=0.8)
    ax.set_xlabel("request rate per GPU (req/s)")
    ax.set_ylabel("requests meeting TTFT ≤ 0.4 s and TPOT ≤ 0.04 s (%)")
    ax.set_title("DistServe Fig. 1: 13B, 512 in / 64 out, A100 (DES)")
    ax.legend()
    return Outcome(data, checks, figure, notes)


REPRODUCTION = Reproduction(
    name="distserve", title="Colocated vs disaggregated prefill/decode goodput per GPU (DistServe Fig. 1)",
    citation="Zhong et al. DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large "
             "Language Model Serving. OSDI 2024 (arXiv:2401.09670), Figure 1 / §2.2",
    run=run)
