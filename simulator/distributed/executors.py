"""Where work runs: a registry of executors, chosen by `--executor` — a sweep's or a plan's points, and the
replica groups of one run (`simulation.executor`, simulator.distributed: the Dask ones).

- ``local`` (default): a process pool on this machine (``--workers``, default: all cores).
- ``serial``: one after another in this process (debugging, tiny sweeps).
- ``local-dask``: a Dask ``LocalCluster`` started for the sweep (worker processes, one thread each).
- ``dask://HOST:PORT`` (or ``tcp://HOST:PORT``): an existing Dask scheduler. Its workers need draftsim
  installed and must see the same files the scenario refers to (trace CSVs, profiles) at the same paths.

Every executor yields results in completion order; the caller stores each one as soon as it arrives, so
stopping the sweep loses at most the points still running. Dask is imported only when asked for
(``pip install 'draftsim[dask]'``). A new backend registers a factory in `EXECUTORS` (exact names) or
`SCHEMES` (URL prefixes); it must provide `imap_unordered(fn, tasks)` and be a context manager; a `connect()`,
where it has one, reaches its workers at once (`draftsim plan` calls it before its screen, so that an
unreachable scheduler is one line before any work).
"""
from __future__ import annotations

import logging
import os
import signal
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterable, Iterator

from models.errors import is_integer
from simulator.config.dask_address import SCHEDULER_SCHEMES, scheduler_address
from simulator.console.interrupts import held, leave_to_parent, spawn_with_ctrl_c_held
from simulator.errors import ScenarioError

FIELD = "--executor"


def _init_worker(parent_pid: int) -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them: one "interrupted" line, no traceback
    from every worker (they are forked with it held back, `ProcessExecutor._submit`); and they die with
    the parent when it is killed outright (simulator.console.lifetime).

    The objects a worker inherits from the parent at the fork (its imports, a plan's screen, the shared price
    and op-list caches) go to the cyclic collector's permanent generation (`gc.freeze`, as Python's gc
    documentation advises for forked workers): the worker's full collections no longer traverse them, nor
    write to their pages (a traversal touches every object's GC header, so each page of the parent's heap
    was copied into the worker). Reference counting still frees them; only a cycle among them that became
    garbage would stay, and the worker keeps what it inherited until it exits anyway. (Measured 2026-11-29 on
    the llama8b plan's ten confirmations run in one process after its screen: the collector took 8-9 % of the
    CPU, its full collections about half of that.)"""
    import gc

    from simulator.console.lifetime import die_with_parent
    leave_to_parent()
    die_with_parent(parent_pid)
    gc.freeze()


class SerialExecutor:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def imap_unordered(self, fn: Callable, tasks: Iterable) -> Iterator:
        for task in tasks:
            yield fn(task)


class ProcessExecutor:
    """A process pool that keeps at most 2×workers tasks in flight (bounded memory for large sweeps)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self):
        self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_init_worker,
                                         initargs=(os.getpid(),))
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:
            # Ctrl-C or a failure: stop the points still running now (they are not stored, a resumed sweep
            # reruns them) instead of waiting for them. ProcessPoolExecutor has no public terminate, so its
            # worker table is read directly.
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def imap_unordered(self, fn: Callable, tasks: Iterable) -> Iterator:
        todo = iter(tasks)
        running = set()
        for task in todo:
            running.add(self._submit(fn, task))
            if len(running) >= 2 * self.workers:
                break
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                nxt = next(todo, None)
                if nxt is not None:
                    running.add(self._submit(fn, nxt))
                yield future.result()

    def _submit(self, fn: Callable, task):
        """Submit one task; a submit may fork workers, so Ctrl-C is held back until they ignore it."""
        with held():
            return self._pool.submit(fn, task)


