"""Reading the package's parquet tables into `MeasuredGrid`s: GEMMs and collectives.

Every table holds one or more kernel implementations (`kernel_source`) per dtype; draftsim uses, per
(table, dtype), the implementation measured over the most points, which is the one the framework
selects by default on that GPU (e.g. torch linear for BF16 and CUTLASS scaled-mm for FP8 GEMMs in vLLM
on H100, FlashAttention-3 for attention). Latencies in the package are milliseconds; here seconds.
"""
from __future__ import annotations

from functools import cached_property, partial
from pathlib import Path

import numpy as np

from models.spec import dtype_bytes
from profiles.measured import ideal
from profiles.measured.grid import MeasuredGrid
from profiles.measured.table_cache import cached_read

MS = 1e-3

# draftsim dtype -> the package's dtype label (GEMM weights, attention KV cache, MoE weights).
# Approximation: fp16 is priced with the BF16 tables (same tensor-core rate on every GPU measured).
# fp8: per-tensor scaled (CUTLASS scaled-mm in vLLM); fp8_block: 128×128 block-scaled (DeepGEMM/CUTLASS);
# nvfp4: W4A4 with 16-value FP8 block scales (vLLM 0.24 FlashInferCuteDslNvFp4LinearKernel on Blackwell).
# mxfp4 has no GEMM table in the package (its GEMMs are the roofline's; latency_source says so).
GEMM_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}
KV_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8"}
# A dtype's GEMM table prices a model only if it was measured at weight shapes: n and k (a weight's output
# and input sizes) up to at least this. Below it the table holds launch-bound toy shapes whose scaled
# extrapolation (profiles.measured.grid) multiplies a ~0.18 ms launch by the FLOP ratio to a real weight:
# aiconfigurator-core 0.12.0's rtx_pro_6000_server vllm 0.24.0 fp8_block table (n, k <= 128, 518 rows) priced
# one llama-3-8b decode step at 146 s. Such a dtype counts as unmeasured (the roofline prices it under
# `source: auto`, with a warning). Every other table of the package reaches n, k = 65536.
MIN_GEMM_WEIGHT_EXTENT = 4096
# GEMM rows timed as one eager launch, by the framework whose collector timed them: priced from a graph-timed
# dtype of the same table instead (dtype -> stand-in). aiconfigurator's vLLM collector times fp8_block eagerly
# (collector/vllm/collect_gemm.py, `benchmark_with_power(..., use_cuda_graph=gemm_type != "fp8_block")`; its
# SGLang and TensorRT-LLM collectors time every dtype in CUDA graphs), so the vLLM tables' fp8_block rows carry
# the host's launch gaps: 59-98 µs for an H100 4096×4096 GEMM at m = 1-256 in vLLM 0.24.0, where SGLang's and
# TensorRT-LLM's graph-timed fp8_block rows and vLLM's own per-tensor fp8 rows take 9-22 µs (aisimulate PR #219's
# B200 A/B at vLLM 0.25.1, eager vs one-op graph: 148.55 vs 12.32 µs at (1, 768, 7168)). A serving engine runs
# its decode GEMMs in CUDA graphs, so vLLM's fp8_block GEMMs are priced from its graph-timed per-tensor fp8
# rows (CUTLASS scaled-mm). Approximation, named: the 128×128 block scales' work is not priced (1/16384 of the
# weight bytes; at m = 4096 the two tables agree within 5 %: 146.7 µs block-scaled eager, 153.8 µs per-tensor).
EAGER_GEMM_STAND_INS = {"vllm": {"fp8_block": "fp8"}}


