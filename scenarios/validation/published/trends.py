"""The speculative-decoding trends a planner needs, from draftsim's defaults and acceptance taken from the
published registry or a measured trace — nothing tuned to the trends:

1. speedup falls with batch (EAGLE-3, Llama-3.1-8B, H100, SGLang, chain 3);
2. the best MTP depth is small (DeepSeek-V3, 8×H200 EP8, vLLM, MTP reused for γ positions);
3. a tree wins at batch 1 and loses at large batch (Qwen2.5-Coder-1.5B with its 0.5B draft on H100, the
   project's measured trace, which prices chains and trees from the same greedy runs);
4. a draft model pays off on a large target and much less on a small one (vicuna-68m drafting for
   Vicuna-7B and Vicuna-33B on one A100, Spec-Bench's acceptance of that pair on those targets), and the
   reason SpecDecode-Bench gives for it: Llama-3.2-1B's forward is a much smaller fraction of a 70B TP4
   target's than of an 8B one's (`draft_cost_ratio`, against the study's stated ~12.5 % and ~37.5 %).

Each is an offline batch (all requests at t = 0, as the EAGLE-3 paper's Table 3 and the SpecDecode-Bench
study measure), speedup = output-token throughput with / without speculation.

    python -m scenarios.validation.published.trends [--requests N]
"""
from __future__ import annotations

import argparse

from models.errors import bounded, doc_description, run_script, script_args

PROMPT_TOKENS, OUTPUT_TOKENS = 128, 256


def _scenario(model: str, hardware: str, batch: int, requests: int, drafter: dict, acceptance: dict,
              speculation: dict | None = None, cluster: dict | None = None, framework: str = "vllm") -> dict:
    return {
        "name": "trend", "seed": 0,
        "workload": {"arrival": {"process": "closed_loop", "concurrency": batch}, "num_requests": requests,
                     "prompt_tokens": {"kind": "fixed", "value": PROMPT_TOKENS},
                     "output_tokens": {"kind": "fixed", "value": OUTPUT_TOKENS}},
        "cluster": {"hardware": hardware, "model": model, "dtype": "bf16", "latency": {"framework": framework},
                    **(cluster or {})},
        "drafter": drafter, "acceptance": acceptance, "speculation": speculation or {"kind": "chain"},
        "scheduler": {"kind": "vllm", "max_batch_size": batch, "max_batched_tokens": 16384},
        "outputs": {"plots": False},
    }


def _throughput(data: dict) -> float:
    import simulator
    result = simulator.run(data)
    req = result.requests
    return float(req["output_tokens"].sum()) / float(req["finish_s"].max() - req["arrival_s"].min())


def speedup(model, hardware, batch, requests, drafter, acceptance, speculation=None, cluster=None,
            framework="vllm") -> float:
    base = _throughput(_scenario(model, hardware, batch, requests, {"kind": "none"}, {"kind": "constant"},
                                 None, cluster, framework))
    spec = _throughput(_scenario(model, hardware, batch, requests, drafter, acceptance, speculation, cluster,
                                 framework))
    return spec / base


def batch_trend(requests: int) -> list[tuple]:
    acc = {"kind": "published", "entry": "vllm-issue20780-eagle3-llama-3.1-8b-mt-bench-k3"}
    return [(b, speedup("llama-3.1-8b", "h100-sxm", b, max(requests, 2 * b), {"kind": "eagle3", "gamma": 3}, acc,
                        framework="sglang"))
            for b in (1, 4, 16, 64)]


MTP_ACCEPTANCE = {
    "geometric": {"kind": "published", "entry": "nebius-card-mtp-original-deepseek-v3-0324-k7-temp0"},
    "decayed": {"kind": "published", "entry": "nebius-card-mtp-original-deepseek-v3-0324-k7-temp0",
                "first_alpha_entry": "deepseek-v3-report-mtp-second-token"},
}


def mtp_depth_trend(requests: int) -> list[tuple]:
    """Both conversions of the published DeepSeek-V3 MTP figures: one geometric α from τ = 3.20 at 7 positions,
    and α₁ = 0.875 (the report's second-token acceptance) decaying to that τ."""
    cluster = {"dtype": "fp8_block", "parallelism": {"tp": 1, "pp": 1, "ep": 8}, "moe": {"routing": "uniform"}}
    rows = []
    for rule, acc in MTP_ACCEPTANCE.items():
        for b in (1, 32):
            for gamma in (1, 2, 3, 4, 6):
                rows.append((rule, b, gamma, speedup("deepseek-v3", "h200", b, max(requests, 2 * b),
                                                     {"kind": "mtp", "gamma": gamma}, acc, cluster=cluster)))
    return rows


