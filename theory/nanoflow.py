"""NanoFlow's intra-device overlap (Zhu et al., OSDI 2025, arXiv 2408.12757) as a pipeline of nano-batches.

A step's batch is split into k nano-batches; each nano-batch's ops are grouped by the resource that bounds
them — compute (GEMMs at large batch), memory (decode attention, small GEMMs), network (collectives) —
and the groups of different nano-batches run concurrently on one device. With the groups taken as the
stages of a *permutation flow shop* (every nano-batch passes compute → memory → network, one nano-batch per
resource at a time), the makespan follows the recursion C[i][r] = max(C[i-1][r], C[i][r-1]) + t[i][r]
(:func:`flow_shop_makespan`); for k identical nano-batches it is Σ_r t_r + (k − 1)·max_r t_r
(:func:`identical_makespan`), between the ideal max_r T_r (every resource busy all the time, T_r = k·t_r)
and the serial Σ_r T_r. :func:`simulate_schedule` runs the same schedule event by event (independent code,
for the tests).

What the flow shop ignores (named here, priced where used in simulator.cost.nanoflow): the order of ops
inside a layer (QKV → attention → O → all-reduce → FFN), which NanoFlow's pipeline search works around by
choosing the order and size of nano-batches; the interference of co-running kernels (each gets a share of
the SMs; NanoFlow's paper reaches 59–72 % of its own optimum, the ideal here). Splitting the batch is not
free: each nano-batch re-reads the weights, which the op-by-op pricing of nano-batches captures.
"""
from __future__ import annotations

import numpy as np

from theory import _checks


def flow_shop_makespan(times) -> float:
    """Makespan of jobs (rows, in order) through stages (columns, in order), one job per stage at a time."""
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 2 or not np.all(t >= 0):   # (NaN passed `t < 0` and gave a nan makespan)
        raise ValueError(f"times must be a (jobs, stages) array of non-negative seconds, got shape {t.shape}")
    done = np.zeros(t.shape[1])
    for row in t:
        ready = 0.0
        for r, x in enumerate(row):
            ready = max(ready, done[r]) + x
            done[r] = ready
    return float(done[-1]) if t.size else 0.0


def identical_makespan(stage_seconds, k: int) -> float:
    """Makespan of k identical nano-batches whose stages take `stage_seconds` each: Σ t + (k − 1)·max t."""
    t = np.asarray(stage_seconds, dtype=np.float64)
    if t.ndim != 1 or not np.all(t >= 0):   # (a negative or NaN stage time gave a makespan without meaning)
        raise ValueError("stage_seconds must be a 1-D array of non-negative seconds")
    k = _checks.positive_int(k, "k")
    return float(t.sum() + (k - 1) * t.max()) if t.size else 0.0


def simulate_schedule(times) -> float:
    """The flow shop run as events: a resource starts the next nano-batch in order as soon as both it and
    that nano-batch's previous stage are done. Returns the time the last stage finishes."""
    t = np.asarray(times, dtype=np.float64)
    jobs, stages = t.shape
    stage_of = [0] * jobs          # next stage of each job
    job_ready = [0.0] * jobs       # when each job's previous stage ended
    free_at = [0.0] * stages       # when each resource is free
    next_job = [0] * stages        # resources take jobs in order
    end = 0.0
    remaining = jobs * stages
    while remaining:
        best = None
        for r in range(stages):
            i = next_job[r]
            if i < jobs and stage_of[i] == r:
                start = max(free_at[r], job_ready[i])
                if best is None or start < best[0]:
                    best = (start, r, i)
        start, r, i = best
        finish = start + t[i, r]
        free_at[r], job_ready[i] = finish, finish
        stage_of[i] += 1
        next_job[r] += 1
        end = max(end, finish)
        remaining -= 1
    return end
