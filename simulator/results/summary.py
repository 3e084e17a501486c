"""summary.json of a run, one path for every cluster: the metrics of `simulator.results.metrics.summarize`,
GPU-weighted over pools of different sizes and hardware, which sources priced the steps, KV capacity and,
for a disaggregated cluster, the per-pool counts and KV-transfer statistics."""
from __future__ import annotations

import math

import numpy as np

from simulator.results.metrics import column, summarize
from simulator.results.step_totals import StepTotals


def pricing_summary(pools, totals: StepTotals) -> dict:
    """`latency_source` (which source priced which op kinds), `engine_time` (the engine-time model, or
    None) and the share of busy time that was engine time; pools priced differently (different hardware)
    add `<pool>_latency_source` and `<pool>_engine_time`."""
    from profiles.select import describe_latency
    busy = totals.sum("duration_s")
    described = [(pool.name, describe_latency(pool.kind.latency),
                  pool.kind.engine.describe() if pool.kind.engine is not None else None) for pool in pools]
    out = {"latency_source": described[0][1], "engine_time": described[0][2],
           "engine_time_fraction": totals.sum("engine_s") / busy if busy > 0 else 0.0}
    if any(d[1:] != described[0][1:] for d in described):
        for name, latency, engine in described:
            out[f"{name}_latency_source"], out[f"{name}_engine_time"] = latency, engine
    return out


def cluster_summary(cluster, requests, end_s: float) -> dict:
    """summary.json of any cluster: the metrics of `simulator.results.metrics.summarize`, GPU-weighted over pools
    of different sizes and hardware, the pricing sources, KV capacity and, for disaggregation, the
    per-pool counts and KV-transfer statistics. Step quantities come from the step log's totals, so the
    summary does not depend on what the log keeps (`outputs.steps`). `requests`: a ColumnTable or a DataFrame."""
    scenario, pools = cluster.scenario, cluster.pools
    totals = cluster.log.totals
    first = pools[0].kind.hardware
    dtype = scenario.cluster.dtype
    single = len(pools) == 1
    summary = summarize(requests, totals, slo=scenario.slo.spec(), num_replicas=len(cluster.replicas),
                        gpus_per_replica=pools[0].kind.gpus if single else 1,
                        peak_flops_per_gpu=first.matmul_flops(dtype), peak_bw_per_gpu=first.hbm_bandwidth_bytes_per_s,
                        sim_end_s=end_s)
    if not single:
        summary.update(_pool_summary(summary, requests, totals, cluster))
    summary["scenario"] = scenario.name
    if cluster.engine_scheduler:   # the scheduler the named engine runs where the scenario gave none
        summary["engine_scheduler"] = cluster.engine_scheduler
    if cluster.engine_prefix_caching:   # the prefix caching the named engine runs where the scenario gave none
        summary["engine_prefix_caching"] = cluster.engine_prefix_caching
    summary.update(config_derived_summary(scenario, pools))
    orders = sorted({rep.limits.queue_order.name for rep in cluster.replicas if rep.limits.queue_order is not None})
    if orders:   # the waiting queue was not taken in arrival order (SGLang's --schedule-policy, given or its default)
        summary["schedule_policy"] = orders[0] if len(orders) == 1 else orders
    summary.update(pricing_summary(pools, totals))
    if single:
        summary["kv_tokens_per_replica"] = pools[0].kind.kv_tokens
        summary["gpus"] = cluster.gpus
    if totals.has_alltoall:
        duration = totals.sum("duration_s")
        summary["alltoall_time_fraction"] = totals.sum("alltoall_s") / duration if totals.steps else float("nan")
    summary.update(kv_cache_summary(cluster, requests, totals))
    from simulator.results.energy import energy_summary
    summary.update(energy_summary(cluster, totals, summary))
    if cluster.retrieval is not None:
        summary.update(cluster.retrieval.summary(end_s))
        if cluster.scenario.retrieval.kv_while_paused == "released":   # KV tokens re-prefilled after pauses
            summary["kv_released_tokens"] = sum(rep.paused.released_tokens for rep in cluster.replicas)
    return summary


def config_derived_summary(scenario, pools) -> dict:
    """What the deployment serves that the scenario left to the model's config.json and the engine, where it is
    not what the config's plain fields say: `served_dtype`, the dtype a quantized checkpoint (`quantization_config`)
    is served in (its own format where `cluster.dtype` is left out: models.quant_config), and
    `context_limit_tokens` with `context_rule`, the context the engine derives where `cluster.max_model_len` is
    left out and it differs from max_position_embeddings (rope scaling, other length keys:
    profiles.engine_time.context_length), per pool where the pools' releases derive different ones (a pool at
    max_position_embeddings included: a disaggregated run's requests fit the shorter, simulator.cluster.build).
    Empty otherwise (so the other runs' summaries are unchanged)."""
    out = {}
    held = {pool.kind.target.checkpoint_dtype for pool in pools} - {""}
    if held:
        out["served_dtype"] = scenario.cluster.dtype
    derived = {(pool.name, pool.kind.context_len, pool.kind.context_rule) for pool in pools if pool.kind.context_rule}
    if not any(pool.kind.context_rule and pool.kind.context_len != pool.kind.target.max_position_embeddings
               for pool in pools):
        return out
    if len({(tokens, rule) for _, tokens, rule in derived}) == 1:
        _, out["context_limit_tokens"], out["context_rule"] = next(iter(derived))
    else:   # (pools of other engines or releases: each its own, one at max_position_embeddings included)
        out["context_limit_tokens"] = {name: tokens for name, tokens, _ in sorted(derived)}
        out["context_rule"] = {name: rule for name, _, rule in sorted(derived)}
    return out


