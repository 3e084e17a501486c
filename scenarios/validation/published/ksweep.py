"""Where vLLM's per-draft-token cost comes from: the EAGLE / EAGLE-3 K sweep of vLLM issue #20780 (vLLM V1 of
2025-07, ~0.9.2, one H100, Llama-3.1-8B-Instruct, batch 1) against the proposer's structure priced with
measured per-op host costs — a diagnosis, not a fit: nothing here sets a constant.

Published step time = TPOT × acceptance length (both from the issue's tables); its growth per extra draft
token K → K + 1 is one more draft pass (the verify pass of K + 1 tokens at batch 1 is weight-bound and the
piecewise CUDA graph pads 3..8 tokens to 4 or 8).

Structure of one later draft pass (`EagleProposer.propose`, the `for _ in range(num_speculative_tokens - 1)`
loop of vllm/v1/spec_decode/eagle.py in the 0.9 releases; the same loop opens vLLM PR #15729 and survives in
the forks of that version): issued from Python one op at a time, no host sync inside the loop —
  * input and metadata update: `.int()`, `positions += 1`, `>=`, `torch.where`, `seq_lens += 1`,
    `masked_fill_` (seq lens), `//`, `block_table.gather`, `*`, `%`, `+`, `masked_fill_` (slot mapping) and the
    three copies into the CUDA-graph input buffers (ids, positions, hidden states);
  * the one-layer draft model under piecewise CUDA graphs (torch.compile split at attention): two graph
    pieces replayed and the attention op run eagerly between them (KV write + attention kernel);
  * `compute_logits`: the LM head GEMM (EAGLE-1: the target's 128,256-token head; EAGLE-3: its 32,000-token
    draft head) and, for EAGLE-3, the draft→target vocabulary map (`arange`, `+ draft_id_to_target_id`,
    `new_full(-inf)`, the index put), then `argmax`.
Host issue time = Σ ops × the measured per-op host time on the H100 server's host
(profiles/data/engine_time/launch-h100/launch-run1.json: `add_scalar_inplace` for elementwise ops,
`index_copy_kv_write` for copies, gathers and index puts, `linear`, `sdpa_decode_gqa` for the attention call,
the 8-node graph replay's wall time per piece). The Python around the ops (forward context, compiled-module
dispatch) is not measured there: the estimate is a lower bound. The pass's GPU time is draftsim's own price
of the draft pass (measured kernels). A pass costs max(host issue, GPU) on a host-paced loop.

    python -m scenarios.validation.published.ksweep
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.errors import doc_description, run_script, script_args

LAUNCH_FILE = Path(__file__).resolve().parents[3] / "profiles" / "data" / "engine_time" / "launch-h100" / "launch-run1.json"

# (op, count, measured stand-in in launch-run1.json) of one later draft pass (module docstring).
PASS_OPS = (
    ("elementwise input/metadata updates (.int, +=1, >=, where, +=1, masked_fill, //, *, %, +, masked_fill)", 11,
     "add_scalar_inplace"),
    ("block_table.gather", 1, "index_copy_kv_write"),
    ("copies into the graph input buffers (ids, positions, hidden states)", 3, "index_copy_kv_write"),
    ("piecewise graph pieces replayed (before and after attention)", 2, "graph_replay_8"),
    ("eager KV-cache write of the attention op", 1, "index_copy_kv_write"),
    ("eager attention kernel call", 1, "sdpa_decode_gqa"),
    ("LM head GEMM", 1, "linear"),
    ("argmax", 1, "add_scalar_inplace"),
)
EAGLE3_EXTRA_OPS = (
    ("draft->target vocabulary map: arange, + d2t, new_full(-inf)", 3, "add_scalar_inplace"),
    ("draft->target vocabulary map: index put", 1, "index_copy_kv_write"),
)


def measured_op_seconds(path: Path = LAUNCH_FILE) -> dict[str, float]:
    """Host seconds per op of the H100 server measurement (per kernel; graph replays: wall per replay)."""
    data = json.loads(Path(path).read_text())
    out = {name: float(v["seconds_per_kernel"]) for name, v in data["launch"].items()}
    out["graph_replay_8"] = float(data["graph_replay"]["8"]["wall_per_replay"]["median_s"])
    return out


def pass_host_seconds(method: str, costs: dict[str, float] | None = None) -> float:
    """Host issue seconds of one later draft pass of vLLM 0.9's EagleProposer (`method` eagle or eagle3)."""
    costs = costs or measured_op_seconds()
    ops = PASS_OPS + (EAGLE3_EXTRA_OPS if method == "eagle3" else ())
    return float(sum(count * costs[stand_in] for _, count, stand_in in ops))


