"""Reading the package's parquet tables into `MeasuredGrid`s: GEMMs and collectives.

Every table holds one or more kernel implementations (`kernel_source`) per dtype; draftsim uses, per
(table, dtype), the implementation measured over the most points, which is the one the framework
selects by default on that GPU (e.g. torch linear for BF16 and CUTLASS scaled-mm for FP8 GEMMs in vLLM
on H100, FlashAttention-3 for attention). Latencies in the package are milliseconds; here seconds.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from models.spec import dtype_bytes
from profiles.measured import ideal
from profiles.measured.grid import MeasuredGrid

MS = 1e-3

# draftsim dtype -> the package's dtype label (GEMM weights, attention KV cache, MoE weights).
# Approximation: fp16 is priced with the BF16 tables (same tensor-core rate on every GPU measured).
# fp8: per-tensor scaled (CUTLASS scaled-mm in vLLM); fp8_block: 128×128 block-scaled (DeepGEMM/CUTLASS);
# nvfp4: W4A4 with 16-value FP8 block scales (vLLM 0.24 FlashInferCuteDslNvFp4LinearKernel on Blackwell).
# mxfp4 has no GEMM table in the package (its GEMMs are the roofline's; latency_source says so).
GEMM_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}
KV_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8"}


def read(path: Path, columns: list[str]) -> pd.DataFrame:
    """The columns of a table that exist (older versions lack some, e.g. window_size)."""
    import pyarrow.parquet as pq
    have = set(pq.read_schema(path).names)
    return pq.read_table(path, columns=[c for c in columns if c in have]).to_pandas()


def dominant_source(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the kernel implementation measured over the most points (ties: alphabetical)."""
    if "kernel_source" not in frame.columns or frame.empty:
        return frame
    counts = frame["kernel_source"].value_counts()
    best = sorted(counts[counts == counts.max()].index)[0]
    return frame[frame["kernel_source"] == best]


class GemmTables:
    """(m, n, k) grids per dtype of one framework's GEMM table."""

    def __init__(self, path: Path, peaks_of):
        frame = read(path, ["kernel_source", "gemm_dtype", "m", "n", "k", "latency"])
        self._frames = {dt: dominant_source(part) for dt, part in frame.groupby("gemm_dtype")}
        self._peaks_of = peaks_of
        self._grids: dict[str, MeasuredGrid] = {}

    @property
    def dtypes(self) -> list[str]:
        """draftsim dtypes with a measured table."""
        return [d for d, label in GEMM_DTYPES.items() if label in self._frames]

    def kernel(self, dtype: str) -> str:
        return str(self._frames[GEMM_DTYPES[dtype]]["kernel_source"].iloc[0])

    def grid(self, dtype: str) -> MeasuredGrid:
        found = self._grids.get(dtype)
        if found is None:
            part = self._frames[GEMM_DTYPES[dtype]]
            w = dtype_bytes(dtype)
            f = partial(_gemm_ideal, self._peaks_of(dtype), w)
            found = self._grids[dtype] = MeasuredGrid.from_points(
                part[["m", "n", "k"]].to_numpy(float), part["latency"].to_numpy(float) * MS, f)
        return found

    def seconds(self, dtype: str, m: float, n: float, k: float) -> tuple[float, bool]:
        """Seconds of an (m×k)·(k×n) GEMM (cached curves along m: a model has few (n, k) shapes)."""
        return self.grid(dtype).seconds((m, n, k))


def _gemm_ideal(peaks, weight_bytes, point) -> float:
    m, n, k = point
    return ideal.gemm(peaks, weight_bytes, 2.0, m, n, k)


class CollectiveTables:
    """Message-size grids per (collective, ranks): the framework's custom all-reduce (CUDA-graph mode)
    and NCCL's all-gather / all-to-all / all-reduce. Message sizes in the package are 16-bit elements."""

    ELEMENT_BYTES = 2.0

    def __init__(self, custom_allreduce: Path | None, nccl: Path | None, peaks):
        self._peaks = peaks
        self._points: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        self._grids: dict[tuple[str, int], MeasuredGrid] = {}
        self.labels: dict[str, str] = {}
        if nccl is not None:
            frame = read(nccl, ["op_name", "nccl_dtype", "num_gpus", "message_size", "latency"])
            frame = frame[frame["nccl_dtype"].isin(["half", "bfloat16"])]
            for (op, ranks), part in frame.groupby(["op_name", "num_gpus"]):
                self._points[(f"nccl_{op}", int(ranks))] = (part["message_size"].to_numpy(float),
                                                            part["latency"].to_numpy(float) * MS)
        if custom_allreduce is not None:
            frame = read(custom_allreduce, ["kernel_source", "num_gpus", "message_size", "latency", "backend"])
            if "backend" in frame.columns:  # CUDA-graph rows: kernel time without eager launch overhead
                graph = frame[frame["backend"].astype(str).str.endswith("_graph")]
                frame = graph if len(graph) else frame
            for ranks, part in frame.groupby("num_gpus"):
                self._points[("allreduce", int(ranks))] = (part["message_size"].to_numpy(float),
                                                           part["latency"].to_numpy(float) * MS)

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
