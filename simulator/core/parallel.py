"""Independent replicas simulated in parallel worker processes (the independent driver, simulator.core.engine).

When every request's replica is known before the run and replicas cannot affect each other, the cluster
costs the sum of its replicas, and they can run side by side on several cores. The replicas are split
into groups of about equal request counts; the calling process runs the first group and forked children
run the others. A child returns what its replicas changed: the request-state columns of its requests,
its part of the step log (simulator.core.steplog.StepLog.export_part: exact totals and kept steps or
aggregates), each replica's clock and the distinct ops its latency model priced (the summary counts
them). The parent writes them back in place, so the run's outputs are byte-identical to a run in one
process (tests/simulator/core/test_parallel_replicas.py checks requests, steps and summary for every `outputs.steps`
mode): each replica runs the same code on the same inputs, the step log's totals are exact integer sums,
its kept rows are sorted by (start, replica) and its aggregates by (interval, replica) before they are read.

Only replicas whose sole mutable state read after the run is their clock are parallelized (no control
policy, no KV tiers: `Replica.parallel_safe`); a worker that fails raises in the parent with its
traceback. Progress: each child counts its finished requests in its own slot of a shared array, which
the parent reports from.

`simulation.workers`: an int (1 = one process) or "auto": as many processes as cores (at most
AUTO_MAX_WORKERS) and at most one per replica, for runs of at least AUTO_MIN_REQUESTS requests (below that,
forking and merging cost more than they save), and one process inside a multiprocessing child (a sweep's
or plan's worker pool already uses the cores). Either way one process where forking is unsafe or
impossible: outside the main thread (a thread pool's task), in a daemon process, or without the fork
start method. Memory: a child holds its own copy of the request-state pages it writes (copy on write):
with requests spread over the replicas (round robin) that is every page of the written columns, ~0.1 kB
per request and worker, so `auto` stops at AUTO_MAX_WORKERS (1M requests: ~0.1 GB per worker).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
import traceback
from multiprocessing.connection import wait

import numpy as np

from simulator.console.interrupts import held, leave_to_parent

AUTO_MIN_REQUESTS = 50_000
AUTO_MAX_WORKERS = 8   # each worker copies the request-state pages it writes (all of them, round robin)
_POLL_S = 0.2


def local_workers_max() -> int:
    """The most worker processes a run, sweep or plan may start on this machine (`simulation.workers`,
    `--workers` of the local executors): its cores. More would time-slice the same cores (the simulation is
    pure Python, one core a process) while each holds its own memory, and a count in the thousands would
    exhaust the machine's processes or memory before any work is done."""
    return os.cpu_count() or 1


def worker_count(setting, replicas: list, requests: int) -> int:
    """Processes to use for the independent driver (module docstring)."""
    if not all(rep.parallel_safe for rep in replicas) or len(replicas) < 2:
        return 1
    if ("fork" not in mp.get_all_start_methods() or mp.current_process().daemon   # (a daemon has no children)
            or threading.current_thread() is not threading.main_thread()):   # (forked from a worker thread)
        return 1
    if setting == "auto":
        if requests < AUTO_MIN_REQUESTS or mp.parent_process() is not None:
            return 1
        setting = min(local_workers_max(), AUTO_MAX_WORKERS)
    return max(1, min(int(setting), len(replicas)))


def split_work(work: list[tuple], groups: int) -> list[list[tuple]]:
    """(replica, request ids) pairs in `groups` groups of about equal request counts (largest first to
    the least loaded group), each group's pairs in replica order."""
    loads = [0] * groups
    members: list[list[int]] = [[] for _ in range(groups)]
    for i in sorted(range(len(work)), key=lambda i: (-len(work[i][1]), i)):
        g = loads.index(min(loads))
        members[g].append(i)
        loads[g] += len(work[i][1])
    return [[work[i] for i in sorted(group)] for group in members if group]


def state_arrays(state) -> dict[str, np.ndarray]:
    """The per-request columns of a simulator.core.state.RequestState (arrays of length n)."""
    return {name: value for name, value in vars(state).items()
            if isinstance(value, np.ndarray) and value.shape[:1] == (state.n,)}


def run_parallel(work: list[tuple], groups: int, run_group, log, state, report, latency_models: list) -> None:
    """Run `run_group(pairs, report)` for each group, the first here and the others in forked children,
    and merge the children's results into `log`, `state` and the `latency_models` (what they count for the
    summary's `latency_source`: profiles.latency.LatencyModel.usage_since). `report(k)`: k requests
    finished."""
    parts = split_work(work, groups)
    ctx = mp.get_context("fork")
    done = ctx.Array("q", len(parts), lock=False)   # requests finished, per child (one writer each)
    children = []
    for slot, pairs in enumerate(parts[1:], start=1):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(pairs, run_group, log, state, latency_models, done, slot, send,
                                                os.getpid()), daemon=True)
        with held():   # the child ignores Ctrl-C before it can be stopped by it (the parent stops it)
            proc.start()
        send.close()
        children.append((proc, receive))
    seen = [0]

    def report_with_children(k: int) -> None:
        report(k)
        now = sum(done)
        if now != seen[0]:
            report(now - seen[0])
            seen[0] = now

    try:
        run_group(parts[0], report_with_children)
        pending = {receive: proc for proc, receive in children}
        results = []
        while pending:
            for receive in wait(list(pending), timeout=_POLL_S):
                try:
                    results.append(receive.recv())
                except EOFError:
                    proc = pending[receive]
                    proc.join()
                    raise RuntimeError(f"a replica worker process exited with code {proc.exitcode} "
                                       "before returning its results") from None
                del pending[receive]
            report_with_children(0)
    finally:
        for proc, _ in children:
            if proc.is_alive():
                proc.terminate()
            proc.join()
    arrays = state_arrays(state)
    replica_of = {rep.index: rep for rep, _ in work}
    results.sort(key=lambda result: result.get("replicas", [-1])[:1])   # merged in group order, not arrival order
    for result in results:
        if "error" in result:
            raise RuntimeError("a replica worker process failed:\n" + result["error"])
        ids = result["ids"]
        for name, values in result["state"].items():
            arrays[name][ids] = values
        for index, clock_s in zip(result["replicas"], result["clocks"]):
            replica_of[index].clock_s = clock_s
        log.merge_part(result["log"])
        for model, usage in zip(latency_models, result["latency"]):
            model.merge_usage(usage)


def _child(pairs, run_group, log, state, latency_models, done, slot: int, send, parent_pid: int) -> None:
    from simulator.console.lifetime import die_with_parent
    leave_to_parent()   # Ctrl-C: the parent reports it and stops this process
    die_with_parent(parent_pid)   # a killed parent takes its workers with it
    try:
        def report(k: int) -> None:
            done[slot] += k

        log.start_part()
        marks = [model.usage_mark() for model in latency_models]
        run_group(pairs, report)
        ids = np.concatenate([ids for _, ids in pairs]) if pairs else np.zeros(0, dtype=np.int64)
        send.send({"ids": ids, "state": {name: values[ids] for name, values in state_arrays(state).items()},
                   "replicas": [rep.index for rep, _ in pairs], "clocks": [rep.clock_s for rep, _ in pairs],
                   "log": log.export_part(),
                   "latency": [model.usage_since(mark) for model, mark in zip(latency_models, marks)]})
    except BaseException:   # noqa: BLE001 — every failure goes back to the parent, with its traceback
        send.send({"error": traceback.format_exc()})
    finally:
        send.close()
    os._exit(0)