class Columns:
    """A table's columns as NumPy arrays (row order kept), with the few operations the pricing reads:
    filtering rows (`where`), splitting by key columns (`groupby`: keys sorted as pandas sorts them, rows
    in table order within a group) and stacking columns (`matrix`). Text columns are held factorized
    (codes into their sorted distinct values), so grouping and counting them is integer work. Read with
    pyarrow alone: pandas would cost `draftsim estimate` most of its start-up time."""

    def __init__(self, numbers: dict[str, np.ndarray], texts: dict[str, tuple[np.ndarray, np.ndarray]]):
        self._numbers, self._texts = numbers, texts   # texts: name -> (codes, sorted labels as objects)

    @property
    def columns(self) -> list[str]:
        return [*self._numbers, *self._texts]

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def __len__(self) -> int:
        for values in self._numbers.values():
            return len(values)
        for codes, _ in self._texts.values():
            return len(codes)
        return 0

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self._texts:
            codes, labels = self._texts[name]
            return labels[codes]
        return self._numbers[name]

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(codes, labels) of a text column, or of a number column factorized."""
        if name in self._texts:
            return self._texts[name]
        labels, codes = np.unique(self._numbers[name], return_inverse=True)
        return codes, labels

    def with_text(self, name: str, values: np.ndarray) -> "Columns":
        """These columns and a text column `name` (one Python object per row)."""
        return Columns(dict(self._numbers), {**self._texts, name: _factorized(list(values))})

    def where(self, mask: np.ndarray) -> "Columns":
        return Columns({name: values[mask] for name, values in self._numbers.items()},
                       {name: (codes[mask], labels) for name, (codes, labels) in self._texts.items()})

    def matrix(self, names: list[str]) -> np.ndarray:
        """(rows, len(names)) float64."""
        return np.column_stack([self._numbers[name].astype(float) for name in names])

    def groupby(self, keys: str | list[str]):
        """(key, rows) per distinct key in sorted order: a scalar key for one column name, a tuple for a
        list (as pandas' groupby; the tables have no missing keys)."""
        names = [keys] if isinstance(keys, str) else list(keys)
        if self.empty:
            return
        code = np.zeros(len(self), dtype=np.int64)
        labels = []
        for name in names:
            codes, distinct = self.codes(name)
            code = code * len(distinct) + codes
            labels.append(distinct)
        order = np.argsort(code, kind="stable")
        code = code[order]
        starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
        for start, end in zip(starts.tolist(), np.r_[starts[1:], len(code)].tolist()):
            key, rest = [], int(code[start])
            for distinct in reversed(labels):
                rest, at = divmod(rest, len(distinct))
                value = distinct[at]
                key.append(value.item() if isinstance(value, np.generic) else value)
            key.reverse()
            yield (key[0] if isinstance(keys, str) else tuple(key)), self.where(order[start:end])


def read(path: Path, columns: list[str]) -> Columns:
    """The columns of a table that exist (older versions lack some, e.g. window_size); from the per-user
    cache of decoded tables when it holds them (profiles.measured.table_cache)."""
    return cached_read(path, columns, _read_parquet, Columns)


def _read_parquet(path: Path, columns: list[str]) -> tuple[dict, dict]:
    """(numbers, factorized texts) of the columns of a parquet table that exist."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    schema = pq.read_schema(path)
    wanted = [c for c in columns if c in schema.names]
    texts = [c for c in wanted if pa.types.is_string(schema.field(c).type) or pa.types.is_large_string(schema.field(c).type)]
    data = pq.ParquetFile(path, read_dictionary=texts).read(columns=wanted)   # text columns as codes + values
    numbers, factorized = {}, {}
    for name in data.column_names:
        column = data.column(name)
        kind = column.type
        if pa.types.is_dictionary(kind) and column.null_count == 0:
            factorized[name] = _from_dictionary(column.chunks)
        elif column.null_count or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            factorized[name] = _factorized(column.to_pylist())
        else:   # from the buffer (pyarrow's own `to_numpy` imports pandas)
            numbers[name] = np.concatenate([np.zeros(0, dtype=np.dtype(kind.to_pandas_dtype()))]
                                           + [_buffer(chunk) for chunk in column.chunks])
    return numbers, factorized


def _buffer(array) -> np.ndarray:
    """A null-free pyarrow array of numbers as NumPy (a copy of its data buffer)."""
    dtype = np.dtype(array.type.to_pandas_dtype())
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize).copy()


def _from_dictionary(chunks) -> tuple[np.ndarray, np.ndarray]:
    """(codes, sorted distinct values) of dictionary-encoded chunks, without a Python pass over the rows."""
    values = [chunk.dictionary.to_pylist() for chunk in chunks]
    distinct = sorted(set().union(*values)) if values else []
    at = {v: i for i, v in enumerate(distinct)}
    codes = [np.array([at[v] for v in vals], dtype=np.int64)[_buffer(chunk.indices)] if len(vals) else
             np.zeros(len(chunk), dtype=np.int64) for vals, chunk in zip(values, chunks)]
    labels = np.empty(len(distinct), dtype=object)
    labels[:] = distinct
    return np.concatenate([np.zeros(0, dtype=np.int64)] + codes), labels


def _factorized(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(codes, sorted distinct values as an object array) of a list of Python values (strings, None)."""
    distinct = sorted(set(values), key=lambda v: (v is None, str(v)))
    at = {v: i for i, v in enumerate(distinct)}
    labels = np.empty(len(distinct), dtype=object)
    labels[:] = distinct
    return np.fromiter((at[v] for v in values), dtype=np.int64, count=len(values)), labels


def dominant_source(frame: Columns) -> Columns:
    """Rows of the kernel implementation measured over the most points (ties: alphabetical)."""
    if "kernel_source" not in frame.columns or frame.empty:
        return frame
    codes, labels = frame.codes("kernel_source")
    counts = np.bincount(codes, minlength=len(labels))
    best = min(np.flatnonzero(counts == counts.max()).tolist(), key=lambda i: str(labels[i]))
    return frame.where(codes == best)


def most_measured_first(frame: Columns, name: str) -> list[str]:
    """Distinct values of a column, the most frequent first (ties: in order of first appearance)."""
    codes, labels = frame.codes(name)
    present, first, counts = np.unique(codes, return_index=True, return_counts=True)
    order = sorted(range(len(present)), key=lambda i: (-int(counts[i]), int(first[i])))
    return [str(labels[present[i]]) for i in order]


class GemmTables:
    """(m, n, k) grids per dtype of one framework's GEMM table (`framework`: the one whose collector timed it,
    for EAGER_GEMM_STAND_INS)."""

    def __init__(self, path: Path, peaks_of, framework: str = ""):
        frame = read(path, ["kernel_source", "gemm_dtype", "m", "n", "k", "latency"])
        self._frames = {dt: dominant_source(part) for dt, part in frame.groupby("gemm_dtype")}
        self._frames = {dt: part for dt, part in self._frames.items()
                        if min(part["n"].max(), part["k"].max()) >= MIN_GEMM_WEIGHT_EXTENT}
        self._peaks_of = peaks_of
        self._grids: dict[str, MeasuredGrid] = {}
        # a dtype measured, but eagerly: its graph-timed stand-in prices it where the table has one
        self._stand_in = {dt: other for dt, other in EAGER_GEMM_STAND_INS.get(framework, {}).items()
                          if GEMM_DTYPES[dt] in self._frames and GEMM_DTYPES[other] in self._frames}

    @property
    def dtypes(self) -> list[str]:
        """draftsim dtypes with a measured table."""
        return [d for d, label in GEMM_DTYPES.items() if label in self._frames]

    def kernel(self, dtype: str) -> str:
        priced = self._stand_in.get(dtype, dtype)
        kernel = str(self._frames[GEMM_DTYPES[priced]]["kernel_source"][0])
        return kernel if priced == dtype else f"{kernel} ({priced} rows: the {dtype} rows are eager-timed)"

    def grid(self, dtype: str) -> MeasuredGrid:
        dtype = self._stand_in.get(dtype, dtype)
        found = self._grids.get(dtype)
        if found is None:
            part = self._frames[GEMM_DTYPES[dtype]]
            w = dtype_bytes(dtype)
            f = partial(_gemm_ideal, self._peaks_of(dtype), w)
            found = self._grids[dtype] = MeasuredGrid.from_points(
                part.matrix(["m", "n", "k"]), part["latency"].astype(float) * MS, f)
        return found

    def seconds(self, dtype: str, m: float, n: float, k: float) -> tuple[float, bool]:
        """Seconds of an (m×k)·(k×n) GEMM (cached curves along m: a model has few (n, k) shapes)."""
        return self.grid(dtype).seconds((m, n, k))


def _gemm_ideal(peaks, weight_bytes, point) -> float:
    m, n, k = point
    return ideal.gemm(peaks, weight_bytes, 2.0, m, n, k)


class CollectiveTables:
    """Message-size grids per (collective, ranks): the framework's custom all-reduce (CUDA-graph mode)
    and NCCL's all-gather / all-to-all / all-reduce. Message sizes in the package are 16-bit elements.
    The tables are read when a collective is first priced (a one-GPU step never reads them)."""

    ELEMENT_BYTES = 2.0

    def __init__(self, custom_allreduce: Path | None, nccl: Path | None, peaks):
        self._peaks = peaks
        self._paths = custom_allreduce, nccl
        self._grids: dict[tuple[str, int], MeasuredGrid] = {}

    @cached_property
    def _points(self) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
        custom_allreduce, nccl = self._paths
        points = {}
        if nccl is not None:
            frame = read(nccl, ["op_name", "nccl_dtype", "num_gpus", "message_size", "latency"])
            frame = frame.where(np.isin(frame["nccl_dtype"], ["half", "bfloat16"]))
            for (op, ranks), part in frame.groupby(["op_name", "num_gpus"]):
                points[(f"nccl_{op}", int(ranks))] = (part["message_size"].astype(float),
                                                      part["latency"].astype(float) * MS)
        if custom_allreduce is not None:
            frame = read(custom_allreduce, ["kernel_source", "num_gpus", "message_size", "latency", "backend"])
            if "backend" in frame.columns:  # CUDA-graph rows: kernel time without eager launch overhead
                graph = frame.where(np.char.endswith(frame["backend"].astype(str), "_graph"))
                frame = graph if len(graph) else frame
            for ranks, part in frame.groupby("num_gpus"):
                points[("allreduce", int(ranks))] = (part["message_size"].astype(float),
                                                     part["latency"].astype(float) * MS)
        return points

    def has(self, collective: str, ranks: int) -> bool:
        return (collective, ranks) in self._points

    def seconds(self, collective: str, ranks: int, nbytes: float) -> tuple[float, bool]:
        key = (collective, ranks)
        grid = self._grids.get(key)
        if grid is None:
            sizes, secs = self._points[key]
            shape = ideal.allreduce if collective in ("allreduce", "nccl_all_reduce") else ideal.alltoall
            f = partial(_collective_ideal, shape, self._peaks, float(ranks), self.ELEMENT_BYTES)
            grid = self._grids[key] = MeasuredGrid.from_points(sizes[:, None], secs, f)
        return grid.seconds((nbytes / self.ELEMENT_BYTES,))


def _collective_ideal(shape, peaks, ranks, element_bytes, point) -> float:
    return shape(peaks, ranks, point[0] * element_bytes)
