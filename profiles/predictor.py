"""`ProfiledLatencyModel`: op seconds from a measured profile table, roofline outside it.

How one op is priced (per op kind, dims split into *config* keys, which select a table, and *grid* keys,
which are interpolated; see `KIND_AXES`):

1. Exact config, inside the grid: multilinear interpolation of log(seconds) over log(1 + size) axes
   (power-law between neighbouring grid points; exact at grid points; the result is a weighted mean of
   the cell's corners, so it is monotone along an axis whenever the corners are).
2. Exact config, outside the grid (some size beyond the profiled range): the roofline fitted to the
   profile, times the measured/roofline ratio at the nearest grid edge. The ratio makes the price
   continuous at the edge; beyond it the fitted roofline carries the size dependence.
3. Config not profiled (another GEMM shape, head layout, vocab…): fitted roofline times the
   measured/roofline ratio of the nearest profiled config at the same (clamped) sizes.
4. Kind not profiled at all: the fitted roofline.
A warning is issued once per op kind when a price comes from far outside the profile (a size more than
`far_factor`× beyond the grid, a config whose sizes differ by more than that, or an unprofiled kind).

Approximations: prefill chunks of one step are priced as `seqs` equal chunks (the kernel runs one call per
sequence; the op graph only keeps sums), and grouped (MoE expert) GEMMs as `groups` equal GEMMs (one call
per expert). Timing noise of the profile passes straight into interpolated prices.
"""
from __future__ import annotations

from profiles.latency import UncountedUsage
import math
import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from models import ops as K_OPS
from models.files import file_kind_problem
from models.ops import Op
from profiles.hardware import get_hardware
from profiles.profiler.fit import COMPUTE_KINDS, fit_collectives, fit_compute
from profiles.profiler.interp import Grid, axis_coord, fill_holes
from profiles.profiler.table import HOST_OVERHEAD, read_fingerprint, read_table, row_dims
from profiles.roofline import RooflineLatencyModel

DATA_DIR = Path(__file__).resolve().parent / "data"

# kind → (config keys, grid keys); "prefix" is derived from q_tokens and attn_pairs.
KIND_AXES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    K_OPS.GEMM: (("n", "k"), ("m",)),
    K_OPS.ATTN_PREFILL: (("heads", "kv_heads", "head_dim"), ("q_tokens", "prefix")),
    K_OPS.ATTN_DECODE: (("heads", "kv_heads", "head_dim", "tree"), ("seqs", "q_per_seq", "ctx_per_seq")),
    K_OPS.NORM: (("hidden",), ("tokens",)),
    K_OPS.ACTIVATION: (("width",), ("tokens",)),
    K_OPS.EMBEDDING: (("hidden",), ("tokens",)),
    K_OPS.ROPE: (("heads", "head_dim"), ("tokens",)),
    K_OPS.SAMPLING: (("vocab", "greedy"), ("tokens",)),
    K_OPS.MOE_ROUTER: (("experts", "top_k", "hidden"), ("tokens",)),
    K_OPS.ALLREDUCE: (("ranks",), ("bytes",)),
    K_OPS.ALLTOALL: (("ranks",), ("bytes",)),
    K_OPS.P2P: ((), ("bytes",)),
}
# Dims an op may omit, with the value the profile is looked up at.
DIM_DEFAULTS = {"greedy": 1.0, "tree": 0.0, "ranks": 2.0}
MEMO_LIMIT = 1_000_000


def _per_call(op: Op) -> tuple[Op, float]:
    """The single kernel call an aggregate op stands for, and how many such calls it makes."""
    if op.kind == K_OPS.ATTN_PREFILL:
        seqs = op.dim("seqs")
        if seqs > 1:
            dims = dict(op.dims)
            dims.update(seqs=1.0, q_tokens=dims["q_tokens"] / seqs, attn_pairs=dims["attn_pairs"] / seqs)
            return Op(op.kind, op.name, op.flops / seqs, op.bytes / seqs, 1, tuple(sorted(dims.items()))), seqs
    elif op.kind == K_OPS.GEMM:
        groups = op.dim("groups", 1.0)
        if groups != 1.0:
            dims = {k: v for k, v in op.dims if k != "groups"}
            return Op(op.kind, op.name, op.flops / groups, op.bytes / groups, 1, tuple(sorted(dims.items()))), groups
    return op, 1.0


