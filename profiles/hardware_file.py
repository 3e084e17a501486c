"""User-defined hardware: a GPU described in YAML (a file or an inline block of a scenario), validated.

`load_hardware(ref, base_dir)` returns a `HardwareSpec` for:
- a catalog id (`draftsim catalog hardware`), case-insensitive;
- a path to a YAML file (`*.yaml` / `*.yml`, relative paths against `base_dir`, the scenario's folder);
- a mapping of the fields below (inline in the scenario).

Fields, SI units (the same names as `HardwareSpec`; YAML numbers such as `3.35e12` or strings `"3.35e12"`):

```yaml
id: my-gpu                                 # required: a plain name (letters, digits, . _ -), not a catalog id
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

Physical plausibility (`PLAUSIBLE`): each figure must lie in a range that spans the catalog's datasheet
figures (profiles.hardware: from the 2-core CPU entry to B200/B300/GB200) with at least 10× to spare on
both sides — a figure outside it is a unit slip (GB for bytes, Gbit for bytes, ms for s), not a device:

| field | allowed | catalog (datasheets) |
|---|---|---|
| peak_flops.* (dense) | 1e9 – 1e18 FLOP/s | 2.6e11 (cpu-local fp32) – 1.5e16 (GB300 fp4) |
| hbm_bytes | 1e8 – 1e13 B | 24 GB (cpu-local) – 288 GB (B300) |
| hbm_bandwidth_bytes_per_s | 1e9 – 1e14 B/s | 20 GB/s (cpu-local) – 8 TB/s (B200) |
| scaleup_bandwidth_bytes_per_s | 1e8 – 1e13 B/s | 10 GB/s (cpu-local) – 900 GB/s (B200 NVLink 5) |
| scaleout_bandwidth_bytes_per_s | 1e7 – 1e12 B/s | 1.25 GB/s (cpu-local) – 100 GB/s (B300, 800 Gb/s NIC) |
| host_link_bandwidth_bytes_per_s | 1e8 – 1e13 B/s | 32 GB/s (A100 PCIe 4) – 225 GB/s (GB200 NVLink-C2C) |
| *_latency_s (when > 0) | 1e-8 – 1e-2 s | 1 µs (NVLink) – 50 µs (cpu-local scale-out) |
| gpus_per_node | 1 – 1024 | 1 – 72 (GB200 NVL72) |
| tdp_w (when > 0) | 10 – 1e5 W | 350 W (L40S) – 1,400 W (GB300) |
| idle_w (when > 0) | 1 – 1e4 W | 40 W (L40S) – 161 W (GB300) |
| host_w_per_gpu (when > 0) | 10 – 1e5 W | 412 W (A100) – 788 W (B200) |
| cuda_total_bytes (when > 0) | 1e8 – 1e13 B, and at most CUDA_TOTAL_OVER_HBM × hbm_bytes | 79.19 GiB (H100) – 178.36 GiB (B200) |

`cuda_total_bytes` (optional, 0: not recorded) is the memory CUDA reports (cudaMemGetInfo's total), which
vLLM's gpu_memory_utilization is a fraction of (simulator.cluster.vllm_memory). It may exceed the datasheet's
decimal `hbm_bytes` (an "80 GB" H100 reports 79.19 GiB = 85.0e9 B: its HBM is 80 GiB), by at most
CUDA_TOTAL_OVER_HBM (GiB over GB, 1.074, with slack): a larger figure is a unit slip or another device.

`tests/profiles/test_hardware_user_dtypes.py` checks that every catalog entry sits inside these ranges with the
10× margin.
"""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path


from models.errors import FieldError, UnknownNameError, ascii_number, brief, catalog_key, is_boolean
from models.files import expand_home, read_document
from profiles.hardware import HARDWARE, HardwareSpec, get_hardware

# a plain name, as the catalog's ids (h100-sxm, a100-80gb): it names the hardware's profile folder
# (profiles/data/<id>/) and output columns, so never a path ('../x', 'a/b') nor a hidden name
HARDWARE_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
KNOWN_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
_POSITIVE = ("hbm_bytes", "hbm_bandwidth_bytes_per_s", "scaleup_bandwidth_bytes_per_s",
             "scaleout_bandwidth_bytes_per_s", "host_link_bandwidth_bytes_per_s")
_NON_NEGATIVE = ("scaleup_latency_s", "scaleout_latency_s", "host_link_latency_s", "tdp_w", "idle_w", "host_w_per_gpu",
                 "cuda_total_bytes")
