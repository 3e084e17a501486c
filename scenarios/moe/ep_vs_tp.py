"""MoE serving on 8 and 16 H100s: expert parallelism (EP) vs tensor parallelism (TP), with and without
Speculative-MoE pre-scheduling, with and without speculative decoding — per decode step, what share of
the time is the MoE all-to-all, and what throughput per GPU follows.

An analytic companion of the DES grid (scenarios/moe/des_grid.py, full DES runs with queueing): this
prices one decode step directly: the op graph of the target (models.opgraph, EP layout of
models.step.Parallelism) on the H100 roofline, with every MoE dispatch/combine re-priced on the link
topology (simulator.cost.collectives: same-node traffic over NVLink, other nodes over the NICs, busiest port).
Pre-scheduling multiplies the all-to-all volume by theory.moe_prescheduling's de-duplicated remote
ranks at the given predictor accuracy and expert-group affinity over those without it (the token move
rides on the preceding collective). Speculative decoding: γ draft tokens per request from a small draft
model (priced at tp = 1 on every GPU for its share of the requests), verified in one target pass of
γ+1 query tokens per request (more distinct experts touched, more tokens dispatched); tokens per step
are Leviathan's (1 − α^(γ+1)) / (1 − α).

Assumptions (all printed): 16 requests per GPU in decode with 2000 tokens of context each, uniform
routing, balanced DP-attention groups, α = 0.7, γ = 3, predictor accuracy 0.9 and affinity 0.8
(hit rate 0.72) — illustrative values, not measurements.

Run:  python -m scenarios.moe.ep_vs_tp
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import pandas as pd

from models import get_model
from models.errors import doc_description, run_script, script_args
from models.moe_routing import ExpertPlacement, UniformRouting, expected_ep_load
from models.opgraph import step_ops
from models.step import Parallelism, StepShape
from profiles.roofline import RooflineLatencyModel
from simulator.cost.collectives import Topology, ep_alltoall_s
from theory.chain import expected_tokens
from theory.moe_prescheduling import hit_rate, remote_ranks_per_token
from scenarios.tables import print_and_save
from simulator.results.output_folder import file_flag

HARDWARE = "h100-sxm"
DRAFTERS = {"mixtral-8x7b": "llama-68m", "qwen3-30b-a3b": "qwen2.5-coder-0.5b"}


@dataclass(frozen=True)
class Setup:
    requests_per_gpu: int = 16
    context_tokens: int = 2000
    alpha: float = 0.7
    gamma: int = 3
    prediction_accuracy: float = 0.9
    affinity: float = 0.8


def layouts(model: str, gpus: int) -> list[tuple[str, Parallelism, int]]:
    """(label, parallelism, replicas) filling `gpus` GPUs."""
    spec = get_model(model)
    out = [(f"TP{min(gpus, 8)} ×{max(1, gpus // 8)}", Parallelism(tp=min(gpus, 8)), max(1, gpus // 8))]
    if spec.num_experts % gpus == 0:
        out.append((f"EP{gpus} (DP attention)", Parallelism(tp=1, ep=gpus), 1))
    out.append(("EP8 ×{}".format(gpus // 8) if gpus > 8 else "EP8 tp2 (4 groups)",
                Parallelism(tp=1 if gpus > 8 else 2, ep=8), gpus // 8))
    return out


def alltoall_seconds(spec, par: Parallelism, tokens: int, topology: Topology, presched: float) -> float:
    """One dispatch + one combine of one MoE layer on the topology for the step's `tokens` (spread evenly
    over the ep ranks), the volume scaled by `presched` (1 = no pre-scheduling). Expected traffic is
    linear in the tokens, so the send matrix for one token per rank is scaled."""
    ep = par.ep
    unit = expected_ep_load(UniformRouting(spec.num_experts), ExpertPlacement.contiguous(spec.num_experts, ep), 1,
                            spec.experts_per_token).send_tokens
    return 2 * ep_alltoall_s(topology, unit * (tokens / ep) * presched, spec.hidden_size * 2.0)


def price(model: str, gpus: int, label: str, par: Parallelism, replicas: int, speculative: bool,
          prescheduling: bool, setup: Setup, latency: RooflineLatencyModel) -> dict:
    spec = get_model(model)
    gpus_per_replica = par.gpus
    requests = setup.requests_per_gpu * gpus_per_replica
    q = setup.gamma + 1 if speculative else 1
    shape = StepShape(decode_seqs=requests, query_tokens_per_seq=q, decode_context_tokens=requests * setup.context_tokens)
    ops = step_ops(spec, shape, par)
    alltoall_ops = [op for op in ops if op.name in ("moe_dispatch", "moe_combine")]
    compute_s = sum(op.count * latency.op_seconds(op) for op in ops if op not in alltoall_ops)
    a2a_s = 0.0
    if par.ep > 1:
        topology = Topology.from_hardware(HARDWARE, num_nodes=max(1, par.ep // 8))
        scale = 1.0
        if prescheduling:
            scale = remote_ranks_per_token(setup.prediction_accuracy, setup.affinity, par.ep, spec.experts_per_token) \
                / remote_ranks_per_token(0.0, 0.0, par.ep, spec.experts_per_token)
        a2a_s = spec.num_moe_layers * alltoall_seconds(spec, par, requests * q, topology, scale)
    draft_s = 0.0
    if speculative:
        draft = get_model(DRAFTERS[model])
        per_gpu = setup.requests_per_gpu
        for j in range(setup.gamma):
            dshape = StepShape(decode_seqs=per_gpu, decode_context_tokens=per_gpu * (setup.context_tokens + j))
            draft_s += sum(op.count * latency.op_seconds(op) for op in step_ops(draft, dshape, Parallelism()))
    step_s = compute_s + a2a_s + draft_s
    tokens = expected_tokens(setup.alpha, setup.gamma) if speculative else 1.0
    return {"model": model, "gpus": gpus, "layout": label, "spec_decoding": speculative,
            "prescheduling": prescheduling and par.ep > 1, "step_ms": step_s * 1e3, "alltoall_ms": a2a_s * 1e3,
            "alltoall_share": a2a_s / step_s, "draft_ms": draft_s * 1e3,
            "tokens_per_s_per_gpu": requests * replicas * tokens / step_s / gpus}


def table(setup: Setup = Setup(), models=("mixtral-8x7b", "qwen3-30b-a3b"), gpu_counts=(8, 16)) -> pd.DataFrame:
    latency = RooflineLatencyModel(HARDWARE)
    rows = []
    for model in models:
        for gpus in gpu_counts:
            for label, par, replicas in layouts(model, gpus):
                for speculative in (False, True):
                    for pre in ((False, True) if par.ep > 1 else (False,)):
                        rows.append(price(model, gpus, label, par, replicas, speculative, pre, setup, latency))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--csv", type=file_flag("--csv"), help="also write the table to this CSV file")
    args = script_args(parser, argv)
    setup = Setup()
    print(f"assumptions: {setup}, hit rate {hit_rate(setup.prediction_accuracy, setup.affinity):.2f}, "
          f"hardware {HARDWARE}, roofline latency model, uniform routing")
    frame = table(setup)
    print_and_save(frame, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
