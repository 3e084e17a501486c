"""A Dask scheduler's address as draftsim takes it (`--executor` of run, sweep and plan; a scenario's
`simulation.executor`): `dask://HOST:PORT` or `tcp://HOST:PORT`. Checked where it is given, before any work:
a port that is no number reached Dask's own parser (a ValueError traceback), and no host or a port beyond
65535 waited 10 s for a connection before its one line."""
from __future__ import annotations

from simulator.errors import ScenarioError

SCHEDULER_SCHEMES = ("dask://", "tcp://")


def scheduler_address(spec: str, field: str) -> str:
    """The scheduler's `tcp://HOST:PORT`; a ScenarioError naming `field` unless HOST is given and PORT is a
    number in 1..65535."""
    prefix = next((p for p in SCHEDULER_SCHEMES if spec.startswith(p)), "")
    host, colon, port = spec[len(prefix):].rpartition(":")
    if not (prefix and colon and host and port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ScenarioError(field, f"expected dask://HOST:PORT or tcp://HOST:PORT with a port in 1..65535; got {spec!r}")
    return f"tcp://{host}:{port}"