CUDA_TOTAL_OVER_HBM = 1.1   # the largest cuda_total_bytes / hbm_bytes accepted (module docstring)
_DEFAULTS = {"gpus_per_node": 8, "scaleup_latency_s": 1.0e-6, "scaleout_latency_s": 5.0e-6,
             "host_link_bandwidth_bytes_per_s": 64.0e9, "host_link_latency_s": 3.0e-6, "tdp_w": 0.0, "idle_w": 0.0, "host_w_per_gpu": 0.0,
             "cuda_total_bytes": 0.0,
             "source": "user-defined"}
FIELDS = [f.name for f in dataclasses.fields(HardwareSpec)]
REQUIRED = ("id", "peak_flops", "hbm_bytes", "hbm_bandwidth_bytes_per_s", "scaleup_bandwidth_bytes_per_s",
            "scaleout_bandwidth_bytes_per_s")


PLAUSIBLE = {"peak_flops": (1e9, 1e18), "hbm_bytes": (1e8, 1e13), "hbm_bandwidth_bytes_per_s": (1e9, 1e14),
             "scaleup_bandwidth_bytes_per_s": (1e8, 1e13), "scaleout_bandwidth_bytes_per_s": (1e7, 1e12),
             "host_link_bandwidth_bytes_per_s": (1e8, 1e13), "scaleup_latency_s": (1e-8, 1e-2),
             "scaleout_latency_s": (1e-8, 1e-2), "host_link_latency_s": (1e-8, 1e-2), "gpus_per_node": (1, 1024),
             "tdp_w": (10, 1e5), "idle_w": (1, 1e4), "host_w_per_gpu": (10, 1e5), "cuda_total_bytes": (1e8, 1e13),
             "compute_units": (1, 3040)}   # (SMs or CUs: the catalog's most, MI300X's 304; 1e300 was taken)


def _plausible(number: float, field: str, name: str) -> float:
    lo, hi = PLAUSIBLE[name]
    if not lo <= number <= hi:
        raise FieldError(field, f"{number:g} is outside the physically plausible {lo:g} – {hi:g} (the catalog's "
                                "datasheet figures with 10x to spare; a unit slip?)")
    return number


def _number(value, field: str, rule: str, ok) -> float:
    if is_boolean(value):   # float(True) is 1.0: `gpus_per_node: true` was one GPU, `scaleup_latency_s: false` none
        raise FieldError(field, f"{str(value).lower()} is a boolean, not a number; expected {rule}")
    try:
        if isinstance(value, str) and "_" in value:   # float() reads '1_000e11' as 1e14
            raise ValueError(value)
        number = ascii_number(float, value) if isinstance(value, str) else float(value)   # ('٣e14' is 3e14)
    except (TypeError, ValueError):
        raise FieldError(field, f"{value!r} is not a number; expected {rule}") from None
    except OverflowError:   # float() of an integer beyond 1.8e308 (a 400-digit `hbm_bytes`)
        raise FieldError(field, f"{brief(value)} is beyond any finite number; expected {rule}") from None
    if not math.isfinite(number) or not ok(number):
        raise FieldError(field, f"{value!r} is not {rule}")
    return number


MAX_NAME_CHARS, MAX_NOTE_CHARS = 200, 10_000


def _text(value, field: str, max_chars: int, one_line: bool = False) -> str:
    """A name, source or note: text or a number (str() made a list or a mapping a name), a name on one line (a
    newline broke the one-line outputs that print it); "" for a missing one."""
    if value is None:
        return ""
    if is_boolean(value) or not isinstance(value, (str, int, float)):
        raise FieldError(field, f"{value!r} is not allowed; expected text")
    text = str(value)
    control = one_line and any(ord(c) < 32 or ord(c) == 127 for c in text)
    if len(text) > max_chars or control:
        raise FieldError(field, f"expected text of at most {max_chars:,} characters{' on one line' if one_line else ''}; "
                                f"got {len(text):,} characters{' with a control character' if control else ''}")
    return text