def _grid_value(kind: str, dims: Mapping[str, float], key: str) -> float:
    if key == "prefix":
        chunk = dims["q_tokens"] / dims.get("seqs", 1.0)
        pairs = dims["attn_pairs"] / dims.get("seqs", 1.0)
        return max(0.0, (pairs - chunk * (chunk + 1.0) / 2.0) / chunk)
    return dims[key]


def _table_grid_value(kind: str, dims: Mapping[str, float], key: str) -> float:
    """A profile row's grid coordinate. A row's prefix is a whole number of tokens (one chunk after a
    cached prefix), but tables written with 6 significant digits (before 2026-11-26) round attn_pairs, so
    the prefix derived from them is off by a fraction of a token (2,048-token chunk: 0.002): rounded here,
    or every chunk length would get its own prefix axis value and the grid would be mostly holes."""
    value = _grid_value(kind, dims, key)
    return float(round(value)) if key == "prefix" else value


class _ConfigTable:
    """One config of one kind: grids of log(measured) and log(measured / fitted roofline)."""

    def __init__(self, axes: list[list[float]], log_seconds: np.ndarray, log_ratio: np.ndarray):
        self.log_seconds = Grid(axes, log_seconds)
        self.log_ratio = Grid(axes, log_ratio)


class ProfiledLatencyModel(UncountedUsage):
    """LatencyModel backed by a profile directory (ops.csv + fingerprint.json) or a table DataFrame."""

    framework = version = None  # measured with draftsim's own torch kernels, not a serving framework

    def __init__(self, profile: str | Path | pd.DataFrame, hardware_id: str | None = None,
                 dtype: str | None = None, far_factor: float = 2.0):
        if isinstance(profile, pd.DataFrame):
            if hardware_id is None:
                raise ValueError("hardware_id is required when the profile is given as a table")
            table, fp = profile, {}
        else:
            table, fp = read_table(profile), read_fingerprint(profile)
        if not far_factor > 1.0:
            raise ValueError(f"far_factor must be > 1, got {far_factor}")
        self.hardware_id = hardware_id or fp.get("device_id")
        if not self.hardware_id:
            raise ValueError("hardware_id missing: pass it or use a profile whose fingerprint has device_id")
        self.dtype = dtype or fp.get("dtype", "fp32")
        self.fingerprint = fp
        self._far = math.log(far_factor)
        self._warned: set[str] = set()
        self._memo: dict[Op, float] = {}
        self._nearest_memo: dict[tuple, tuple[tuple, float]] = {}
        rows = table.to_dict("records")
        ops = [Op.make(r["kind"], r["kind"], r["flops"], r["bytes"], 1, **row_dims(r)) for r in rows]
        seconds = np.array([r["median_s"] for r in rows], dtype=float)
        compute = [i for i, op in enumerate(ops) if op.kind in COMPUTE_KINDS]
        hardware = get_hardware(self.hardware_id)
        if compute:
            eff, hardware, self.fit_rms_log = fit_compute([ops[i] for i in compute], seconds[compute], hardware,
                                                          self.dtype)
        else:
            eff, self.fit_rms_log = RooflineLatencyModel(hardware, dtype=self.dtype).efficiency, float("nan")
        collective = [i for i, op in enumerate(ops) if op.kind in K_OPS.COLLECTIVE_KINDS]
        link = fit_collectives([ops[i] for i in collective], seconds[collective], eff.launch_s)
        if link is not None:
            import dataclasses
            ranks = max(int(ops[i].dim("ranks", 2.0)) for i in collective)
            hardware = dataclasses.replace(hardware, scaleup_latency_s=link[0], scaleup_bandwidth_bytes_per_s=link[1],
                                           gpus_per_node=max(hardware.gpus_per_node, ranks))
            eff = dataclasses.replace(eff, collective_bandwidth_fraction=1.0)
        self.efficiency, self.hardware = eff, hardware
        self.roofline = RooflineLatencyModel(hardware, eff, self.dtype)
        self._tables = self._build_tables(ops, seconds)
        self._host = _host_overhead_curves(table)

    def describe(self) -> dict:
        """`latency_source` entry: the profile that priced the ops (roofline fitted to it outside its grid)."""
        keep = ("device_name", "dtype", "threads", "date", "torch_version")
        return {"source": "profile", "hardware": self.hardware_id,
                "fingerprint": {k: v for k, v in self.fingerprint.items() if k in keep}}

    def host_overhead_s(self, layers: int, tokens: float) -> float:
        """Host seconds of one forward pass of a `layers`-layer model over `tokens` tokens (the work between
        kernels, profiles.profiler.host_overhead): per-layer overhead interpolated linearly in log(tokens)
        between the profiled pass sizes (constant beyond them), times `layers`. A layer count that was not
        profiled takes the per-layer curve of the nearest profiled one. 0 when the profile has no such rows
        (GPU profiles: host work overlaps the device's there)."""
        if not self._host or tokens <= 0:
            return 0.0
        key = min(self._host, key=lambda n: (abs(math.log(n / layers)), n)) if layers not in self._host else layers
        log_tokens, per_layer_s = self._host[key]
        return layers * float(np.interp(math.log(tokens), log_tokens, per_layer_s))

    # ---- load-time precompute --------------------------------------------------------------------
    def _build_tables(self, ops: list[Op], seconds: np.ndarray) -> dict[str, dict[tuple, _ConfigTable]]:
        groups: dict[tuple[str, tuple], list[tuple[tuple, float, float]]] = {}
        for op, t in zip(ops, seconds):
            if op.kind not in KIND_AXES:
                continue
            config_keys, grid_keys = KIND_AXES[op.kind]
            dims = {**DIM_DEFAULTS, **dict(op.dims)}
            config = tuple(dims[k] for k in config_keys)
            point = tuple(_table_grid_value(op.kind, dims, k) for k in grid_keys)
            ratio = t / self.roofline.op_seconds(op)
            groups.setdefault((op.kind, config), []).append((point, math.log(t), math.log(ratio)))
        tables: dict[str, dict[tuple, _ConfigTable]] = {}
        for (kind, config), entries in groups.items():
            axes = [sorted({p[d] for p, _, _ in entries}) for d in range(len(entries[0][0]))]
            index = [{v: i for i, v in enumerate(axis)} for axis in axes]
            log_t = np.full([len(a) for a in axes], np.nan)
            log_r = np.full_like(log_t, np.nan)
            for point, lt, lr in entries:
                at = tuple(index[d][v] for d, v in enumerate(point))
                log_t[at], log_r[at] = lt, lr
            tables.setdefault(kind, {})[config] = _ConfigTable(axes, fill_holes(log_t), fill_holes(log_r))
        return tables

    # ---- pricing ---------------------------------------------------------------------------------
    def op_seconds(self, op: Op) -> float:
        found = self._memo.get(op)
        if found is None:
            found = self._price(op)
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            self._memo[op] = found
        return found

    def _price(self, op: Op) -> float:
        if op.kind not in KIND_AXES:
            if op.kind not in K_OPS.OP_KINDS:
                raise ValueError(f"op {op.name!r}: unknown kind {op.kind!r}; allowed: {', '.join(K_OPS.OP_KINDS)}")
            self._warn(op, "the profiler does not time this kind")   # e.g. shared-prefix attention
            return self.roofline.op_seconds(op)
        call, calls = _per_call(op)
        tables = self._tables.get(op.kind)
        if not tables:
            self._warn(op, "no profiled point of this kind")
            return calls * self.roofline.op_seconds(call)
        config_keys, grid_keys = KIND_AXES[op.kind]
        dims = {**DIM_DEFAULTS, **dict(call.dims)}
        if op.kind == K_OPS.ATTN_DECODE and dims["q_per_seq"] <= 1.0:
            dims["tree"] = 0.0          # a one-node tree is plain causal decoding (same kernel call)
        config = tuple(dims.get(k, 0.0) for k in config_keys)
        point = [_grid_value(op.kind, dims, k) for k in grid_keys]
        table = tables.get(config)
        if table is not None:
            cells, outside = table.log_seconds.locate(point)
            if outside == 0.0:
                return calls * math.exp(table.log_seconds.interpolate(cells)[0])
            if outside > self._far:
                self._warn(op, "a size lies far outside the profiled grid")
            return calls * self.roofline.op_seconds(call) * math.exp(table.log_ratio.interpolate(cells)[0])
        found = self._nearest_memo.get((op.kind, config))
        if found is None:
            found = self._nearest_memo[(op.kind, config)] = self._nearest(tables, config)
        nearest, distance = found
        table = tables[nearest]
        cells, outside = table.log_ratio.locate(point)
        if max(distance, outside) > self._far:
            self._warn(op, "its shape is far from every profiled shape")
        return calls * self.roofline.op_seconds(call) * math.exp(table.log_ratio.interpolate(cells)[0])

    @staticmethod
    def _nearest(tables: Mapping[tuple, _ConfigTable], config: tuple) -> tuple[tuple, float]:
        best, best_distance = None, math.inf
        for candidate in tables:
            distance = max((abs(axis_coord(a) - axis_coord(b)) for a, b in zip(config, candidate)), default=0.0)
            if distance < best_distance:
                best, best_distance = candidate, distance
        return best, best_distance

    def _warn(self, op: Op, why: str) -> None:
        if op.kind in self._warned:
            return
        self._warned.add(op.kind)
        warnings.warn(f"{self.hardware_id} profile: {op.kind} op {op.name!r} {dict(op.dims)} is priced by the "
                      f"roofline fitted to the profile because {why} (warned once per op kind)",
                      RuntimeWarning, stacklevel=3)


