"""Whether a Dask scheduler answers at an address, checked before a Client is made (simulator.distributed.
executors.DaskExecutor.connect), so that every way of not reaching one is one line naming the field, in
at most `CONNECT_TIMEOUT_S`:

- nothing listening (connection refused) or a host name that does not resolve: at once. Dask's own
  `connect` retries a refused connection until its timeout (10 s for nothing);
- a host that does not answer: `CONNECT_TIMEOUT_S`;
- a service that is not a Dask scheduler (an HTTP server, an SSH daemon): distributed 2026.8's `connect`
  reads the peer's handshake without a timeout (distributed/comm/core.py, `connect`: `handshake = await
  comm.read()`), so `Client(address, timeout="10s")` waited forever for a web server's answer; and a peer
  whose first bytes read as a frame length of exabytes raised MemoryError ("out of memory", exit 1). Here
  the handshake is one bounded attempt in a thread of its own (its own event loop: a caller's running loop,
  a notebook's, is left alone).
"""
from __future__ import annotations

import socket
import threading

from simulator.errors import ScenarioError

CONNECT_TIMEOUT_S = 10.0


def _host_port(address: str) -> tuple[str, int]:
    """(host, port) of `tcp://HOST:PORT` (simulator.config.dask_address.scheduler_address made it); an IPv6
    host without its brackets."""
    host, _, port = address[len("tcp://"):].rpartition(":")
    return host.strip("[]"), int(port)


def _handshake(address: str, timeout_s: float) -> BaseException | None:
    """Dask's connection handshake with `address`, bounded by `timeout_s`; the error, or None when a Dask
    peer answered."""
    import asyncio

    from distributed.comm import connect

    async def attempt() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=timeout_s), timeout_s)
        await comm.close()

    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            asyncio.run(attempt())
            outcome.append(None)
        except BaseException as exc:   # noqa: BLE001 — reported by the caller as one line
            outcome.append(exc)

    thread = threading.Thread(target=run, name="draftsim-dask-handshake", daemon=True)
    thread.start()
    thread.join(timeout_s + 1.0)
    return outcome[0] if outcome else TimeoutError(f"no answer in {timeout_s:g} s")


def check_scheduler_answers(address: str, field: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A ScenarioError naming `field` unless a Dask scheduler (or worker: any Dask peer) answers Dask's
    handshake at `address` (`tcp://HOST:PORT`) within `timeout_s` (module docstring)."""
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc) or type(exc).__name__)
        raise ScenarioError(field, f"cannot reach the Dask scheduler at {address}: {why}") from None
    failure = _handshake(address, timeout_s)
    if failure is None:
        return
    if isinstance(failure, TimeoutError):
        why = f"no Dask handshake in {timeout_s:g} s"
    else:
        detail = str(failure).splitlines()[0][:120] if str(failure) else ""
        why = f"its answer is not Dask's ({type(failure).__name__}{': ' + detail if detail else ''})"
    raise ScenarioError(field, f"cannot reach the Dask scheduler at {address}: something listens there, but {why}; "
                               "is it a Dask scheduler's port (8786 by default)?") from None
