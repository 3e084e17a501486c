"""SGLang's GPU memory accounting: what a GPU of an SGLang replica keeps for the KV cache.

The pool (sglang/srt/model_executor/model_runner.py `profile_max_num_token`, 0.4.1 - 0.5.9; model_runner_kv_cache_mixin
`_profile_available_bytes`, 0.5.14; mem_cache/kv_cache_configurator.py `_profile_available_bytes`, 0.5.23):

    rest_memory = available_gpu_memory − pre_model_load_memory × (1 − mem_fraction_static)
    max_total_num_tokens = rest_memory // cell_size          (then down to a multiple of page_size)

with `pre_model_load_memory` the free memory after torch.distributed's start (CUDA context, NCCL and custom
all-reduce buffers; `init_torch_distributed` returns it as min_per_gpu_memory) and `available_gpu_memory` the free
memory after the weights are loaded. So the pool is mem_fraction_static × pre_model_load_memory − the weights;
what the fraction leaves is the headroom for activations and CUDA graphs, not sized here. `cell_size` is the
target's KV bytes per token on one GPU. A speculative draft (EAGLE/EAGLE3/MTP, STANDALONE):

- before 0.5.14 its worker is built after the target's pool is sized (managers/scheduler.py: the target
  TpModelWorker, then the draft worker with draft_runner_cache_size = the target's token count): neither its
  weights nor its KV enter the formula, they live in the headroom (hence the fraction's speculative reserve);
- from 0.5.14 the draft worker loads first (scheduler.py `init_memory_pools` after both workers; "Loaded
  weights (target + draft)", "draft weights are now counted") and the cell grows by the draft's layers
  (pool_configurator.py: cell × (1 + eagle_draft_num_layers / num_layers)).

`mem_fraction_static` (--mem-fraction-static) defaults by release (`default_mem_fraction_static`), read in
server_args.py of 0.4.1 - 0.4.10, 0.5.1 - 0.5.18 and arg_groups/memory_hook.py `handle_gpu_memory_settings` of
0.5.19 - 0.5.23 (the PyPI wheels); `gpu_mem` in MiB:

- 0.4.0 - 0.4.5: by TP size: 0.88 (tp 1), 0.87 (2+), 0.85 (4+), 0.81 (8+), 0.79 (16+);
- 0.4.6: that table up to 81920 MiB, else (gpu_mem − 13 GiB) / gpu_mem;
- 0.4.7: the table by tp·pp up to 81920 MiB, else 0.88; then above 180 000 MiB on CUDA 0.79, above 96 GiB
  min(f + 48 GiB·(1 − f)/gpu_mem, (gpu_mem − 18 GiB (20 speculating)) / gpu_mem), else × 0.95 speculating;
- 0.4.8 - 0.5.2: round((gpu_mem − reserved) / gpu_mem, 3), reserved (2.8 + tp·pp/10) GiB below 35 GiB, (9.5 +
  tp·pp/2) below 90, (12 + tp·pp/2) below 160, 32 above; + 2 GiB speculating (6 for STANDALONE from 0.5.2),
  + 4 GiB with DP attention;
- 0.5.3 - 0.5.23 (`reserved_mib`): reserved = 512 MiB + 1.5 MiB × max(chunked_prefill_size, 2048) + 2 MiB × the
  decode CUDA graphs' max batch + tp·pp/8 GiB; with DP attention + 3 MiB × max_bs × dp (4.5 above 300); the
  prefill graphs (0.5.6 - 0.5.9 only when enabled, off by default; from 0.5.10 8 MiB per captured token bucket,
  1.5 GiB with MLA); at least 10 GiB above 60 GiB of GPU memory; then + 2 GiB (0.5.3 - 0.5.9) / 4 GiB (0.5.10 -
  0.5.13) speculating with a model drafter, 6 GiB for STANDALONE, nothing from 0.5.14 (the draft is in the pool
  instead); from 0.5.15 a disaggregated decode pool sizes activations by max(running requests × draft tokens,
  2048) and skips the prefill graphs, a prefill pool skips the decode graphs (and with --disable-cuda-graph the
  decode graphs' reserve goes); from 0.5.22 a default max_bs is capped by a given --max-running-requests.

Approximations, named:
- `gpu_mem` (nvidia-smi's memory.total in MiB, `get_nvgpu_memory_capacity`) is taken as the memory CUDA
  reports (simulator.cluster.vllm_memory.device_total_bytes): H100's nvidia-smi total, 81559 MiB, is 469 MiB
  above CUDA's 79.19 GiB, which moves a default fraction by < 0.1 %;
- `pre_model_load_memory` is CUDA's total less a measured start-up footprint (STARTUP_*_BYTES), and the
  weights are the checkpoint's bytes (the loader's temporaries freed);
- the post-capture KV sizing of 0.5.16 on (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING, off by default), DeepEP's
  all-to-all reserve (draftsim's EP runs moe_a2a_backend none), multimodal adjustments, hybrid (Mamba/SWA)
  pool splits and DFLASH drafts are not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass

from profiles.hardware import HardwareSpec
from profiles.measured.source import version_before as _before

GIB = 1024 ** 3
MIB = 1024 ** 2

# The free memory a GPU has lost before the weights load (CUDA context, torch.distributed; with TP > 1 NCCL and the
# custom all-reduce buffers): CUDA's total less SGLang's "Load weight begin. avail mem=…" (GB there = GiB).
# TP 8 on an H200: 139.72 − 137.29 GiB = 2.43 GiB (sgl-project/sglang PR #11716, 2025-10-16: seven ranks of eight).
# One GPU: 79.19 − 78.81 GiB = 0.38 GiB on an 80 GB GPU (SGLang's docs, "Quick Start: Sending Requests",
# https://docs.sglang.ai/start/send_request.html as of 2025-01-23: Llama-3.1-8B-Instruct, TP 1; CUDA's total taken
# as the H100's 79.19 GiB).
STARTUP_SINGLE_GPU_BYTES = 0.38 * GIB
STARTUP_TENSOR_PARALLEL_BYTES = 2.43 * GIB

DRAFT_COUNTED_SINCE = "0.5.14"   # the draft's weights and KV enter the pool's budget (module docstring)


@dataclass(frozen=True)
class SglangDeployment:
    """What of an SGLang deployment sets its default mem_fraction_static and its pool (module docstring).
    `tp`: SGLang's --tp-size (the EP size under DP attention); `dp_attention`: its --dp-size with DP attention
    (1: none); `speculative`: --speculative-algorithm (EAGLE, STANDALONE, NGRAM; None: none);
    `chunked_prefill_size`: --chunked-prefill-size; `prefill_buckets`: the token buckets its prefill CUDA graphs
    capture when the release turns them on (empty: none); `max_bs`: the decode CUDA graphs' largest batch
    (0: decode graphs off), `max_bs_given` whether the deployment sets it (--cuda-graph-bs);
    `max_running_requests`: a --max-running-requests given (None: none); `mla`: MLA attention; `role`: prefill |
    decode when disaggregated (None: colocated); `draft_tokens`: tokens verified per request per step."""

    version: str
    tp: int
    pp: int = 1
    dp_attention: int = 1
    speculative: str | None = None
    chunked_prefill_size: int = 8192
    prefill_buckets: tuple[int, ...] = ()
    max_bs: int = 256
    max_bs_given: bool = False
    max_running_requests: int | None = None
    mla: bool = False
    role: str | None = None
    draft_tokens: int = 1


def gpu_memory_mib(hw: HardwareSpec) -> float:
    """SGLang's `gpu_mem` (MiB), as the memory CUDA reports (module docstring)."""
    from simulator.cluster.vllm_memory import device_total_bytes
    return device_total_bytes(hw) / MIB


