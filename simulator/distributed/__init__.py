"""One simulation spread over a Dask cluster: a fleet of replicas, its replica groups on the cluster's workers.

Chosen with `simulation.executor` (the names `draftsim sweep --executor` uses): `local-dask` starts a Dask
LocalCluster of `simulation.workers` processes on this machine; `dask://HOST:PORT` (or `tcp://HOST:PORT`)
connects to a running scheduler. The driver (this process) builds the run as one process would (requests,
routing state, the step log), routes, and merges what the workers send back; the workers rebuild the
replicas' kind from the scenario (simulator.distributed.group) and simulate their groups.

What is exact and what is approximated:

- **Routers that route ahead** (round_robin: `Router.stateless`): every request's replica is known before
  the run, so replicas cannot affect each other (the independent driver, simulator.core.engine). The
  replicas are split into groups of about equal request counts (at least 4 per worker, at most 250,000
  requests each: a worker's memory is ~0.5 kB per request of the group it runs); each group is one Dask
  task, and each runs the same code on the same inputs as in one process. Outputs are **byte-identical**
  to a run in one process (requests, steps in every `outputs.steps` mode, summary;
  tests/simulator/distributed/test_distributed.py): request draws are pure functions of the run-wide request id, the step
  log's totals are exact integer sums and its kept rows are sorted before they are read.
- **Routers that read loads** (least_outstanding, join_shortest_queue): the router is asked at every
  arrival, with the loads as of then. Distributed, the loads are synchronised every `load_sync_s`
  seconds of simulated time instead (**the named approximation**): simulated time is cut into windows
  [t0 + k·Δt, t0 + (k + 1)·Δt) from the first arrival; the driver routes a window's arrivals with the
  loads read at the window's start — per replica, requests routed there minus those finished before it
  (and, for join_shortest_queue, those waiting there) — plus the requests it sent there since, then
  each worker (a Dask actor holding its replicas) runs its replicas up to the next window's start
  (no step starts at or after it: simulator.core.timeline.OwnArrivals.until_s) and reports their loads.
  What the router misses are the finishes (and admissions) inside the window, before each arrival.
  `load_sync_s: 0` synchronises at every distinct arrival time, which is exact: outputs are byte-identical
  to one process (tested). The error grows with Δt; scenarios/benchmarks/fleet_speed.py reports it
  against one process at two Δt. The summary records `load_sync_s` when it applied.
- prefix_aware routing, disaggregation, closed loops, retrieval, control policies (and the suffix drafter,
  which runs the `proposed` one) and KV tiers run in one process only (refused with one line naming the
  field, before any work): their replicas share state or keep counters the summary reads.

Results stream back in every `outputs.steps` mode: each group's step-log part (exact totals, kept steps or
per-interval aggregates) and request columns are merged as it finishes, so the driver never holds more
than one group's results on top of the run's own columns; the summary is exact. A worker that dies is
retried by Dask on another worker (a group is a pure function of its inputs, so the run resumes with the
same outputs); past Dask's retries (`distributed.scheduler.allowed-failures`), or for an actor's worker
(windowed runs), the run stops with one line and exit 2, having written nothing; so does a scheduler lost
mid-run, or one with no worker able to take a task (none connected, or all paused) for 30 s, where Dask
would wait for ever (simulator.distributed.watch). An unreachable scheduler is one line and exit 2 before
any work: at once where nothing listens, within 10 s where something that is not a Dask scheduler does
(simulator.distributed.reach), within 30 s where a scheduler has no running worker.

A real cluster: start a scheduler (`dask scheduler`) and workers (`dask worker tcp://HOST:8786 --nthreads 1`,
one thread per process: the simulation is pure Python) on machines that have draftsim installed
(`pip install 'draftsim[dask]'`) and see the scenario's files at the same paths (traces, profiles, hardware
or model files it names); then `simulation.executor: dask://HOST:8786` (or `draftsim run … --executor
dask://HOST:8786`). The driver needs the memory of the run's request columns and outputs (~0.4 kB per
request); each worker that of its group.
"""
from __future__ import annotations

from simulator.distributed.driver import check_distributable, is_distributed, open_executor, simulate_distributed

__all__ = ["check_distributable", "is_distributed", "open_executor", "simulate_distributed"]
