"""Which machine a profile was measured on, beyond the model name a hypervisor shows.

Cloud VMs often hide the CPU's model name: two different Xeons (the 110 MB-L3 machine that measured
profiles/data/cpu-local/ and the 300 MiB-L3 Emerald Rapids this project later ran on) both read
"Intel(R) Xeon(R) Processor", and `draftsim validate` took one's profile for the other's without its "compares
two machines" warning (issue 29: a 62 % miss). A CPU is therefore identified by its model name plus
/proc/cpuinfo's family/model/stepping and its last-level cache size; a GPU by its name (its profile times the
GPU's kernels, not the host's).
"""
from __future__ import annotations

from collections.abc import Mapping


def cpu_identity(llc_bytes: int) -> str:
    """'family/model/stepping, L3 bytes' of this host ('' parts where /proc/cpuinfo has none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("cpu family", "model", "stepping") and key not in fields:
                    fields[key] = value.strip()
                if not line.strip() and fields:
                    break
    except OSError:
        pass
    sig = "/".join(fields.get(k, "") for k in ("cpu family", "model", "stepping"))
    return f"{sig}, L3 {int(llc_bytes)} bytes"


def same_machine(fingerprint: Mapping, device_name: str, identity: str | None) -> bool:
    """Whether a profile's fingerprint was measured on this machine: the same device name and, for a CPU
    (`identity` given), the same identity — or, for fingerprints written before identities were recorded,
    the same last-level cache size."""
    if fingerprint.get("device_name") != device_name:
        return False
    if identity is None:
        return True
    if fingerprint.get("cpu_identity"):
        return fingerprint["cpu_identity"] == identity
    llc = fingerprint.get("llc_bytes")
    return llc is None or identity.endswith(f"L3 {int(llc)} bytes")
