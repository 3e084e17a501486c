"""vLLM V1's GPU memory accounting: what a GPU of a replica keeps for the KV cache.

vllm/v1/worker/gpu_worker.py `determine_available_memory` (0.10.2, 0.11.0, 0.19.0, 0.24.0) sizes the KV cache as

    requested_memory = total_memory × gpu_memory_utilization        (total_memory: cudaMemGetInfo's total)
    KV = requested_memory − weights_memory − torch_peak_increase − non_torch_increase [− CUDA-graph estimate]

with `weights_memory` the weights as loaded ("Model loading took X GiB"), `torch_peak_increase` the PyTorch
allocator's peak over `profile_run` and `non_torch_increase` what CUDA took outside PyTorch meanwhile
(vllm/utils memory_profiling, 0.19.0 vllm/utils/mem_utils.py). This module prices each term:

- `device_total_bytes`: the GPU's memory as CUDA reports it (profiles.hardware `cuda_total_bytes`, cited there);
  the datasheet's decimal GB where no report is recorded (approximation, named: H100's 80 GB datasheet figure is
  74.5 GiB where CUDA reports 79.19 GiB).
- `loaded_weight_bytes_per_gpu`: the checkpoint's bytes, except MXFP4 experts (gpt-oss), which the MoE backend
  re-lays out (`mxfp4_layout_extra_bytes`).
- `activation_peak_bytes`: `profile_run` (gpu_model_runner.py) runs a dummy forward of max_num_batched_tokens
  tokens, keeps its hidden states, and samples min(max_num_seqs, max_num_batched_tokens) rows of logits.
- `NON_TORCH_*`: measured, not derived (NCCL/custom all-reduce buffers and lazily loaded CUDA modules).

Not modelled, named:
- the CUDA-graph memory estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: present but off in 0.19.0's
  envs.py, on in 0.24.0's; "default since v0.21.0" as 0.2x logs say, noonghunna/club-3090 issue #127). It
  captures two graphs per mode and extrapolates: 0.17-0.58 GiB per GPU in published logs, far more on some
  models (vllm issues #45178, #50780), so the KV of vLLM >= 0.21 is overstated by that much here;
- multimodal encoder profiling, and speculative decoding's drafter pass in the profile run;
- before 0.11 the start-up snapshot precedes NCCL's initialisation (gpu_worker.py init_device, 0.10.2), so the
  communicator's buffers count as non-torch memory there too (the constants above are 0.19.0's);
- vLLM V0 (before 0.8, vllm/worker/worker.py determine_num_available_blocks) profiles a dummy batch of the same
  limits and is priced with the same terms.
SGLang (mem_fraction_static) and TensorRT-LLM (free_gpu_memory_fraction) keep other rules: not this module's
(simulator.cluster.factory keeps the plain rule for them).
"""
from __future__ import annotations

from dataclasses import dataclass

from models.spec import ModelSpec, dtype_bytes
from models.step import Parallelism
from profiles.hardware import HardwareSpec

GIB = 1024 ** 3

# The non-torch memory increase per GPU from the start-up snapshot to the end of the profile run (NCCL and
# custom all-reduce buffers, CUDA modules loaded lazily by the first kernels). Not derivable from vLLM's source:
# measured by llm-d-planner's sweep of vLLM 0.19.0 on H100-80GB (accuracy/results/v0.19.0/accuracy_report.md,
# "Non-torch Constants" table: mean 0.27 GiB at tp=1, 2.08 GiB at tp=2, 2.17 GiB at tp=4).
NON_TORCH_SINGLE_GPU_BYTES = 0.27 * GIB
NON_TORCH_TENSOR_PARALLEL_BYTES = 2.1 * GIB

# The sampler's live [rows, vocab] tensors at its peak, in fp32 units (4 bytes per element): the model's 16-bit
# logits (0.5; compute_logits), their fp32 copy (1; sampler.py `logits.to(torch.float32)`), and two more fp32
# tensors: FlashInfer's top_k_top_p_sampling_from_logits (top-k-first: `top_k_mask_logits` then `softmax`;
# the default sampler on CUDA in 0.10.2, 0.11.0 and 0.24.0, topk_topp_sampler.py) or, with FlashInfer off
# (0.19.0's default), the Triton top-k/top-p in place then `probs = softmax` and `q = empty_like(probs)`
# (random_sample). The dummy run sets top_k = vocab − 1 and top_p = 0.9 on every row (`_dummy_sampler_run`).
# Approximation, named: FlashInfer is taken as installed where the release prefers it (the vllm-openai image ships
# it; 0.11.0's PyPI wheel lists flashinfer-python only under its `flashinfer` extra). Without it 0.11.0 falls back to
# `forward_native`, whose sort-based apply_top_k_top_p peaks at about 7 units (logits_sort, int64 logits_idx, two
# bool masks, probs_sort and the scatter's output beside both logits): not modelled.
SAMPLER_FP32_TENSORS = 3.5

