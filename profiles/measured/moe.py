"""Measured fused-MoE kernels: the routed experts of one MoE layer (gate/up GEMM, activation, down GEMM
over the token-expert rows) as serving engines run them, one kernel per layer.

Table `moe_perf`: latency per layer over the number of tokens entering the layer, for each (hidden size,
expert width, top-k, experts, MoE tensor parallelism, MoE expert parallelism) measured, per weight dtype,
with the framework's default fused kernel and balanced routing (each token's top-k experts uniformly
spread). How draftsim's MoE ops map onto it (`models.opgraph._moe_dims`):

* the op graph's rows on a GPU (tokens × top-k, divided over the EP ranks; the busiest rank's under a
  skewed routing) are priced as the balanced layer whose per-rank rows are the same:
  tokens = rows · ep / top-k. Approximation: a skewed load is priced as a balanced layer with more
  tokens (the straggler's rows and weight traffic are matched, its distinct experts approximately);
* beyond the measured token range: the edge price × the ideal-time ratio (weights of the experts
  touched + FLOPs of the rows; `profiles.measured.grid`);
* a configuration (model shape, tp, ep, dtype) the table lacks: not priced here, the three ops go to
  the GEMM table one by one (grouped GEMM rule of `profiles.measured.model`).
"""
from __future__ import annotations

from functools import cached_property, partial
from pathlib import Path

import numpy as np

from profiles.measured.grid import MeasuredGrid
from profiles.measured.tables import MS, dominant_source, most_measured_first, read

# nvfp4: W4A4 NVFP4 experts (vLLM 0.24 on Blackwell: FlashInfer TRT-LLM / CUTLASS NVFP4 MoE). mxfp4: the W4A16
# tables (`w4a16_mxfp4`: gpt-oss's MXFP4 experts with bf16 activations, the engines' default kernels, e.g. vLLM
# 0.24's OpenAI Triton experts on H100/H200, FlashInfer TRT-LLM MXFP4 × BF16 on B200, Marlin on L40S;
# models.dtypes.EXPERT_ONLY_DTYPES); the W4A8 `w4a8_mxfp4_mxfp8` tables (an opt-in of vLLM, the default of none)
# are not mapped.
MOE_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "fp8_block": "fp8_block", "int4": "int4_wo",
              "nvfp4": "nvfp4", "mxfp4": "w4a16_mxfp4"}
WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "int4": 0.5,
                "nvfp4": 0.5 + 1.0 / 16.0, "mxfp4": 0.5 + 1.0 / 32.0}   # per expert weight (block scales
#                                                                         included, models.dtypes)
_COLUMNS = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
            "moe_tp_size", "moe_ep_size", "distribution", "latency"]
_INDEX = ["kernel_source", "moe_dtype", "distribution"]


