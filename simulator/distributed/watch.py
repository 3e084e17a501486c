"""Waiting on a Dask cluster, bounded: what the driver of a run (simulator.distributed.driver) and the Dask
executor of a sweep or plan (simulator.distributed.executors) wait on, and the one line each way of it
failing is.

Dask waits for ever for a worker that can take a task (distributed 2026.8: a task stays `no-worker`), so
without a bound a run sat at 0 % with its progress line every 10 s until it was killed when:
- the scheduler has no worker connected (started without them, or its only worker killed and no nanny to
  start another);
- every worker is paused: a worker pauses when its process memory passes `distributed.worker.memory.pause`
  (80 % of its memory limit by default) and gets no task until it falls below again; one whose own start-up
  already passes it (`dask worker --memory-limit 150MB`: 116 MiB after importing draftsim) never resumes.

Here a cluster with no running worker for `IDLE_LIMIT_S` is one line naming the field (exit 2, nothing
written): at connection (`wait_for_a_worker`) and while results are awaited (`finished`). A nanny starts
a killed worker again within seconds, well inside the limit, and Dask then reruns its task (a resumed run).

A scheduler that goes away mid-run cancels every future with the reason `scheduler-connection-lost`
(distributed.client `Client._reconnect`): `lost` names the scheduler then, not a worker.
"""
from __future__ import annotations

import time
from typing import Iterable, Iterator

from simulator.errors import ScenarioError

IDLE_LIMIT_S = 30.0      # no running worker this long: the run stops (a nanny restarts a killed worker in seconds)
CHECK_EVERY_S = 2.0      # how often the scheduler is asked about its workers while nothing finishes
WAKE_S = 0.1             # how long one wait for a finished future lasts (as Dask's own as_completed polls)
SCHEDULER_LOST = "scheduler-connection-lost"   # the reason Dask gives the futures it cancels (Client._reconnect)
NOTHING_WRITTEN = "nothing was written"
_WORKER_LOST = ("KilledWorker", "CommClosedError", "FutureCancelledError", "CancelledError")


def running_workers(client) -> tuple[int, int]:
    """(workers that can take a task, workers connected) of the client's scheduler."""
    workers = client.scheduler_info()["workers"]
    return sum(1 for info in workers.values() if info.get("status") == "running"), len(workers)


def _none_running(client, field: str, connected: int, waited_s: float, note: str) -> ScenarioError:
    address = client.scheduler.address
    if connected:
        why = (f"its {connected} worker{'s are' if connected > 1 else ' is'} paused (Dask pauses a worker whose memory "
               "passes distributed.worker.memory.pause, 80 % of its --memory-limit)")
    else:
        why = f"no worker is connected (start one: dask worker {address} --nthreads 1)"
    where = f"the Dask scheduler at {address}"
    return ScenarioError(field, f"{where} has had no worker to run tasks for {waited_s:.0f} s: {why}; {note}")


def wait_for_a_worker(client, field: str, limit_s: float | None = None) -> None:
    """Return once the scheduler has a running worker; a ScenarioError naming `field` after `limit_s`
    (default IDLE_LIMIT_S)."""
    limit_s = IDLE_LIMIT_S if limit_s is None else limit_s
    start = time.monotonic()
    while True:
        running, connected = running_workers(client)
        if running:
            return
        waited_s = time.monotonic() - start
        if waited_s >= limit_s:
            raise _none_running(client, field, connected, waited_s, NOTHING_WRITTEN)
        time.sleep(min(0.2, limit_s))


def finished(client, futures: Iterable, field: str, note: str = NOTHING_WRITTEN,
             limit_s: float | None = None) -> Iterator:
    """`futures` as they finish (as Dask's as_completed yields them); a ScenarioError naming `field` (`note`
    appended) once the scheduler has had no running worker for `limit_s` (default IDLE_LIMIT_S) while none
    finished (module docstring)."""
    from distributed import as_completed

    limit_s = IDLE_LIMIT_S if limit_s is None else limit_s
    pending = as_completed(list(futures))
    woken = getattr(pending, "thread_condition", None)   # (Dask's as_completed.__next__ waits on it the same way)
    idle_since = checked = None
    while not pending.is_empty():
        if pending.has_ready():
            idle_since = None
            yield next(pending)
            continue
        if woken is None:
            time.sleep(WAKE_S)
        else:
            with woken:
                woken.wait(timeout=WAKE_S)
        now = time.monotonic()
        if pending.has_ready() or (checked is not None and now - checked < CHECK_EVERY_S):
            continue
        checked = now
        running, connected = running_workers(client)
        if running:
            idle_since = None
        elif idle_since is None:
            idle_since = now
        elif now - idle_since >= limit_s:
            raise _none_running(client, field, connected, now - idle_since, note)


def lost(exc: BaseException, field: str, what: str, note: str, *, client=None,
         worker_lost: bool = False) -> ScenarioError | None:
    """The one line of a task whose scheduler or worker went away while it ran `what` (Dask's KilledWorker,
    lost-connection and cancellation errors; `worker_lost`: `exc` is known to say so), `note` appended; None
    for another error. `client` names the scheduler."""
    name = type(exc).__name__
    if getattr(exc, "reason", None) == SCHEDULER_LOST:
        address = getattr(getattr(client, "scheduler", None), "address", None) or "its address"
        return ScenarioError(field, f"lost the connection to the Dask scheduler at {address} while simulating "
                                    f"{what}; {note}")
    if name not in _WORKER_LOST and not isinstance(exc, OSError) and not worker_lost:
        return None
    detail = str(exc).splitlines()[0] if str(exc) else "no detail"
    return ScenarioError(field, f"a Dask worker died while simulating {what} ({name}: {detail}); {note}")
