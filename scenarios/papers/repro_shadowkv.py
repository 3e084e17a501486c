"""ShadowKV (Sun et al. 2024, arXiv 2410.21465): long-context decode throughput from a KV layout that keeps
low-rank keys and chunk landmarks on the GPU and the values in host memory (simulator.cost.shadowkv).

Setting: Llama-3.1-8B on one A100-80GB (the paper's GPU), rank 160, 8-token chunks, a 2,048-token sparse
budget (1.56 % of 128k), contexts 32k / 64k / 120k. For each layout the batch is the most requests of that
context the replica's KV capacity holds (the factory's memory model), and decode throughput is batch /
step seconds from the simulator's own step prices (measured kernels + engine time).

Checks:
- model identity: the KV capacity ratio equals 2D / (r + D/chunk) (D = KV heads × head dim);
- published claim (abstract: "up to 6× larger batch sizes"): the batch ratio at 120k is at least 6 — the
  layout here is ShadowKV's without its outlier chunks and per-request right factors, so it can only hold
  more;
- published claim (abstract: "boost throughput by up to 3.04×"): the decode-throughput ratio is above 1
  at 120k and at most 3.04 at every context — ShadowKV's cache of recently fetched chunks (~60 % less
  fetching, which the paper counts) is not modelled, so the fetch is an upper bound and the gain a lower
  one. At 32k the model finds a loss (0.71×): fetching 2,048 values per request over PCIe for ~7× more
  requests costs more than reading the paged batch's whole KV from HBM (reported in the notes).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE = "Sun et al. 2024, ShadowKV: KV Cache in Shadows for High-Throughput Long-Context LLM Inference (arXiv:2410.21465)"
CONTEXTS = (32768, 65536, 122880)
RANK, CHUNK, BUDGET = 160, 8, 2048


def _kind(kv_layout: dict):
    from pathlib import Path

    from simulator.cluster.build import pool_kind
    from simulator.config.scenario import parse_scenario
    sc = parse_scenario({"name": "shadowkv", "seed": 1,
                         "workload": {"arrival": {"process": "poisson", "qps": 1},
                                      "prompt_tokens": {"kind": "fixed", "value": 1024},
                                      "output_tokens": {"kind": "fixed", "value": 128}, "num_requests": 1},
                         "cluster": {"hardware": "a100-80gb", "model": "llama-3.1-8b",
                                     "kv_cache": {"layout": kv_layout}}})
    return pool_kind(sc, None, "cluster", 1, Path("."))


def run() -> Outcome:
    shadow = _kind({"kind": "shadowkv", "rank": RANK, "sparse_budget": BUDGET, "chunk_tokens": CHUNK})
    paged = _kind({"kind": "paged"})
    rows = []
    for context in CONTEXTS:
        for layout, kind in (("paged", paged), ("shadowkv", shadow)):
            batch = kind.kv_tokens // (context + 1024)
            _, target = kind.cost.decode_steps(batch, np.array([batch * context]))
            rows.append({"context": context, "layout": layout, "batch": int(batch),
                         "step_ms": 1e3 * target[0, 0], "decode_tokens_per_s": batch / target[0, 0]})
    data = pd.DataFrame(rows)
    wide = data.pivot(index="context", columns="layout", values=["batch", "decode_tokens_per_s"])
    batch_ratio = (wide["batch"]["shadowkv"] / wide["batch"]["paged"]).to_numpy()
    gain = (wide["decode_tokens_per_s"]["shadowkv"] / wide["decode_tokens_per_s"]["paged"]).to_numpy()
    d = 8 * 128
    checks = [
        Check("KV capacity ratio = 2D/(r + D/chunk)", "model identity", "simulator.cost.shadowkv",
              2 * d / (RANK + d / CHUNK), shadow.kv_tokens / paged.kv_tokens, 1e-3),
        Check("batch ratio at 120k context (abstract: up to 6× larger batches)", "published claim",
              SOURCE + ", abstract", 6.0, float(batch_ratio[-1]), 0.0, "≥"),
        Check("decode-throughput gain at 120k context (> 1: the paper's long-context regime)", "published claim",
              SOURCE, 1.0, float(gain[-1]), 0.0, "≥"),
        Check("largest decode-throughput gain (abstract: up to 3.04× on an A100)", "published claim",
              SOURCE + ", abstract", 3.04, float(gain.max()), 0.0, "≤"),
    ]
    figure, ax = new_figure()
    for layout, part in data.groupby("layout"):
        ax.plot(part.context / 1024, part.decode_tokens_per_s, "o-", label=f"{layout} (batch {list(part.batch)})")
    ax.set(xlabel="context (k tokens)", ylabel="decode tokens/s at the largest batch that fits",
           title="ShadowKV vs paged KV, Llama-3.1-8B on an A100-80GB (DES step prices)")
    ax.legend(fontsize=7)
    notes = [f"decode-throughput gain {', '.join(f'{g:.2f}×' for g in gain)} at {', '.join(str(c) for c in CONTEXTS)} "
             f"tokens; batch ratio {', '.join(f'{b:.1f}' for b in batch_ratio)}"]
    return Outcome(data, checks, figure, notes)


REPRODUCTION = Reproduction(
    name="shadowkv-long-context", title="ShadowKV: larger long-context batches from low-rank keys and offloaded values",
    citation="Sun et al. ShadowKV: KV Cache in Shadows for High-Throughput Long-Context LLM Inference. "
             "arXiv:2410.21465 (ICML 2025)",
    run=run)
