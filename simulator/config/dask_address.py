"""A Dask scheduler's address as draftsim takes it (`--executor` of run, sweep and plan; a scenario's
`simulation.executor`): `dask://HOST:PORT` or `tcp://HOST:PORT`. Checked where it is given, before any work:
a port that is no number reached Dask's own parser (a ValueError traceback), and no host or a port beyond
65535 waited 10 s for a connection before its one line."""
from __future__ import annotations

import ipaddress
import re

from simulator.errors import ScenarioError

SCHEDULER_SCHEMES = ("dask://", "tcp://")


# a host name or an IPv4 address (letters, digits, '.', '-', '_'); an IPv6 address goes in brackets, [::1]
_HOST_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def _is_host(host: str) -> bool:
    """A host name, an IPv4 address or a bracketed IPv6 address (`tcp://::1:8786`, `tcp://[::1` reached Dask's
    parser: a ValueError traceback)."""
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
            return True
        except ValueError:
            return False
    return host.isascii() and _HOST_NAME.fullmatch(host) is not None


def scheduler_address(spec: str, field: str) -> str:
    """The scheduler's `tcp://HOST:PORT`; a ScenarioError naming `field` unless HOST is a host (`_is_host`) and
    PORT is a number in 1..65535."""
    prefix = next((p for p in SCHEDULER_SCHEMES if spec.startswith(p)), "")
    host, colon, port = spec[len(prefix):].rpartition(":")
    if not (prefix and colon and _is_host(host) and port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ScenarioError(field, f"expected dask://HOST:PORT or tcp://HOST:PORT with a port in 1..65535 (an IPv6 "
                                   f"host in brackets: tcp://[::1]:8786); got {spec!r}")
    return f"tcp://{host}:{port}"