class DaskExecutor:
    """Runs tasks on a dask.distributed Client (given, or connected to `address`, or a LocalCluster).
    `client` is the open Client (simulator.distributed submits a run's replica groups to it); `field`
    names the setting in errors (`--executor`, or `simulation.executor` for a run)."""

    def __init__(self, client=None, address: str | None = None, workers: int | None = None, field: str = FIELD):
        self._client, self._address, self._workers, self._field = client, address, workers, field
        self._own: list[Any] = []
        self._owns_cluster = False

    @property
    def client(self):
        return self._client

    def __enter__(self):
        self.connect()
        return self

    def connect(self) -> None:
        """Reach the cluster now (start the LocalCluster, or connect to the scheduler): an unreachable
        scheduler is reported before any work; entering the executor afterwards keeps this connection."""
        if self._client is None:
            try:
                from distributed import Client, LocalCluster
            except ImportError:
                raise ScenarioError(self._field, "the Dask executors need dask[distributed]: "
                                                 "pip install 'draftsim[dask]'") from None
            if self._address is None:
                # Its processes log at ERROR (silence_logs; at Dask's default, WARNING, a Ctrl-C printed two
                # "task cancelled" and two "still alive after 4.0 seconds, killing" lines above its one
                # line). Ctrl-C waits until it has started: one cut short failed Dask's own close at exit
                # ("Exception ignored in atexit callback ... AssertionError: Status.init"). Its scheduler serves
                # HTTP (metrics) without a dashboard too, on port 8787 unless told: beside any other Dask cluster on
                # the machine that printed "Port 8787 is already in use ..." above the run's output. A free port.
                spawn_with_ctrl_c_held()   # (its workers' own start: simulator.console.interrupts)
                with held(signal.SIGINT):
                    cluster = LocalCluster(n_workers=self._workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"},
                                           silence_logs=logging.ERROR)
                self._own.append(cluster)
                self._owns_cluster = True
                self._client = Client(cluster)
            else:
                from simulator.distributed.reach import CONNECT_TIMEOUT_S, check_scheduler_answers
                check_scheduler_answers(self._address, self._field)   # (fast, and bounded: simulator.distributed.reach)
                try:
                    self._client = Client(self._address, timeout=f"{CONNECT_TIMEOUT_S:g}s")
                except OSError as exc:
                    raise ScenarioError(self._field, f"cannot reach the Dask scheduler at {self._address}: "
                                                     f"{exc}") from None
            self._own.insert(0, self._client)
            if self._address is not None:
                from simulator.distributed.watch import wait_for_a_worker
                try:   # (a scheduler without a running worker: Dask waited for ever, at 0 %)
                    wait_for_a_worker(self._client, self._field)
                except BaseException:
                    self.__exit__(None, None, None)
                    raise

    def __exit__(self, *exc) -> None:
        # Quiet for a scheduler of another's too: a client closed after its scheduler went away (the run stopped
        # with one line) logged its cancelled reconnection at ERROR with a 20-line traceback (distributed.client
        # `Client._reconnect`, 2026-11-29); a client whose scheduler answers closes without a word anyway.
        with _distributed_logs_quiet():
            if self._owns_cluster:
                _quiet_workers(self._client)
            for thing in self._own:
                thing.close()
        self._own.clear()
        self._owns_cluster = False

    def imap_unordered(self, fn: Callable, tasks: Iterable) -> Iterator:
        """Results as tasks finish; a worker that died more often than Dask retries a task (`distributed.
        scheduler.allowed-failures`), a scheduler lost, or no running worker for watch.IDLE_LIMIT_S is one
        line naming the executor (a sweep's finished points are stored: --resume runs the others)."""
        from simulator.distributed.watch import finished, lost

        futures = [self._client.submit(fn, task, pure=False) for task in tasks]
        kept = "a sweep keeps the points that finished (--resume runs the rest)"
        try:
            for future in finished(self._client, futures, self._field, kept):
                try:
                    result = future.result()
                except Exception as exc:   # noqa: BLE001 — Dask's KilledWorker and lost-connection errors
                    gone = lost(exc, self._field, "one of the tasks", kept, client=self._client)
                    if gone is not None:
                        raise gone from None
                    raise
                yield result
        finally:
            for future in futures:
                future.cancel()


_SILENT = logging.CRITICAL + 1


def _silence_distributed_handlers() -> list[tuple[logging.Handler, int]]:
    """Raise every handler of the `distributed` logger above CRITICAL; returns the levels it had."""
    handlers = logging.getLogger("distributed").handlers
    before = [(handler, handler.level) for handler in handlers]
    for handler in handlers:
        handler.setLevel(_SILENT)
    return before


@contextmanager
def _distributed_logs_quiet() -> Iterator[None]:
    """While a client closes (and a LocalCluster of ours), this process's Dask logs (the client's, and our
    LocalCluster's scheduler and nannies) say nothing.
    Afterwards a handler the close left silenced gets its level back; one the close reset (LocalCluster's
    `silence_logs` gives back the level it found) keeps that: `draftsim compare` starts several clusters in
    one process."""
    before = _silence_distributed_handlers()
    try:
        yield
    finally:
        for handler, level in before:
            if handler.level == _SILENT:
                handler.setLevel(level)


