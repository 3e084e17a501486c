"""Waiting on a Dask cluster is bounded (simulator.distributed.watch): a scheduler with no worker that can run a
task is one line naming the field, at connection and while results are awaited (Dask waited for ever: a run
sat at 0 %); a scheduler lost mid-run is named as such, not as a dead worker.

The clusters are in-process LocalClusters without workers (threads, no processes: fast to start)."""
from __future__ import annotations

import time

import pytest

import simulator
from sim_helpers import merge, scenario

distributed = pytest.importorskip("distributed")


@pytest.fixture()
def no_workers():
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None)
    try:
        yield cluster
    finally:
        cluster.close()


def test_a_scheduler_without_workers_is_one_line_before_any_work(no_workers, monkeypatch):
    monkeypatch.setattr("simulator.distributed.watch.IDLE_LIMIT_S", 1.0)
    data = merge(scenario(workload={"num_requests": 40}, cluster={"replicas": 2}),
                 {"simulation": {"executor": no_workers.scheduler_address}})
    t0 = time.monotonic()
    with pytest.raises(simulator.ScenarioError) as raised:
        simulator.run(data)
    message = str(raised.value)
    assert message.startswith(f"simulation.executor: the Dask scheduler at {no_workers.scheduler_address} has had "
                              "no worker to run tasks for 1 s: no worker is connected (start one: dask worker ")
    assert message.endswith("; nothing was written") and "\n" not in message
    assert time.monotonic() - t0 < 20.0


def test_tasks_without_a_worker_stop_after_the_limit(no_workers):
    """What a run's groups or a sweep's points wait on when the workers went away mid-run (the only one
    killed, with no nanny to start another): every task stays `no-worker`."""
    from simulator.distributed.watch import finished
    with distributed.Client(no_workers) as client:
        futures = [client.submit(sum, [1, 2], pure=False)]
        t0 = time.monotonic()
        with pytest.raises(simulator.ScenarioError, match=r"^--executor: the Dask scheduler at .* has had no worker to "
                                                          r"run tasks for \d s: no worker is connected .*; kept$"):
            list(finished(client, futures, "--executor", "kept", limit_s=0.5))
        assert time.monotonic() - t0 < 10.0


def test_finished_futures_come_back_whatever_the_wait():
    from simulator.distributed.watch import finished
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        futures = [client.submit(pow, 2, k, pure=False) for k in range(6)]
        assert sorted(f.result() for f in finished(client, futures, "--executor")) == [2 ** k for k in range(6)]


def test_a_lost_scheduler_is_named_not_a_dead_worker():
    from distributed.client import FutureCancelledError

    from simulator.distributed.watch import lost

    class Client:
        class scheduler:
            address = "tcp://10.0.0.1:8786"

    exc = FutureCancelledError("run_group-1", "scheduler-connection-lost", "Client lost the connection")
    line = str(lost(exc, "simulation.executor", "replicas 0–3", "nothing was written", client=Client()))
    assert line == ("simulation.executor: lost the connection to the Dask scheduler at tcp://10.0.0.1:8786 while "
                    "simulating replicas 0–3; nothing was written")
    assert lost(ValueError("x"), "f", "replicas 0", "n") is None
