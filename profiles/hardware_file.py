"""User-defined hardware: a GPU described in YAML (a file or an inline block of a scenario), validated.

`load_hardware(ref, base_dir)` returns a `HardwareSpec` for:
- a catalog id (`draftsim catalog hardware`), case-insensitive;
- a path to a YAML file (`*.yaml` / `*.yml`, relative paths against `base_dir`, the scenario's folder);
- a mapping of the fields below (inline in the scenario).

Fields, SI units (the same names as `HardwareSpec`; YAML numbers such as `3.35e12` or strings `"3.35e12"`):

```yaml
id: my-gpu                                 # required, must not shadow a catalog id
name: My accelerator 96GB                  # default: the id
peak_flops: {fp32: 6.0e13, bf16: 8.0e14, fp8: 1.6e15}   # dense FLOP/s per dtype; bf16 and fp32 required
hbm_bytes: 96.0e9                          # device memory, bytes
hbm_bandwidth_bytes_per_s: 4.0e12
scaleup_bandwidth_bytes_per_s: 450.0e9     # per GPU, one direction (NVLink, or PCIe without it)
scaleout_bandwidth_bytes_per_s: 50.0e9     # per GPU NIC, one direction
gpus_per_node: 8                           # default 8
scaleup_latency_s: 1.0e-6                  # default 1 µs
scaleout_latency_s: 5.0e-6                 # default 5 µs
host_link_bandwidth_bytes_per_s: 64.0e9    # default 64 GB/s (PCIe Gen5 x16)
host_link_latency_s: 3.0e-6                # default 3 µs
compute_units: 132                         # optional, informational
tdp_w: 700                                 # board power limit, W (default 0: no energy figures)
idle_w: 80                                 # idle with a model loaded (default: profiles.hardware.IDLE_FRACTION_OF_TDP of tdp_w)
host_w_per_gpu: 575                        # the node beside its GPUs, per GPU (default 0: not counted)
source: where the numbers come from        # default "user-defined"
```

User hardware has no measured kernel tables: its steps are priced by the roofline with the generic
efficiency factors of `profiles.roofline.RooflineEfficiency` (the run's `latency_source` says so).
Errors are ValueErrors naming the field and what is allowed.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path


from models.files import read_document
from profiles.hardware import HARDWARE, HardwareSpec, get_hardware

KNOWN_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
_POSITIVE = ("hbm_bytes", "hbm_bandwidth_bytes_per_s", "scaleup_bandwidth_bytes_per_s",
             "scaleout_bandwidth_bytes_per_s", "host_link_bandwidth_bytes_per_s")
_NON_NEGATIVE = ("scaleup_latency_s", "scaleout_latency_s", "host_link_latency_s", "tdp_w", "idle_w", "host_w_per_gpu")
_DEFAULTS = {"gpus_per_node": 8, "scaleup_latency_s": 1.0e-6, "scaleout_latency_s": 5.0e-6,
             "host_link_bandwidth_bytes_per_s": 64.0e9, "host_link_latency_s": 3.0e-6, "tdp_w": 0.0, "idle_w": 0.0, "host_w_per_gpu": 0.0,
             "source": "user-defined"}
FIELDS = [f.name for f in dataclasses.fields(HardwareSpec)]
REQUIRED = ("id", "peak_flops", "hbm_bytes", "hbm_bandwidth_bytes_per_s", "scaleup_bandwidth_bytes_per_s",
            "scaleout_bandwidth_bytes_per_s")


def _number(value, field: str, rule: str, ok) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field}: {value!r} is not a number; expected {rule}") from None
    if not math.isfinite(number) or not ok(number):
        raise ValueError(f"{field}: {value!r} is not {rule}")
    return number


def hardware_from_fields(fields: dict, where: str = "hardware") -> HardwareSpec:
    """A validated HardwareSpec from a mapping of its fields (module docstring)."""
    if not isinstance(fields, dict):
        raise ValueError(f"{where}: expected a mapping of hardware fields ({', '.join(REQUIRED)}, ...)")
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field; allowed: {', '.join(FIELDS)}")
    missing = [f for f in REQUIRED if f not in fields]
    if missing:
        raise ValueError(f"{where}.{missing[0]}: required field is missing")
    out = {**_DEFAULTS, **fields}
    hid = str(out["id"]).strip().lower()
    if not hid or hid in HARDWARE:
        raise ValueError(f"{where}.id: {out['id']!r} must be a new name (not empty, not a catalog id: "
                         f"{', '.join(sorted(HARDWARE))})")
    out["id"], out["name"] = hid, str(out.get("name") or hid)
    peaks = out["peak_flops"]
    if not isinstance(peaks, dict) or not {"bf16", "fp32"} <= set(peaks):
        raise ValueError(f"{where}.peak_flops: needs a mapping with at least bf16 and fp32 (dense FLOP/s); "
                         f"allowed keys: {', '.join(KNOWN_DTYPES)}")
    bad = sorted(set(peaks) - set(KNOWN_DTYPES))
    if bad:
        raise ValueError(f"{where}.peak_flops.{bad[0]}: unknown dtype; allowed: {', '.join(KNOWN_DTYPES)}")
    out["peak_flops"] = {d: _number(v, f"{where}.peak_flops.{d}", "a FLOP/s rate > 0", lambda x: x > 0)
                         for d, v in peaks.items()}
    for name in _POSITIVE:
        if name in out:
            out[name] = _number(out[name], f"{where}.{name}", "a number > 0", lambda x: x > 0)
    for name in _NON_NEGATIVE:
        out[name] = _number(out[name], f"{where}.{name}", "a number >= 0", lambda x: x >= 0)
    if out["idle_w"] > out["tdp_w"]:
        raise ValueError(f"{where}.idle_w: {out['idle_w']} must not exceed tdp_w ({out['tdp_w']})")
    for name in ("gpus_per_node", "compute_units"):
        if name in out:
            value = _number(out[name], f"{where}.{name}", "an integer >= 1", lambda x: x >= 1 and x == int(x))
            out[name] = int(value)
    out["source"], out["notes"] = str(out["source"]), str(out.get("notes", ""))
    return HardwareSpec(**out)


def load_hardware(ref, base_dir: Path | str | None = None, where: str = "hardware") -> HardwareSpec:
    """The HardwareSpec of a catalog id, a YAML file or an inline mapping (module docstring)."""
    if isinstance(ref, HardwareSpec):
        return ref
    if isinstance(ref, dict):
        return hardware_from_fields(ref, where)
    if isinstance(ref, str) and ref.lower().endswith((".yaml", ".yml")):
        path = Path(ref).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        try:
            raw = read_document(path, "YAML")
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        return hardware_from_fields(raw, where)
    return get_hardware(ref)