def _quiet_workers(client) -> None:
    """Silence the Dask logs of our LocalCluster's worker processes before it closes. On a loaded machine a
    worker's heartbeat can still be in flight when the scheduler has gone, and the worker logs it at ERROR
    with two tracebacks ("Failed to communicate with scheduler during heartbeat.", distributed.worker
    `Worker.heartbeat`) into the run's stderr after every result had arrived (CI, 2026-11-29: a README
    command run by 4 pytest processes on 2 cores). Only teardown is silenced: while the run goes
    on, a worker's errors still show, and a task's failure reaches the driver as its exception. A worker
    that cannot answer (dead, or the run stopped) is left as it is."""
    try:
        client.run(_silence_worker, on_error="ignore")
    except Exception:  # a cluster that cannot take the call is closed all the same
        pass


def _silence_worker() -> None:
    """On a worker: its handlers silenced, nothing sent back (a handler holds a stream and a lock)."""
    _silence_distributed_handlers()


def _default_workers(workers: int | None) -> int:
    """Processes of a local executor: `workers`, at most the machine's cores (default: the cores). Below 1
    never reaches here: `make_executor` refuses it, and `simulation.workers` is validated with the scenario."""
    from simulator.core.parallel import local_workers_max
    most = local_workers_max()
    if workers is not None and workers > most:
        raise ScenarioError("--workers", f"must be an integer in 1..{most} (this machine's cores), got {workers}")
    return workers or most


def _without_workers(workers: int | None, why: str) -> None:
    """Refuse a `--workers` that the executor would not read (`--executor serial --workers 4` ran one point at
    a time, and a running Dask scheduler's own workers ran it, without a word)."""
    if workers is not None:
        raise ScenarioError("--workers", f"{why}; --workers sets the processes of --executor local or local-dask")


def _serial(workers: int | None) -> SerialExecutor:
    _without_workers(workers, "--executor serial runs every task in this process, one at a time")
    return SerialExecutor()


def _scheduler(url: str, workers: int | None) -> DaskExecutor:
    address = scheduler_address(url, FIELD)
    _without_workers(workers, f"a running Dask scheduler ({url}) runs the tasks on the workers it has")
    return DaskExecutor(address=address)


EXECUTORS: dict[str, Callable[[int | None], Any]] = {
    "local": lambda workers: ProcessExecutor(_default_workers(workers)),
    "serial": _serial,
    "local-dask": lambda workers: DaskExecutor(workers=_default_workers(workers)),
}
SCHEMES: dict[str, Callable[[str, int | None], Any]] = {scheme: _scheduler for scheme in SCHEDULER_SCHEMES}


def dask_executor(spec: str, workers: int | None = None, field: str = FIELD) -> DaskExecutor:
    """The Dask executor `spec` names (local-dask, dask://HOST:PORT, tcp://HOST:PORT), with the settings
    `draftsim sweep` uses for it; errors name `field`."""
    if spec == "local-dask":
        return DaskExecutor(workers=_default_workers(workers), field=field)
    if spec.startswith(tuple(SCHEMES)):
        return DaskExecutor(address=scheduler_address(spec, field), field=field)
    raise ScenarioError(field, f"not a Dask executor: {spec!r}; allowed: local-dask, dask://HOST:PORT, tcp://HOST:PORT")


def make_executor(spec: str | Any = "local", workers: int | None = None):
    """An executor from its name/URL, or `spec` itself when it already is one (or a dask Client)."""
    if workers is not None and (not is_integer(workers) or workers < 1):
        raise ScenarioError("--workers", f"must be an integer >= 1, got {workers!r}")
    workers = None if workers is None else int(workers)   # (a NumPy integer, through the Python API)
    if not isinstance(spec, str):
        if hasattr(spec, "imap_unordered"):
            return spec
        if hasattr(spec, "submit") and hasattr(spec, "scheduler_info"):
            return DaskExecutor(client=spec)
        raise ScenarioError(FIELD, f"not an executor: {type(spec).__name__}")
    if spec in EXECUTORS:
        return EXECUTORS[spec](workers)
    for prefix, factory in SCHEMES.items():
        if spec.startswith(prefix):
            return factory(spec, workers)
    allowed = ", ".join([*EXECUTORS, *(f"{p}HOST:PORT" for p in SCHEMES)])
    raise ScenarioError(FIELD, f"unknown executor {spec!r}; allowed: {allowed}")