# vLLM keeps the fused-MoE workspaces in a persistent WorkspaceManager (vllm/v1/worker/workspace.py, present in
# 0.19.0 and 0.24.0, absent in 0.11.0): they stay allocated through the sampler's peak.
PERSISTENT_MOE_WORKSPACE_SINCE = "0.19.0"


@dataclass(frozen=True)
class ProfileRun:
    """The shapes of vLLM's start-up profile run: the scheduler's token budget and sequence limit."""

    version: str | None                 # the vLLM release (None: the newest modelled)
    max_num_batched_tokens: int
    max_num_seqs: int


def device_total_bytes(hw: HardwareSpec) -> float:
    """The memory `gpu_memory_utilization` is a fraction of: what CUDA reports (module docstring)."""
    return hw.cuda_total_bytes or hw.hbm_bytes


def mxfp4_backend(hw: HardwareSpec, version: str | None = None) -> str:
    """The MoE backend vLLM `version` (None: the newest) picks for MXFP4 experts on `hw`, whose layout its loaded
    weights take: Marlin wherever the release's rule says so (profiles.engine_time.mxfp4_moe, the rule the step
    cost prices its experts by: below SM 9.0 in every release, and on Hopper in 0.10.1 - 0.11.x, whose wheels
    lack triton_kernels; issue #23278 logs Marlin and 65.97 GiB loaded for gpt-oss-120b on an H100 under 0.10.1);
    elsewhere by GPU generation (approximation, named): Blackwell → FlashInfer TRT-LLM; Hopper → OpenAI's Triton
    kernels (issue #33155: "Using Triton backend", 0.14.1 on H100); ROCm → its own kernels (padded like
    TRT-LLM); other GPUs → Marlin."""
    from profiles.engine_time.graphs import DATACENTER_BLACKWELL
    from profiles.engine_time.mxfp4_moe import MARLIN, vllm_mxfp4_moe_kernel
    if vllm_mxfp4_moe_kernel(version, hw.id) == MARLIN:
        return "marlin"
    if hw.id in DATACENTER_BLACKWELL:
        return "flashinfer_trtllm"
    if hw.id == "mi300x":
        return "rocm"
    if "fp8" in hw.peak_flops and hw.id not in ("l40s", "rtx-pro-6000", "mi300x"):
        return "triton"
    return "marlin"