def _tp_table(size: int) -> float:
    """0.4.x's mem_fraction_static by TP (or TP·PP) size."""
    return 0.79 if size >= 16 else 0.81 if size >= 8 else 0.85 if size >= 4 else 0.87 if size >= 2 else 0.88


def reserved_mib(d: SglangDeployment, gpu_mib: float) -> float:
    """The headroom (MiB) SGLang 0.5.3 on leaves outside mem_fraction_static (module docstring)."""
    v = d.version
    max_bs = d.max_bs
    if not _before(v, "0.5.22") and not d.max_bs_given and d.max_running_requests is not None:
        max_bs = min(max_bs, d.max_running_requests)
    roles = not _before(v, "0.5.15")
    if roles and d.role == "decode":
        activation = max((d.max_running_requests or max_bs or 1) * d.draft_tokens, 2048)
    else:
        activation = max(d.chunked_prefill_size, 2048)
    reserved = 512 + activation * 1.5 + d.tp * d.pp / 8 * 1024
    if not (roles and d.role == "prefill"):
        reserved += max_bs * 2
        if d.dp_attention > 1:
            reserved += max_bs * d.dp_attention * (4.5 if max_bs > 300 else 3)
    if d.prefill_buckets and not _before(v, "0.5.10"):   # (0.5.6 - 0.5.9 capture them only when enabled: off)
        reserved += 1.5 * 1024 if d.mla else len(d.prefill_buckets) * 8
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if d.speculative is not None and _before(v, DRAFT_COUNTED_SINCE):
        if d.speculative == "STANDALONE":
            reserved += 6 * 1024
        elif d.speculative != "NGRAM":
            reserved += (2 if _before(v, "0.5.10") else 4) * 1024
    return reserved