@dataclass(frozen=True)
class SweepRow:
    method: str
    k: int
    published_step_s: float     # TPOT × acceptance length
    simulated_step_s: float     # draftsim: draft + target + engine time of a batch-1 step
    simulated_draft_s: float    # draftsim: the step's draft-pass kernels


def published_steps() -> dict[tuple[str, int], float]:
    """(method, K) → published seconds per step of vLLM issue #20780 (TPOT × acceptance length)."""
    from scenarios.validation.published.points import load_points
    from simulator.speculation.published import find_entry
    out = {}
    for p in load_points():
        if p.id.startswith("vllm-issue20780-") and p.kind == "spec_tpot":
            k = int(p.w("num_speculative_tokens"))
            out[(p.w("method"), k)] = p.seconds_or_value * find_entry(p.acceptance_entry).mean_tokens
    return out


def _scenario(method: str, k: int) -> dict:
    drafter = {"kind": "eagle3", "gamma": k} if method == "eagle3" else \
        {"kind": "head", "style": "autoregressive", "gamma": k}
    return {"name": "ksweep", "seed": 0,
            "workload": {"arrival": {"process": "closed_loop", "concurrency": 1}, "num_requests": 1,
                         "prompt_tokens": {"kind": "fixed", "value": 128},
                         "output_tokens": {"kind": "fixed", "value": 256}},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3.1-8b", "dtype": "bf16",
                        "latency": {"framework": "vllm", "engine_version": "0.9.2"}},
            "drafter": drafter, "acceptance": {"kind": "constant", "alpha": 0.7},
            "scheduler": {"kind": "sarathi", "chunk_tokens": 16384, "max_batched_tokens": 16384,
                          "max_batch_size": 1024},
            "outputs": {"plots": False}}


def sweep(context_tokens: int = 300) -> list[SweepRow]:
    """Published and simulated batch-1 step times of the issue's K = 2…7 for EAGLE-1 and EAGLE-3."""
    from simulator.api import prepare
    published = published_steps()
    rows = []
    for (method, k), step in sorted(published.items()):
        cost = prepare(_scenario(method, k)).cluster.replicas[0].cost
        draft, target = cost.decode_steps(1, np.array([context_tokens]))
        rows.append(SweepRow(method, k, step, float(draft[0][0] + target[0][0]), float(draft[0][0])))
    return rows


def per_token(rows: list[SweepRow], method: str, field: str) -> float:
    """Mean growth of `field` per extra draft token over K = 2…7 (least squares slope)."""
    pts = [(r.k, getattr(r, field)) for r in rows if r.method == method]
    ks, ys = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)
    return float(np.polyfit(ks, ys, 1)[0])


def main(argv: list[str] | None = None) -> int:
    script_args(argparse.ArgumentParser(description=doc_description(__doc__)), argv)   # (no flags: --x refused)
    rows = sweep()
    costs = measured_op_seconds()
    print("method  K  published step  simulated step  simulated draft kernels")
    for r in rows:
        print(f"{r.method:7s} {r.k}  {r.published_step_s * 1e3:8.2f} ms  {r.simulated_step_s * 1e3:8.2f} ms"
              f"  {r.simulated_draft_s * 1e3:8.2f} ms")
    for method in ("eagle", "eagle3"):
        print(f"{method}: per extra draft token published {per_token(rows, method, 'published_step_s') * 1e3:.2f} ms, "
              f"simulated {per_token(rows, method, 'simulated_step_s') * 1e3:.2f} ms (draft kernels "
              f"{per_token(rows, method, 'simulated_draft_s') * 1e3:.2f} ms); structural host issue of one pass "
              f"{pass_host_seconds(method, costs) * 1e3:.2f} ms")

    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