def tree_trend(requests: int) -> list[tuple]:
    acc = {"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "draft"}
    draft = {"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 4}
    tree = {"kind": "tree", "builder": "kary", "k": 2, "depth": 4}
    rows = []
    for b in (1, 8, 32, 64):
        n = max(requests, 2 * b)
        chain = speedup("qwen2.5-coder-1.5b", "h100-sxm", b, n, draft, acc)
        wide = speedup("qwen2.5-coder-1.5b", "h100-sxm", b, n, draft, acc, speculation=tree)
        rows.append((b, chain, wide))
    return rows


# vLLM runs a draft model from v0.15.0 (0.11-0.14 raise at start-up; profiles.engine_time.support); the A100
# tables are of 0.14.0, whose engine-time entry (0.14-0.28) 0.15.0 shares
DRAFT_MODEL_ENGINE = {"engine": {"version": "0.15.0"}}


def draft_model_trend(requests: int) -> list[tuple]:
    rows = []
    for target, size in (("vicuna-7b", "7b"), ("vicuna-33b", "33b")):
        acc = {"kind": "published", "entry": f"spec-bench-sps-vicuna-{size}-a100-80gb", "depth": 4}
        for b in (1, 16):
            rows.append((target, b, speedup(target, "a100-80gb", b, max(requests, 2 * b),
                                            {"kind": "draft_model", "model": "llama-68m", "gamma": 4}, acc,
                                            cluster=DRAFT_MODEL_ENGINE)))
    return rows


# SpecDecode-Bench (arXiv 2601.11580, project page 'End-to-End Performance'): on vLLM with H100s, Llama-3.2-1B's
# draft forward takes ~12.5 % of Llama-3-70B's forward (TP4) and ~37.5 % of an 8B target's (one GPU).
PUBLISHED_DRAFT_RATIO = {"llama-3-70b": 0.125, "llama-3.1-8b": 0.375}


def draft_cost_ratio() -> list[tuple]:
    """(target, tp, draftsim's draft forward / target forward, published) for Llama-3.2-1B drafting on vLLM
    0.15.0 (draft_model, chain of 3, the vLLM pass layout; 0.11-0.14 refuse a draft model, and 0.11.1, used
    here before, gives the same ratios) at batch 1: draft kernels per pass over the target step without its
    engine host work (both are forward-pass times)."""
    import numpy as np
    from simulator.api import prepare
    rows = []
    for target, tp in (("llama-3.1-8b", 1), ("llama-3-70b", 4)):
        data = _scenario(target, "h100-sxm", 1, 1, {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3,
                                                    "tp": tp, "passes": "vllm"},
                         {"kind": "constant", "alpha": 0.7}, None, {"parallelism": {"tp": tp}})
        data["cluster"]["latency"]["engine_version"] = "0.15.0"
        cost = prepare(data).cluster.replicas[0].cost
        draft, target_cost = cost.decode_steps(1, np.array([512]))
        per_pass = draft[0][0] / 3
        target_forward = target_cost[0][0] - target_cost[0][3]   # seconds minus the engine's host work
        rows.append((target, tp, float(per_pass / target_forward), PUBLISHED_DRAFT_RATIO[target]))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--requests", type=bounded(), default=32, help="requests per run (at least 2 × the batch)")
    args = script_args(parser, argv)
    n = args.requests
    print("1. EAGLE-3 chain 3, Llama-3.1-8B, H100, SGLang: speedup by batch")
    for b, s in batch_trend(n):
        print(f"   batch {b:3d}: {s:.2f}x")
    print("2. DeepSeek-V3 MTP (one module reused), 8xH200 EP8, vLLM: speedup by depth γ")
    for rule, b, g, s in mtp_depth_trend(n):
        print(f"   {rule:9s} batch {b:3d} γ {g}: {s:.2f}x")
    print("3. Qwen2.5-Coder-1.5B + 0.5B draft (measured trace), H100: chain γ=4 vs binary tree of depth 4")
    for b, c, t in tree_trend(n):
        print(f"   batch {b:3d}: chain {c:.2f}x  tree {t:.2f}x  ({'tree' if t > c else 'chain'} wins)")
    print("4. vicuna-68m draft model (γ = 4 assumed; Spec-Bench acceptance), one A100: 7B vs 33B target")
    for target, b, s in draft_model_trend(n):
        print(f"   {target:11s} batch {b:3d}: {s:.2f}x")
    print("5. Llama-3.2-1B draft forward / target forward on vLLM 0.15.0, H100, batch 1 (SpecDecode-Bench's text)")
    for target, tp, ratio, published in draft_cost_ratio():
        print(f"   {target:12s} TP{tp}: {ratio:.3f} (published ~{published:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