class MoeTable:
    """Fused-MoE layer latency per configuration, over tokens."""

    def __init__(self, path: Path, peaks):
        self._path, self._peaks = path, peaks
        self._configs: dict[str, dict[tuple, object]] = {}
        self._grids: dict[tuple, MeasuredGrid] = {}

    @cached_property
    def _kernels(self) -> dict[str, str]:
        """dtype label -> its kernels, most measured first (what `describe` names): from the whole table once
        read, else from three of its columns (a dense model never reads it whole)."""
        frames = self.__dict__.get("_frames")
        parts = frames.items() if frames is not None else _balanced(read(self._path, _INDEX)).groupby("moe_dtype")
        return {dt: "+".join(most_measured_first(part, "kernel_source")) for dt, part in parts if not part.empty}

    @cached_property
    def _frames(self) -> dict:
        """dtype label -> its rows: the table read whole, when an MoE layer is first priced.
        The framework picks its fused-MoE kernel per configuration (e.g. vLLM 0.24's fp8_block on H100:
        Triton experts at EP 1, FlashInfer CUTLASS at EP > 1), and the tables measure each configuration
        with the kernel picked for it: keep every configuration, with its dominant kernel where one was
        measured with several (`_config_frames`)."""
        return {dt: part for dt, part in _balanced(read(self._path, _COLUMNS)).groupby("moe_dtype")}

    def _config_frames(self, dtype: str) -> dict:
        found = self._configs.get(dtype)
        if found is None:
            frame = self._frames.get(MOE_DTYPES.get(dtype, ""))
            keys = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
            found = self._configs[dtype] = {} if frame is None else {
                tuple(int(v) for v in key): dominant_source(part) for key, part in frame.groupby(keys)}
        return found

    def kernel(self, dtype: str) -> str | None:
        """The measured kernel(s) of `dtype`, most measured first (`+`-joined), or None."""
        return self._kernels.get(MOE_DTYPES.get(dtype, ""))

    def _kernel_configs(self, dtype: str, kernel: str) -> dict:
        """config -> rows measured with a kernel whose name holds `kernel` (e.g. "marlin"), for `dtype`."""
        key = (dtype, kernel)
        found = self._configs.get(key)
        if found is None:
            frame = self._frames.get(MOE_DTYPES.get(dtype, ""))
            found = {}
            if frame is not None:
                codes, labels = frame.codes("kernel_source")
                ours = [i for i, name in enumerate(labels) if kernel in str(name)]
                mine = frame.where(np.isin(codes, ours))
                keys = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
                found = {} if mine.empty else {tuple(int(v) for v in k): dominant_source(part)
                                               for k, part in mine.groupby(keys)}
            self._configs[key] = found
        return found

    def _grid(self, dtype: str, config: tuple, part, kernel: str | None = None) -> MeasuredGrid:
        """The grid over tokens of `config`'s rows `part` (of `kernel`'s rows; None: the dominant kernel's)."""
        grid = self._grids.get((dtype, config, kernel))
        if grid is None:
            ideal = partial(_ideal, self._peaks, WEIGHT_BYTES[dtype], config)
            grid = self._grids[(dtype, config, kernel)] = MeasuredGrid.from_points(
                part.matrix(["num_tokens"]), part["latency"].astype(float) * MS, ideal)
        return grid

    def seconds(self, dtype: str, hidden: int, inter: int, top_k: int, experts: int, tp: int, ep: int,
                rows: float, kernel: str | None = None) -> tuple[float, bool] | None:
        """(seconds of one layer, extrapolated) at `rows` token-expert rows per GPU, or None when the
        configuration was not measured. `kernel`: the fused-MoE kernel the engine release runs where it is not
        the one the tables timed for the configuration (profiles.engine_time.mxfp4_moe, e.g. "marlin"):
        `_kernel_seconds`."""
        config = (hidden, inter, top_k, experts, tp, ep)
        if kernel is not None:
            return self._kernel_seconds(dtype, config, rows, kernel)
        part = self._config_frames(dtype).get(config)
        if part is None:
            return None
        return self._grid(dtype, config, part).seconds((rows * ep / top_k,))

    def _kernel_seconds(self, dtype: str, config: tuple, rows: float, kernel: str) -> tuple[float, bool] | None:
        """The layer priced with `kernel`'s measured rows: the configuration's own where that kernel timed it;
        else the configuration's ideal time (`_ideal`) times the kernel's measured time over its ideal on the
        configuration it was timed on (the one of the same MoE TP and EP, else the first), at the same token-expert
        rows per expert (tokens · top-k / experts: the M of each expert's GEMMs), which is what sets a grouped
        GEMM's efficiency. Approximation, named: the kernel's efficiency is taken as a function of the rows per
        expert alone (its dependence on the hidden and expert widths is not modelled), and such a price is
        reported as approximate. None where the kernel timed no configuration of `dtype` (the caller's
        fallbacks price it)."""
        measured = self._kernel_configs(dtype, kernel)
        if not measured:
            return None
        hidden, inter, top_k, experts, tp, ep = config
        tokens = rows * ep / top_k
        part = measured.get(config)
        if part is not None:
            return self._grid(dtype, config, part, kernel).seconds((tokens,))
        same = sorted(c for c in measured if c[4:] == (tp, ep)) or sorted(measured)
        other = same[0]
        tokens_there = tokens * top_k / experts * other[3] / other[2]
        there, _ = self._grid(dtype, other, measured[other], kernel).seconds((tokens_there,))
        ideal_there = _ideal(self._peaks, WEIGHT_BYTES[dtype], other, (tokens_there,))
        ideal_here = _ideal(self._peaks, WEIGHT_BYTES[dtype], config, (tokens,))
        return ideal_here * there / ideal_there, True


def _balanced(frame):
    """The rows measured with balanced routing (tables before the `distribution` column have only those)."""
    return frame.where(frame["distribution"] == "balanced") if "distribution" in frame.columns else frame


def _ideal(peaks, weight_bytes: float, config: tuple, point) -> float:
    hidden, inter, top_k, experts, tp, ep = config
    tokens = point[0]
    rows = tokens * top_k / ep
    local = experts / ep
    touched = local * (1.0 - (1.0 - top_k / experts) ** tokens)
    width = inter / tp
    flops = 2.0 * rows * hidden * 3.0 * width
    moved = touched * 3.0 * hidden * width * weight_bytes + rows * 2.0 * (2.0 * hidden + 3.0 * width)
    return peaks.bound(flops, moved)