def expert_width_split(par: Parallelism) -> int:
    """How many GPUs share one expert's width: tp, or 1 under expert parallelism (vLLM's EP places whole
    experts, 1/ep of them per GPU)."""
    return 1 if par.ep > 1 else par.tp


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def mxfp4_layout_extra_bytes(target: ModelSpec, par: Parallelism, backend: str) -> float:
    """Bytes per GPU that MXFP4 experts take beyond the checkpoint's packed layout (0.5 byte per weight plus
    one e8m0 scale per 32: models.spec), as vllm/model_executor/layers/fused_moe/oracle/mxfp4.py
    `mxfp4_round_up_hidden_size_and_intermediate_size` and the per-backend conversion lay them out (0.24.0):
    Marlin pads hidden to 256 and the expert width to 128; FlashInfer TRT-LLM pads both to 256; Triton rounds
    the width to 64, swizzles weights and scales into new tensors while the layer keeps its original scale
    parameters (one more copy of the scales) and casts the expert biases to fp32."""
    if not target.num_experts or not target.moe_intermediate_size:
        return 0.0
    hidden, width = target.hidden_size, target.moe_intermediate_size // expert_width_split(par)
    experts = target.num_experts / (par.ep if par.ep > 1 else 1)
    layers = -(-target.num_moe_layers // par.pp)
    per_weight = 0.5 + 1 / 32   # packed FP4 + one e8m0 scale per 32 weights
    if backend == "triton":
        pad_h, pad_w = hidden, _round_up(width, 64)
    elif backend == "marlin":
        pad_h, pad_w = _round_up(hidden, 256), _round_up(width, 128)
    else:   # flashinfer_trtllm, rocm
        pad_h, pad_w = _round_up(hidden, 256), _round_up(width, 256)
    extra = 3 * experts * (pad_h * pad_w - hidden * width) * per_weight   # gate+up (2·w×h) and down (h×w)
    if backend == "triton":
        extra += 3 * experts * hidden * width / 32                        # the kept original scales
        if target.expert_bias:
            extra += experts * (2 * width + hidden) * 2                   # bf16 → fp32 biases
    return extra * layers


def activation_peak_bytes(target: ModelSpec, par: Parallelism, run: ProfileRun, act_dtype: str = "bf16") -> float:
    """PyTorch's peak allocation increase over vLLM's profile run (gpu_model_runner.py `profile_run`), on the
    last pipeline stage (the one that samples): the larger of the forward's transient and the sampler's peak.

    - forward (approximation, named: one MLP's live tensors, the rest of the layer smaller): the residual and
      normed hidden state (2·T·H) with gate_up (2·I/tp) and its activation (I/tp) per token, or for MoE the
      fused-MoE workspaces (`moe_workspace_bytes`);
    - sampler: the dummy forward's hidden states (T·H, kept by `profile_run`), SAMPLER_FP32_TENSORS × rows ×
      vocab × 4 bytes, and the MoE workspaces where vLLM keeps them (PERSISTENT_MOE_WORKSPACE_SINCE).
    Error, measured on llm-d-planner's vLLM 0.19.0 H100 sweep: 0.04–0.05 GiB under (2-3 %) for Llama-3.1-8B,
    Qwen2.5-7B, Qwen3-8B and Qwen3-30B-A3B (tests/simulator/test_vllm_memory.py)."""
    from profiles.measured.source import version_key
    b = dtype_bytes(act_dtype)
    tokens = run.max_num_batched_tokens
    rows = min(run.max_num_seqs, tokens)
    hidden_bytes = tokens * target.hidden_size * b
    moe = moe_workspace_bytes(target, par, tokens, b)
    dense = tokens * (3 * target.intermediate_size / par.tp) * b if not target.is_moe or target.first_dense_layers \
        else 0.0
    forward = 2 * hidden_bytes + max(dense, moe)
    persistent = moe if run.version is None or version_key(run.version) >= version_key(
        PERSISTENT_MOE_WORKSPACE_SINCE) else 0.0
    sampler = hidden_bytes + SAMPLER_FP32_TENSORS * rows * target.vocab_size * 4 + persistent
    return max(forward, sampler)


def moe_workspace_bytes(target: ModelSpec, par: Parallelism, tokens: int, b: float) -> float:
    """The fused-MoE workspaces for `tokens` tokens (fused_moe.py TritonExperts.workspace_shapes, 0.19.0):
    (M, topk, max(N/2, K)) and (M, topk, max(N, K)) with N = 2 × the expert width per GPU, K = hidden, M the
    step's tokens (approximation, named: under EP a rank may receive other ranks' tokens too)."""
    if not target.num_experts:
        return 0.0
    n = 2 * target.moe_intermediate_size // expert_width_split(par)
    k = target.hidden_size
    return tokens * target.experts_per_token * (max(n // 2, k) + max(n, k)) * b


def non_torch_bytes(par: Parallelism) -> float:
    """NON_TORCH_* for this parallelism (a tensor-parallel group allocates communication buffers)."""
    return NON_TORCH_TENSOR_PARALLEL_BYTES if par.tp > 1 else NON_TORCH_SINGLE_GPU_BYTES


def profile_overhead_bytes(hw: HardwareSpec, target: ModelSpec, par: Parallelism, dtype: str,
                           run: ProfileRun) -> float:
    """What vLLM subtracts from the requested memory besides the checkpoint's weights: the MXFP4 layout's
    extra bytes, the profile run's activation peak and the non-torch increase (module docstring)."""
    extra = mxfp4_layout_extra_bytes(target, par, mxfp4_backend(hw, run.version)) if dtype == "mxfp4" else 0.0
    return extra + activation_peak_bytes(target, par, run) + non_torch_bytes(par)
