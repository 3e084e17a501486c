"""MoE serving in the DES: EP vs TP on 8 and 16 H100s, with and without Speculative-MoE pre-scheduling,
with and without speculative decoding — TPOT at a moderate load, all-to-all share of the busy time, and
saturated output throughput per GPU.

Every row is a full DES run (simulator.cost.moe prices the EP steps: straggler expert GEMMs, dispatch and
combine on the link topology; TP rows shard the experts over the TP ranks, no all-to-all). Workload:
prompts lognormal (median 1000), outputs uniform 64–512, 400 requests per 8 GPUs, seed 7; "load" runs at 5 req/s
per GPU, "saturated" at 1000 req/s (all requests queued at once: output tokens/s per GPU is the
capacity). Speculative decoding: a small draft model (γ = 3, constant α = 0.7) priced at drafter tp = 1
for the whole replica batch (pessimistic alike for TP and EP: DP-attention groups would draft in
parallel). Pre-scheduling: hit rate 0.72 (predictor accuracy 0.9 × affinity 0.8, illustrative).

Run:  python -m scenarios.moe.des_grid [--csv FILE] [--requests N]
"""
from __future__ import annotations

import argparse

import pandas as pd

from models.errors import bounded, doc_description, run_script, script_args
from simulator.api import run
from scenarios.tables import print_and_save
from simulator.results.output_folder import file_flag

DRAFTERS = {"mixtral-8x7b": "llama-68m", "qwen3-30b-a3b": "qwen2.5-coder-0.5b"}
HIT_RATE = 0.72


def layouts(model: str, gpus: int) -> list[tuple[str, dict, int]]:
    """(label, parallelism, replicas) filling `gpus` GPUs."""
    experts = {"mixtral-8x7b": 8, "qwen3-30b-a3b": 128}[model]
    out = [(f"TP8 ×{gpus // 8}", {"tp": 8}, gpus // 8)]
    if experts % gpus == 0:
        out.append((f"EP{gpus}" + (" (2 nodes)" if gpus > 8 else ""), {"tp": 1, "ep": gpus}, 1))
    if gpus > 8:
        out.append((f"EP8 ×{gpus // 8}", {"tp": 1, "ep": 8}, gpus // 8))
    return out


def scenario(model: str, par: dict, replicas: int, speculative: bool, hit: float, qps: float, requests: int) -> dict:
    data = {
        "name": "moe_grid", "seed": 7,
        "workload": {"arrival": {"process": "poisson", "qps": qps},
                     "prompt_tokens": {"kind": "lognormal", "median": 1000, "sigma": 0.6, "max": 8192},
                     "output_tokens": {"kind": "uniform", "low": 64, "high": 512}, "num_requests": requests},
        "cluster": {"hardware": "h100-sxm", "model": model, "dtype": "bf16", "replicas": replicas,
                    "parallelism": par, "router": "least_outstanding",
                    "moe": {"prescheduling_hit_rate": hit}},
        "scheduler": {"kind": "vllm", "max_batch_size": 256, "max_batched_tokens": 8192},
        "outputs": {"plots": False},
    }
    if speculative:
        data["drafter"] = {"kind": "draft_model", "model": DRAFTERS[model], "gamma": 3}
        data["acceptance"] = {"kind": "constant", "alpha": 0.7}
    return data


def table(models=("qwen3-30b-a3b", "mixtral-8x7b"), gpu_counts=(8, 16), requests: int = 400) -> pd.DataFrame:
    rows = []
    for model in models:
        for gpus in gpu_counts:
            for label, par, replicas in layouts(model, gpus):
                for speculative in (False, True):
                    for pre in ((False, True) if par.get("ep", 1) > 1 else (False,)):
                        hit = HIT_RATE if pre else 0.0
                        n = requests * gpus // 8
                        load = run(scenario(model, par, replicas, speculative, hit, 5.0 * gpus, n)).summary
                        sat = run(scenario(model, par, replicas, speculative, hit, 1000.0, n)).summary
                        rows.append({"model": model, "gpus": gpus, "layout": label, "spec_decoding": speculative,
                                     "prescheduling": pre, "tpot_p50_ms": load["tpot_p50_s"] * 1e3,
                                     "ttft_p50_ms": load["ttft_p50_s"] * 1e3,
                                     "alltoall_share": load.get("alltoall_time_fraction", 0.0),
                                     "saturated_tok_s_per_gpu": sat["output_tokens_per_s"] / gpus,
                                     "saturated_alltoall_share": sat.get("alltoall_time_fraction", 0.0)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--csv", type=file_flag("--csv"), help="also write the table to this CSV file")
    parser.add_argument("--requests", type=bounded(), default=400)
    args = script_args(parser, argv)
    frame = table(requests=args.requests)
    print_and_save(frame, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