def default_mem_fraction_static(d: SglangDeployment, hw: HardwareSpec) -> float:
    """SGLang's own mem_fraction_static for deployment `d` on `hw` at release d.version (module docstring)."""
    v, gpu = d.version, gpu_memory_mib(hw)
    spec = d.speculative is not None
    if _before(v, "0.4.6"):
        return _tp_table(d.tp)
    if _before(v, "0.4.7"):
        return _tp_table(d.tp) if gpu <= 81920 else (gpu - 1024 * 13) / gpu
    if _before(v, "0.4.8"):
        frac = _tp_table(d.tp * d.pp) if gpu <= 81920 else 0.88
        if gpu > 180 * 1000 and hw.id != "mi300x":   # (is_cuda(): not ROCm)
            return 0.79
        if gpu > 96 * 1024:
            reserve = 1024 * (20 if spec else 18)
            return min(frac + 48 * 1024 * (1 - frac) / gpu, (gpu - reserve) / gpu)
        return frac * 0.95 if spec else frac
    if _before(v, "0.5.3"):
        size = d.tp * d.pp
        reserved = (2.8 + size / 10) * 1024 if gpu < 35 * 1024 else (9.5 + size / 2) * 1024 if gpu < 90 * 1024 \
            else (12 + size / 2) * 1024 if gpu < 160 * 1024 else 32 * 1024
        if spec:
            reserved += 6 * 1024 if d.speculative == "STANDALONE" and not _before(v, "0.5.2") else 2 * 1024
        if d.dp_attention > 1:
            reserved += 4 * 1024
        return round((gpu - reserved) / gpu, 3)
    return round((gpu - reserved_mib(d, gpu)) / gpu, 3)


def pre_model_load_bytes(hw: HardwareSpec, tp: int) -> float:
    """`pre_model_load_memory`: the free memory once torch.distributed has started (STARTUP_*_BYTES)."""
    from simulator.cluster.vllm_memory import device_total_bytes
    return device_total_bytes(hw) - (STARTUP_TENSOR_PARALLEL_BYTES if tp > 1 else STARTUP_SINGLE_GPU_BYTES)


def counts_draft(version: str) -> bool:
    """Whether the release's pool budget holds the draft's weights and KV (from DRAFT_COUNTED_SINCE)."""
    return not _before(version, DRAFT_COUNTED_SINCE)


def pool_bytes(hw: HardwareSpec, tp: int, fraction: float, weight_bytes: float) -> float:
    """The KV pool's bytes on one GPU: fraction × pre_model_load_memory − the weights loaded before the pool
    (the target's, and from DRAFT_COUNTED_SINCE the draft's)."""
    return fraction * pre_model_load_bytes(hw, tp) - weight_bytes
