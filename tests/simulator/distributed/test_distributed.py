"""One simulation on a Dask cluster (simulator.distributed), against the same run in one process.

- routers that route ahead (round_robin): requests, steps (every `outputs.steps` mode) and summary
  byte-identical, with and without speculation (the groups' local request rows give the acceptance model
  their run-wide ids);
- routers that read loads at `load_sync_s: 0` (synchronised at every arrival): requests and steps
  byte-identical (the summary too, but for the count of distinct op shapes the one-process driver priced:
  it prices steps of bulks it later cuts at arrivals);
- at a window longer than the run the router sees only its own sends: least_outstanding then balances the
  request counts exactly — the approximation at its extreme;
- a worker killed mid-run is retried by Dask and the outputs stay identical (a resumed run); one holding a
  windowed run's actor (not retried) stops the run with one line naming the executor;
- windows of a load_sync_s so small that (t - t0) / Δt overflows are those of load_sync_s 0;
- an address where nothing listens is refused at once; one where something that is not Dask listens, within the
  connect timeout (simulator.distributed.reach);
- bad input (an unreachable scheduler, a scenario a distributed run refuses, a load-reading router without
  load_sync_s): one line naming the field, exit 2, nothing written.
The test cluster is a Dask LocalCluster of 2 worker processes on this machine, reached by its address.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

import simulator
from contract import assert_one_line, run_cli, snapshot, write_scenario
from paths import REPO
from sim_helpers import merge, scenario

distributed = pytest.importorskip("distributed")

SPEC = {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3},
        "acceptance": {"kind": "constant", "alpha": 0.7}}


@pytest.fixture(scope="module")
def address():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def fleet(steps: str = "full", spec: bool = False, router: str = "round_robin", requests: int = 400,
          qps: float = 30.0, **extra) -> dict:
    return scenario(cluster={"replicas": 6, "router": router},
                    workload={"arrival": {"qps": qps}, "num_requests": requests},
                    outputs={"steps": steps, "plots": False}, **(SPEC if spec else {}), **extra)


def on(data: dict, address: str, **simulation) -> dict:
    return merge(data, {"simulation": {"executor": address, **simulation}})


def assert_same(one, other, *, summary: bool = True) -> None:
    pd.testing.assert_frame_equal(one.requests, other.requests)
    pd.testing.assert_frame_equal(one.steps, other.steps)
    if summary:
        assert json.dumps(one.summary, default=str, sort_keys=True) == json.dumps(other.summary, default=str,
                                                                                  sort_keys=True)


@pytest.mark.parametrize("spec", [False, True], ids=["plain", "spec"])
@pytest.mark.parametrize("steps", ["full", pytest.param("sampled", marks=pytest.mark.slow),
                                   pytest.param("aggregate", marks=pytest.mark.slow)])
def test_round_robin_is_byte_identical_to_one_process(address, steps, spec):
    data = fleet(steps, spec)
    one = simulator.run(merge(data, {"simulation": {"workers": 1}}))
    dist = simulator.run(on(data, address))
    assert one.requests.replica.nunique() == 6 and one.summary["requests_finished"] == 400
    assert_same(one, dist)
    assert "load_sync_s" not in dist.summary


def test_a_second_run_on_the_same_workers_is_byte_identical(address):
    """A worker kept the first run's replica kind for the next run of the scenario, and its latency model counted
    only the op shapes the first run had not priced: summary.json's latency_source differed (simulator.
    distributed.group._built)."""
    data = fleet("aggregate", requests=300)
    first, second = simulator.run(on(data, address)), simulator.run(on(data, address))
    assert_same(first, second)
    assert_same(first, simulator.run(merge(data, {"simulation": {"workers": 1}})))


def test_a_group_of_one_replica_is_named_alone():
    from simulator.distributed.driver import _replicas_text
    assert [_replicas_text(r) for r in ([3], [0, 1, 2], [0, 4])] == ["3", "0–2", "0, 4"]


def test_progress_counts_every_request(address):
    counted = []
    result = simulator.run(on(fleet("aggregate"), address), progress=counted.append)
    assert sum(counted) == len(result.requests) == 400


@pytest.mark.parametrize("router", ["least_outstanding", pytest.param("join_shortest_queue", marks=pytest.mark.slow)])
def test_load_reading_routers_synchronised_at_every_arrival_are_exact(address, router):
    data = fleet("full", True, router)
    one = simulator.run(data)
    dist = simulator.run(on(data, address, load_sync_s=0))
    assert_same(one, dist, summary=False)
    assert dist.summary.pop("load_sync_s") == 0
    for key in one.summary:   # all but the distinct op shapes priced (bulks the one-process driver cut)
        if key != "latency_source":
            assert json.dumps(one.summary[key], default=str) == json.dumps(dist.summary[key], default=str), key


def test_a_window_longer_than_the_run_routes_by_own_sends_only(address):
    dist = simulator.run(on(fleet("aggregate", router="least_outstanding"), address, load_sync_s=1e6))
    counts = np.bincount(dist.requests.replica.to_numpy(), minlength=6)
    assert counts.max() - counts.min() <= 1          # the router saw no finish: it balanced its own sends
    one = simulator.run(fleet("aggregate", router="least_outstanding"))
    one_counts = np.bincount(one.requests.replica.to_numpy(), minlength=6)
    assert one_counts.max() - one_counts.min() > 1   # (with finishes seen, loads steer it elsewhere)
    assert dist.summary["requests_finished"] == 400 and dist.summary["load_sync_s"] == 1e6


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_retried_with_the_same_outputs(address):
    data = fleet("aggregate", requests=3000, qps=60.0)
    one = simulator.run(merge(data, {"simulation": {"workers": 1}}))
    client = distributed.Client(address)
    killed = []

    def kill_one_busy_worker():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                killed.append(busy[0])
                try:
                    client.run(os._exit, 1, workers=busy[:1])
                except Exception:   # noqa: BLE001 — the worker dies without answering
                    pass
            time.sleep(0.05)

    thread = threading.Thread(target=kill_one_busy_worker, daemon=True)
    thread.start()
    try:
        dist = simulator.run(on(data, address))
    finally:
        thread.join(timeout=130)
        client.close()
    assert killed, "no worker was busy long enough to be killed"
    assert_same(one, dist)


def test_an_unreachable_scheduler_is_one_line_and_nothing_written(tmp_path):
    code, err, out = run_cli(tmp_path, fleet(), "--executor", "tcp://127.0.0.1:1")
    assert code == 2
    assert_one_line(err, "--executor: ")   # the flag typed, not the field it overrides
    assert "cannot reach the Dask scheduler" in err and not out.exists()


@pytest.mark.parametrize("extra, field", [
    ({"cluster": {"replicas": 2, "router": "least_outstanding"}}, "simulation.load_sync_s"),
    ({"cluster": {"kv_cache": {"prefix_caching": True}}}, "--executor: "),
    ({"workload": {"arrival": None}}, "--executor: "),   # (a closed loop: below)
])
def test_what_a_distributed_run_refuses_is_one_line_before_any_work(tmp_path, extra, field):
    data = merge(fleet(), extra)
    if data["workload"]["arrival"] is None:
        data["workload"]["arrival"] = {"process": "closed_loop", "concurrency": 4}
    code, err, out = run_cli(tmp_path, data, "--executor", "tcp://127.0.0.1:1")
    assert code == 2
    assert_one_line(err, field)
    assert "cannot reach" not in err      # refused before connecting
    assert set(snapshot(tmp_path)) == {"s.yaml"}


def test_executor_names_are_checked(tmp_path):
    code, err, _ = run_cli(tmp_path, fleet(), "--executor", "dask:/nowhere")
    assert code == 2
    assert_one_line(err, "--executor: ")


@pytest.mark.slow
def test_a_worker_holding_a_windowed_runs_actor_killed_is_one_line(address, capfd):
    data = on(fleet("aggregate", router="least_outstanding", requests=3000, qps=60.0), address, load_sync_s=0.5)
    client = distributed.Client(address)
    killed = []

    def kill_the_workers(finished: int) -> None:
        """Once requests have finished (the actors hold the run's state), every worker (Dask's nannies start
        new ones, without the actors)."""
        if not killed:
            killed.append(finished)
            try:
                client.run(os._exit, 1)
            except Exception:   # noqa: BLE001 — the workers die without answering
                pass

    try:
        with pytest.raises(simulator.ScenarioError) as raised:
            simulator.run(data, progress=kill_the_workers)
    finally:
        client.close()
    assert killed
    assert str(raised.value).startswith("simulation.executor: a Dask worker died while simulating replicas")
    assert "nothing was written" in str(raised.value) and "\n" not in str(raised.value)
    assert "broadcast to" not in capfd.readouterr().err   # (the scheduler's proxy to the dead actor, silenced)


@pytest.mark.parametrize("tiny_s", [5e-324, 1e-310])
def test_windows_of_a_sync_so_small_it_overflows_are_those_of_sync_zero(tiny_s):
    from simulator.distributed.driver import sync_windows
    arrival_s = np.array([0.5, 0.75, 0.75, 1.25, 3.0])
    with np.errstate(all="raise"):   # (an overflow warning, then every arrival after the first in one window)
        starts, bounds = sync_windows(arrival_s, tiny_s)
    exact = sync_windows(arrival_s, 0.0)
    np.testing.assert_array_equal(starts, exact[0])
    np.testing.assert_array_equal(bounds, exact[1])
    assert list(bounds) == [0, 1, 3, 4, 5]


def test_an_address_where_nothing_listens_is_refused_at_once():
    from simulator.distributed.reach import check_scheduler_answers
    t0 = time.monotonic()
    with pytest.raises(simulator.ScenarioError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:1: "):
        check_scheduler_answers("tcp://127.0.0.1:1", "simulation.executor")
    assert time.monotonic() - t0 < 3.0   # (Dask's connect retried a refused connection for its 10 s)


def test_a_listener_that_never_answers_is_refused_within_the_timeout():
    """Dask's connect reads the peer's handshake without a timeout: a Client waited for ever."""
    import socket
    from simulator.distributed.reach import check_scheduler_answers
    with socket.create_server(("127.0.0.1", 0)) as server:
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(simulator.ScenarioError, match="something listens there, but no Dask handshake in 1 s"):
            check_scheduler_answers(address, "--executor", timeout_s=1.0)
        assert time.monotonic() - t0 < 5.0


def test_a_running_scheduler_answers(address):
    from simulator.distributed.reach import check_scheduler_answers
    check_scheduler_answers(address, "--executor")


def test_a_local_cluster_beside_another_prints_no_port_warning(tmp_path):
    """Dask's scheduler serves HTTP (metrics) even without a dashboard, on port 8787 unless told otherwise: a
    local-dask run beside any other Dask cluster on the machine (another run, a notebook's) printed "draftsim:
    warning: Port 8787 is already in use. / Perhaps you already have a cluster running? / ..." above its output."""
    import socket
    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        taken.bind(("0.0.0.0", 8787))
        taken.listen()
    except OSError:
        pass   # (already taken by something else: the case itself)
    path = write_scenario(tmp_path / "s.yaml", scenario(workload={"num_requests": 40}))
    try:   # (its own process: the CLI's warning lines, which pytest would capture in this one)
        done = subprocess.run([sys.executable, "-m", "simulator.cli", "run", str(path), "--out", str(tmp_path / "out"),
                               "--quiet", "--executor", "local-dask", "--workers", "1"], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=180)
    finally:
        taken.close()
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    assert (tmp_path / "out" / "summary.json").exists()