def hardware_from_fields(fields: dict, where: str = "hardware") -> HardwareSpec:
    """A validated HardwareSpec from a mapping of its fields (module docstring)."""
    if not isinstance(fields, dict):
        raise FieldError(where, f"expected a mapping of hardware fields ({', '.join(REQUIRED)}, ...)")
    unknown = sorted(set(fields) - set(FIELDS), key=str)   # (key=str: YAML reads `1: 2` as a number key)
    if unknown:
        raise FieldError(f"{where}.{unknown[0]}", f"unknown field; allowed: {', '.join(FIELDS)}")
    missing = [f for f in REQUIRED if f not in fields]
    if missing:
        raise FieldError(f"{where}.{missing[0]}", "required field is missing")
    out = {**_DEFAULTS, **fields}
    if out["id"] is None or is_boolean(out["id"]):   # str() made `id: null` the name 'none', `id: yes` 'true'
        raise FieldError(f"{where}.id", f"{str(out['id']).lower() if out['id'] is not None else 'null'} is not "
                                        "allowed; expected a plain name of letters, digits, '.', '_' and '-'")
    hid = catalog_key(str(out["id"]))
    if not hid or hid in HARDWARE:
        raise FieldError(f"{where}.id", f"{out['id']!r} must be a new name (not empty, not a catalog id: "
                         f"{', '.join(sorted(HARDWARE))})")
    if not HARDWARE_ID.fullmatch(hid):
        raise FieldError(f"{where}.id", f"{out['id']!r} is not allowed; expected a plain name of letters, digits, '.', "
                                        "'_' and '-', starting with a letter or digit, at most 64 characters "
                                        "(as the catalog's h100-sxm)")
    out["id"], out["name"] = hid, _text(out.get("name"), f"{where}.name", MAX_NAME_CHARS, one_line=True) or hid
    peaks = out["peak_flops"]
    if not isinstance(peaks, dict) or not {"bf16", "fp32"} <= set(peaks):
        raise FieldError(f"{where}.peak_flops", f"needs a mapping with at least bf16 and fp32 (dense FLOP/s); "
                         f"allowed keys: {', '.join(KNOWN_DTYPES)}")
    bad = sorted(set(peaks) - set(KNOWN_DTYPES), key=str)
    if bad:
        raise FieldError(f"{where}.peak_flops.{bad[0]}", f"unknown dtype; allowed: {', '.join(KNOWN_DTYPES)}")
    out["peak_flops"] = {d: _plausible(_number(v, f"{where}.peak_flops.{d}", "a FLOP/s rate > 0", lambda x: x > 0),
                                       f"{where}.peak_flops.{d}", "peak_flops")
                         for d, v in peaks.items()}
    for name in _POSITIVE:
        if name in out:
            out[name] = _plausible(_number(out[name], f"{where}.{name}", "a number > 0", lambda x: x > 0),
                                   f"{where}.{name}", name)
    for name in _NON_NEGATIVE:
        out[name] = _number(out[name], f"{where}.{name}", "a number >= 0", lambda x: x >= 0)
        if name in PLAUSIBLE and out[name] > 0:   # 0: a link priced without latency, allowed
            _plausible(out[name], f"{where}.{name}", name)
    if out["cuda_total_bytes"] > CUDA_TOTAL_OVER_HBM * out["hbm_bytes"]:
        raise FieldError(f"{where}.cuda_total_bytes", f"{out['cuda_total_bytes']:g} exceeds {CUDA_TOTAL_OVER_HBM} x "
                         f"hbm_bytes ({out['hbm_bytes']:g}): CUDA cannot report more memory than the device has "
                         "(a unit slip?); give the bytes cudaMemGetInfo reports, or 0")
    if out["idle_w"] > out["tdp_w"]:
        raise FieldError(f"{where}.idle_w", f"{out['idle_w']} must not exceed tdp_w ({out['tdp_w']})")
    for name in ("gpus_per_node", "compute_units"):
        if name in out:
            value = _number(out[name], f"{where}.{name}", "an integer >= 1", lambda x: x >= 1 and x == int(x))
            out[name] = int(_plausible(value, f"{where}.{name}", name))
    out["source"] = _text(out["source"], f"{where}.source", MAX_NOTE_CHARS)
    out["notes"] = _text(out.get("notes"), f"{where}.notes", MAX_NOTE_CHARS)
    return HardwareSpec(**out)


def load_hardware(ref, base_dir: Path | str | None = None, where: str = "hardware") -> HardwareSpec:
    """The HardwareSpec of a catalog id, a YAML file or an inline mapping (module docstring)."""
    if isinstance(ref, HardwareSpec):
        return ref
    if isinstance(ref, dict):
        return hardware_from_fields(ref, where)
    if isinstance(ref, str) and ref.lower().endswith((".yaml", ".yml")):
        try:
            path = expand_home(ref)
            if not path.is_absolute() and base_dir is not None:
                path = Path(base_dir) / path
            raw = read_document(path, "YAML")
        except ValueError as exc:
            raise FieldError(where, str(exc)) from None
        return hardware_from_fields(raw, where)
    if isinstance(ref, str) and catalog_key(ref) not in HARDWARE:   # (a folder or a file without the suffix
        # was called an unknown catalog id, with no word of what a hardware file's name must end in)
        raise UnknownNameError("hardware", ref, HARDWARE, "or a hardware YAML file (a path ending in .yaml or .yml)")
    return get_hardware(ref)