def kv_cache_summary(cluster, requests, totals: StepTotals) -> dict:
    """Prefix-cache and host-tier figures of a run with `cluster.kv_cache` (empty without it):
    `prefix_cache_hit_rate` = prompt tokens found cached at their request's first admission / prompt
    tokens of the admitted requests; `prefix_cache_saved_prefill_tokens` = prompt tokens not prefilled
    thanks to the cache over every admission (re-admissions after preemption included);
    `prefix_cache_host_loaded_tokens` = of those, loaded from the host tier; `kv_swapped_tokens` = KV
    tokens swapped out to host memory (and back); `kv_io_time_fraction` = share of busy time copying KV."""
    cfg = cluster.scenario.cluster.kv_cache
    tiers = [rep.kv for rep in cluster.replicas if rep.kv is not None]
    if not tiers:
        return {}
    out = {}
    if cfg.prefix_caching:
        admitted = np.isfinite(column(requests, "admit_s", float))
        prompt = float(column(requests, "prompt_tokens")[admitted].sum())
        cached = float(cluster.state.cached_prompt_tokens[admitted].sum())
        out["prefix_cache_hit_rate"] = cached / prompt if prompt else math.nan
        out["prefix_cache_saved_prefill_tokens"] = int(sum(kv.hit_tokens for kv in tiers))
        if cfg.host_memory_gib > 0:
            out["prefix_cache_host_loaded_tokens"] = int(sum(kv.loaded_tokens for kv in tiers))
    if cfg.host_memory_gib > 0:
        busy = totals.sum("duration_s")
        out["kv_swapped_tokens"] = int(sum(kv.swapped_tokens for kv in tiers))
        out["kv_io_time_fraction"] = totals.sum("kv_io_s") / busy if busy > 0 else 0.0
    return out


def _pool_summary(summary: dict, requests, totals: StepTotals, cluster) -> dict:
    """GPU-dependent summary fields recomputed for pools of different replica sizes and hardware, and the
    KV transfer statistics. `summary` came from `metrics.summarize` called with gpus_per_replica = 1."""
    pools, dtype = cluster.pools, cluster.scenario.cluster.dtype
    gpus = cluster.gpus
    gpr = np.array([pool.kind.gpus for pool in pools for _ in pool.replicas], dtype=float)
    window = summary["window_s"]
    flops, moved = totals.sum("flops"), totals.sum("bytes")
    hardware = [pool.kind.hardware for pool in pools]
    if all(hw.id == hardware[0].id for hw in hardware):
        peak_f, peak_b = hardware[0].matmul_flops(dtype), hardware[0].hbm_bandwidth_bytes_per_s
        busy_gpu_s = totals.busy_weighted(gpr)
        busy_f, busy_b = busy_gpu_s * peak_f, busy_gpu_s * peak_b
        all_f, all_b = window * peak_f * gpus, window * peak_b * gpus
    else:  # peaks weighted by each pool's GPUs
        rep_f = np.array([pool.kind.hardware.matmul_flops(dtype) for pool in pools for _ in pool.replicas]) * gpr
        rep_b = np.array([pool.kind.hardware.hbm_bandwidth_bytes_per_s for pool in pools for _ in pool.replicas]) * gpr
        busy_f, busy_b = totals.busy_weighted(rep_f), totals.busy_weighted(rep_b)
        all_f, all_b = window * float(rep_f.sum()), window * float(rep_b.sum())
    ratio = lambda a, b: a / b if b > 0 else math.nan  # noqa: E731
    kv = column(requests, "kv_transfer_s", float)
    kv = kv[np.isfinite(kv)]
    out = {"gpus": gpus, "gpus_per_replica": 0}   # 0: pools differ, see <pool>_gpus_per_replica
    for pool in pools:
        out[f"{pool.name}_replicas"] = len(pool.replicas)
    for pool in pools:
        out[f"{pool.name}_gpus_per_replica"] = pool.kind.gpus
    if any(hw.id != hardware[0].id for hw in hardware):
        out.update({f"{pool.name}_hardware": pool.kind.hardware.id for pool in pools})
    out.update({
        "goodput_per_gpu_rps": summary["goodput_rps"] / gpus,
        "mfu": ratio(flops, all_f), "mbu": ratio(moved, all_b),
        "mfu_busy": ratio(flops, busy_f), "mbu_busy": ratio(moved, busy_b),
        "kv_transfers": int(len(kv)),
        "kv_transfer_mean_s": float(kv.mean()) if len(kv) else math.nan,
        "kv_transfer_p50_s": float(np.percentile(kv, 50)) if len(kv) else math.nan,
        "kv_transfer_p99_s": float(np.percentile(kv, 99)) if len(kv) else math.nan,
        "kv_bytes_total": float(np.nansum(column(requests, "kv_bytes", float))),   # (NaN skipped, as pandas' sum)
    })
    for pool in pools:
        out[f"kv_tokens_per_replica_{pool.name}"] = pool.kind.kv_tokens
    out["kv_tokens_per_replica"] = pools[-1].kind.kv_tokens
    return out