def _host_overhead_curves(table: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """layers → (sorted log tokens, host seconds per layer) from the profile's host_overhead rows
    (repeated token counts, e.g. a decode group and a prefill chunk of 16 tokens, are averaged)."""
    if "layers" not in table.columns:
        return {}
    rows = table[table["kind"] == HOST_OVERHEAD]
    curves = {}
    for layers, group in rows.groupby("layers"):
        per_token = (group["median_s"] / layers).groupby(group["tokens"]).mean().sort_index()
        curves[int(layers)] = (np.log(per_token.index.to_numpy(float)), per_token.to_numpy(float))
    return curves


def profile_dir_for(hardware_id: str, profile_dir: str | Path | None = None) -> Path | None:
    """The profile directory of `hardware_id` (explicit dir, else profiles/data/<id>/), if it holds a table."""
    candidate = Path(profile_dir) if profile_dir is not None else DATA_DIR / hardware_id
    return candidate if file_kind_problem(candidate / "ops.csv") is None else None   # (a name too long: none)


PROFILE_VARIANT_SEPARATOR = "--"  # profiles/data/<hardware-id>--<machine>/: another machine of the same id


def profile_dir_for_device(hardware_id: str, device_name: str,
                           identity: str | None = None) -> tuple[Path | None, bool]:
    """The shipped profile of `hardware_id` measured on a device named `device_name` (the fingerprint's
    `device_name`: CPU model or GPU name), and whether it matches: profiles/data/<id>/ or one of its
    variants profiles/data/<id>--<machine>/ (the same id measured on another machine, e.g. the
    `cpu-local` development VM, which is not always the same CPU). Falls back to profiles/data/<id>/ with
    False when no shipped profile was measured on this device. `identity`: a CPU's
    profiles.profiler.machine.cpu_identity, which the device name alone does not settle on a VM."""
    from profiles.profiler.machine import same_machine
    default = profile_dir_for(hardware_id)
    candidates = [default] if default is not None else []
    candidates += sorted(d for d in DATA_DIR.glob(f"{hardware_id}{PROFILE_VARIANT_SEPARATOR}*")
                         if (d / "ops.csv").is_file())
    for candidate in candidates:
        if same_machine(read_fingerprint(candidate), device_name, identity):
            return candidate, True
    return default, False


def load_latency_model(hardware_id: str, profile_dir: str | Path | None = None,
                       dtype: str | None = None) -> ProfiledLatencyModel | RooflineLatencyModel:
    """A profile-backed model when a profile exists for `hardware_id`, else the catalog roofline.

    `dtype` is the weight dtype of the ops to be priced; a profile measured in another dtype is not used
    (its times would not apply), and the roofline answers instead."""
    get_hardware(hardware_id)  # validates the id
    found = profile_dir_for(hardware_id, profile_dir)
    if profile_dir is not None and found is None:
        raise ValueError(f"profile_dir {str(profile_dir)!r} has no ops.csv")
    if found is not None:
        fp = read_fingerprint(found)
        if dtype is None or fp.get("dtype") == dtype:
            return ProfiledLatencyModel(found, hardware_id=hardware_id)
    return RooflineLatencyModel(hardware_id, dtype=dtype or "bf16")
