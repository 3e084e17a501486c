"""How a serving engine launches a step's passes: as a full CUDA graph, as piecewise graphs with eager
attention between the pieces, or eagerly; and to which captured size a batch is padded.

`GraphPolicy` is the resolved rule of one deployment (framework, version, `cuda_graphs` mode, capture
sizes); `graph_policy(...)` builds it from each engine's own defaults, cited where they are encoded:

vLLM V0 (0.2.6 – 0.7; `vllm/worker/model_runner.py`, `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8·i for i in
  1..32]`, `_get_graph_batch_size` rounds a decode batch up to the next captured size): full graphs of
  decode-only batches, keyed by sequences, up to 256 (and at most `max_num_seqs`); prefill steps eager;
  the LM head runs after the graph on the real rows (`compute_logits` outside the captured forward).
  Graphs came with PR #1926 (first in v0.2.6): the 0.2 line before it runs every pass eagerly.
vLLM V1 0.8 – 0.10 (piecewise graphs via torch.compile; `docs/design/torch_compile.md`; capture sizes
  `[1, 2, 4] + range(8, 513, 8)` tokens, `gpu_model_runner.py` `cudagraph_batch_sizes`): every step of at
  most 512 scheduled tokens (decode, mixed and prefill) replays (layers + 1) graph pieces with eager
  attention between them, padded to the next size in tokens; larger steps run the compiled code without
  graphs.
vLLM V1 ≥ 0.11 (`cudagraph_mode` FULL_AND_PIECEWISE default, PR #25444; `VllmConfig._set_cudagraph_sizes`:
  `[1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)`, max = min(max_num_seqs·(1 + k)·2, 512,
  max_num_batched_tokens) tokens (vllm/config/vllm.py; vLLM issue asking about the factor 2);
  with speculation the sizes are rounded up to multiples of 1 + k and those that would round past the
  largest size dropped, `CompilationConfig.adjust_cudagraph_sizes_for_spec_decode`, PR #28315): uniform
  decode batches (verify batches included) replay one full graph; mixed and prefill steps run piecewise up
  to the largest size, eagerly above it. Later releases, read in vLLM's PyPI sources (same function):
  from 0.21.0 `max_num_batched_tokens` is captured too when it is at most the largest size; from 0.28.0
  the 512 ceiling is 1024 on data-center Blackwell (`is_device_capability_family(100)`, PR #49390: the
  catalog's B200, B300, GB200, GB300; not the RTX PRO 6000, SM 12.x); from 0.32.0 the uniform decode
  batches themselves are captured: with speculation n·(1 + k) for n in the request grid 1, 2, 4, 8…248
  step 8, 256…max_num_seqs step 16, max_num_seqs (within the ceiling; PR #50488, #54418), without it
  max_num_seqs. Approximations: Dynamic SD's extra tiers of decode sizes (one grid per draft length) are
  not added; from 0.25.0 Model Runner V2 (the default for dense models) skips the rounding to 1 + k for
  prefill and mixed steps (its CUDA-graph manager rounds only the decode graphs, v1/worker/gpu/
  cudagraph_utils.py `_init_candidates`), so there vLLM pads mixed steps to the unrounded grid while this
  model pads them to the rounded one, which differs by less than 1 + k tokens a step.
SGLang (profiles.engine_time.sglang_decode_graphs, by release: before v0.5.3 `[1, 2, 4(, 8)] + range(8 or 16,
  161, 8)` requests, up to 256 / 512 only on GPUs above 90 GiB / 160,000 MiB (v0.4.6 - v0.5.2); from v0.5.3
  `[1, 2, 4, 8, 12] + range(16, 257, 8) + range(272, 512, 16) + range(512, max + 1, 32)`, `cuda_graph_max_bs` by
  GPU memory and TP: 8 below 20 GB, 16-48 / 80-160 below 35 GB, 32/160 below 60 GB, 256 at TP < 4 and 512 at
  TP ≥ 4 below 160 GB, 512 above; sizes above max_running_requests replaced by it, `get_batch_sizes_to_capture`):
  decode and verify batches replay full graphs padded to the next size in requests (the logits processor
  is inside the captured forward; with EAGLE in v0.4.1.post4 - v0.4.4.post1 unpadded, only captured sizes replay:
  `sglang_eagle_pads`), larger ones run eagerly; prefill and mixed (extend) batches run eagerly
  before v0.5.10 and replay piecewise graphs in token buckets from v0.5.10 where the release captures them
  (`sglang_prefill_sizes`).
TensorRT-LLM PyTorch backend (`CudaGraphConfig`: `max_batch_size` 128 when neither it nor `batch_sizes` is
  given, `enable_padding` False; `_generate_cuda_graph_batch_sizes(128, False)` = `range(1, 32) + [32, 64,
  128]`, with `enable_padding` True `[1, 2, 4] + [8, 16, …, 128]`; then `_filter_cuda_graph_batch_sizes`
  keeps the sizes up to min(max_batch_size, max_num_tokens // (1 + draft tokens)) and, padding, that
  cap in place of the first size above it: `trtllm_filter`): generation-only batches whose size is a
  captured size replay a full graph; without padding any other size runs eagerly; context (and mixed)
  batches run eagerly. The same lists in every 1.x release read (the +64 steps of PR #12895 and the powers
  of 2 start above 128).

Approximation (named): padded slots cost their dense ops (GEMMs, norms, activations, and the LM head
where the engine's graph includes it) but no attention — a padded slot has no KV context (vLLM and
SGLang give padded rows zero-length sequences); the attention kernels' fixed cost per padded row is not
priced.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from profiles.engine_time.sglang_decode_graphs import sglang_decode_sizes, sglang_eagle_pads
from profiles.measured.source import version_before as _before

FULL, PIECEWISE, EAGER = "full", "piecewise", "eager"
MODES = ("full", "piecewise", "none")


@dataclass(frozen=True)
class Launch:
    """How one step's passes are launched: `kind` full | piecewise | eager, and the number of token
    slots its dense ops run over (the padded size, or the step's own tokens when not padded)."""

    kind: str
    tokens: int


@dataclass(frozen=True)
class GraphPolicy:
    mode: str                          # full | piecewise | none (the deployment's cuda_graphs)
    decode_sizes: tuple[int, ...]      # captured sizes of uniform decode batches, ascending ('' when none)
    unit: str                          # what decode_sizes count: "tokens" or "seqs"
    padding: bool                      # round a batch up to the next size; False: only exact sizes replay
    decode_kind: str                   # full or piecewise: how a captured decode batch replays
    mixed_sizes: tuple[int, ...] = ()  # token sizes of piecewise graphs for prefill and mixed steps
    pad_logits: bool = False           # the LM head runs inside the decode graph, over the padded rows
    pad_mixed_logits: bool = False     # the LM head runs inside the mixed-step graphs (no engine's does)
    mixed_pad_factor: float = 0.0      # > 0: a step padded beyond this many times its tokens runs eagerly
    decode_falls_to_mixed: bool = True  # a decode batch above decode_sizes may replay a mixed-step graph

    def __post_init__(self) -> None:
        for name in ("decode_sizes", "mixed_sizes"):
            sizes = getattr(self, name)
            if any(b <= a for a, b in zip(sizes, sizes[1:])) or any(s < 1 for s in sizes):
                raise ValueError(f"{name} must be strictly ascending positive integers, got {sizes}")

    def _pick(self, sizes: tuple[int, ...], n: int) -> int | None:
        if not sizes or n > sizes[-1]:
            return None
        i = bisect.bisect_left(sizes, n)
        if sizes[i] == n or self.padding:
            return sizes[i]
        return None

    def decode(self, seqs: int, q: int) -> Launch:
        """A decode-only (uniform) batch of `seqs` requests with `q` query tokens each."""
        tokens = seqs * q
        if self.mode == "none" or seqs == 0:
            return Launch(EAGER, tokens)
        size = self._pick(self.decode_sizes, tokens if self.unit == "tokens" else seqs)
        if size is not None:
            return Launch(self.decode_kind, size if self.unit == "tokens" else size * q)
        return self.mixed(tokens) if self.decode_falls_to_mixed else Launch(EAGER, tokens)

    def mixed(self, tokens: int) -> Launch:
        """A step with prompt tokens (prefill or mixed), `tokens` scheduled tokens in all."""
        if self.mode == "none":
            return Launch(EAGER, tokens)
        size = self._pick(self.mixed_sizes, tokens)
        if size is None or (self.mixed_pad_factor and size > tokens * self.mixed_pad_factor):
            return Launch(EAGER, tokens)
        return Launch(PIECEWISE, size)

    def describe(self) -> dict:
        return {"mode": self.mode, "unit": self.unit, "padding": self.padding,
                "decode_capture_sizes": list(self.decode_sizes), "mixed_capture_sizes": list(self.mixed_sizes),
                "lm_head_in_graph": self.pad_logits}


# vLLM's `is_device_capability_family(100)` GPUs of the hardware catalog (data-center Blackwell, SM 10.x)
DATACENTER_BLACKWELL = frozenset({"b200", "b300", "gb200", "gb300"})


def _vllm_v1_sizes(max_size: int) -> list[int]:
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, max_size + 1, 16))
    return [s for s in sizes if s <= max_size]


def _round_up_within(sizes, multiple: int) -> tuple[int, ...]:
    """vLLM's adjust_cudagraph_sizes_for_spec_decode: each size rounded up to a multiple of `multiple`, kept
    only if that stays within the largest size (else `multiple` alone, if it fits)."""
    top = max(sizes)
    rounded = sorted({-(-s // multiple) * multiple for s in sizes if -(-s // multiple) * multiple <= top})
    return tuple(rounded or ([multiple] if multiple <= top else []))


def _request_counts(max_reqs: int, ceiling: int) -> list[int]:
    """vLLM 0.32's request grid of uniform decode sizes (VllmConfig._set_cudagraph_sizes, request_counts)."""
    max_reqs = min(max_reqs, ceiling)
    counts = [n for n in (1, 2, 4) if n <= max_reqs] + list(range(8, min(max_reqs + 1, 256), 8))
    return sorted(set(counts + list(range(256, max_reqs + 1, 16)) + [max_reqs]))


def _vllm_v1_default_sizes(version: str, *, max_num_seqs: int, max_tokens: int, q: int, speculating: bool,
                           datacenter_blackwell: bool) -> tuple[int, ...]:
    """vLLM >= 0.11's default capture sizes in tokens (module docstring), `version` the release modelled."""
    ceiling = 1024 if datacenter_blackwell and not _before(version, "0.28.0") else 512
    top = min(max_num_seqs * q * 2, ceiling)
    uniform: list[int] = []
    if not _before(version, "0.32.0"):
        if q > 1:
            uniform = [n * q for n in _request_counts(max_num_seqs, ceiling) if n * q <= top]
        elif max_num_seqs <= top:
            uniform = [max_num_seqs]
    top = min(top, max_tokens)
    sizes = _vllm_v1_sizes(top)
    if not _before(version, "0.21.0") and max_tokens <= top:
        sizes.append(max_tokens)
    sizes = sorted(set(sizes + [s for s in uniform if s <= max_tokens]))
    return _round_up_within(sizes, q) if speculating and q > 1 else tuple(sizes)


@dataclass(frozen=True)
class PrefillContext:
    """What of a deployment decides whether SGLang captures its prefill (extend) passes: the speculation
    method family (None: plain decoding; simulator.cost.drafters.engine_family), pipeline and attention
    data parallelism, MLA attention, and the pool's role when prefill and decode are disaggregated."""

    drafter: str | None = None
    pp: int = 1
    attention_dp: int = 1
    mla: bool = False
    role: str | None = None     # None (colocated), "prefill" or "decode"


def _sglang_prefill_tokens(max_tokens: int) -> list[int]:
    """SGLang's prefill capture buckets in tokens (server_args.py _generate_piecewise_cuda_graph_tokens v0.5.10,
    _generate_prefill_cuda_graph_batch_sizes v0.5.14, arg_groups/cuda_graph_hook.py
    generate_prefill_cuda_graph_batch_sizes v0.5.23: the same list)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) + list(range(576, 1025, 64))
             + list(range(1280, 4097, 256)) + list(range(4608, max_tokens + 1, 512)))
    return [s for s in sizes if s <= max_tokens]


def sglang_prefill_sizes(version: str, max_tokens: int, ctx: PrefillContext) -> tuple[int, ...]:
    """The token buckets SGLang captures its prefill (extend) passes at by default at release `version`
    (empty: they run eagerly), `max_tokens` the chunked-prefill size. Read in the PyPI releases:

    - before v0.5.10: eager (`enable_piecewise_cuda_graph` False).
    - v0.5.10 - v0.5.14: piecewise graphs (torch.compile split at attention) on by default
      (`disable_piecewise_cuda_graph` False; v0.5.14 cuda_graph_config prefill backend tc_piecewise), turned off
      (server_args.py `_handle_piecewise_cuda_graph` / `_disable_tc_piecewise_cudagraph_if_incompatible`) by
      pipeline parallelism, DP attention and PD disaggregation; in v0.5.10 by any speculative decoding; in
      v0.5.11 - v0.5.14 the EAGLE-family target prefills eagerly (its extend asks for FULL hidden states, the
      graph was captured with NULL: `can_run` refuses it; v0.5.14 model_runner.py `init_prefill_cuda_graph`
      routes it to the eager runner).
    - v0.5.15 on: breakable CUDA graphs (`default_prefill_backend`: BREAKABLE on CUDA), which capture EAGLE's
      target too (FULL hidden states); off (`disable_breakable_cudagraph_if_incompatible`) with DP attention
      through v0.5.16, with MLA attention through v0.5.17, with pipeline parallelism from v0.5.19
      (`apply_cuda_graph_compatibility`); the decode pool of a disaggregated deployment turns prefill graphs off
      (`apply_cuda_graph_disaggregation_roles`), the prefill pool keeps them.
    - Buckets up to the chunked-prefill size (PR #15927), for MLA up to 2048 tokens (min(8192, chunked) in
      v0.5.23); from v0.5.16 a step padded past twice its tokens runs eagerly
      (`_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR` = 2; `mixed_pad_factor`).

    Approximations (named): the other switches (LoRA, multimodal models, GGUF, CPU offload, deterministic
    inference, torch.compile, a MoE all-to-all backend other than none - draftsim's EP runs SGLang's default
    `moe_a2a_backend` none) are not modelled; the logits processor runs after the graph on the real rows
    (`GraphPolicy.pad_logits` is the decode graph's)."""
    if _before(version, "0.5.10"):
        return ()
    if _before(version, "0.5.15"):
        if ctx.pp > 1 or ctx.attention_dp > 1 or ctx.role is not None:
            return ()
        if ctx.drafter is not None and (_before(version, "0.5.11") or ctx.drafter == "eagle"):
            return ()
    elif (ctx.role == "decode" or (ctx.attention_dp > 1 and _before(version, "0.5.17"))
          or (ctx.mla and _before(version, "0.5.18")) or (ctx.pp > 1 and not _before(version, "0.5.19"))):
        return ()
    top = min(max_tokens, (2048 if _before(version, "0.5.23") else 8192)) if ctx.mla else max_tokens
    return tuple(_sglang_prefill_tokens(top))


def default_capture_sizes(framework: str, v1: bool, version: str, *, max_num_seqs: int, max_tokens: int,
                          q: int, speculating: bool, gpu_memory_bytes: float, tp: int,
                          datacenter_blackwell: bool = False, padding: bool | None = None) -> tuple[tuple[int, ...], str]:
    """(sizes, unit) an engine captures by default at release `version` (module docstring); `padding`: the
    deployment pads batches (TensorRT-LLM and SGLang before v0.4.5 generate another list then; None: the engine's
    default, off for TensorRT-LLM, on for SGLang)."""
    if framework == "vllm":
        if not v1:   # V0: sequences
            return tuple(s for s in [1, 2, 4] + [8 * i for i in range(1, 33)] if s <= max_num_seqs), "seqs"
        if version and _before(version, "0.11.0"):
            return tuple(s for s in [1, 2, 4] + list(range(8, 513, 8)) if s <= max_tokens), "tokens"
        return _vllm_v1_default_sizes(version or "0.11.0", max_num_seqs=max_num_seqs, max_tokens=max_tokens, q=q,
                                      speculating=speculating, datacenter_blackwell=datacenter_blackwell), "tokens"
    if framework == "sglang":   # (gpu_memory_bytes: SGLang's gpu_mem, profiles.engine_time.sglang_decode_graphs)
        return sglang_decode_sizes(version or "0.5.6", gpu_memory_bytes / 2 ** 20, tp, speculating, max_num_seqs,
                                   padding is not False), "seqs"
    if framework == "trtllm":
        sizes = [1, 2, 4] + [8 * i for i in range(1, 17)] if padding else list(range(1, 32)) + [32, 64, 128]
        return trtllm_filter(sizes, padding, max_num_seqs, max_tokens, q), "seqs"
    raise ValueError(f"no CUDA-graph rule for framework {framework!r}")


def trtllm_filter(sizes, padding: bool, max_num_seqs: int, max_tokens: int, q: int) -> tuple[int, ...]:
    """TensorRT-LLM's _filter_cuda_graph_batch_sizes (tensorrt_llm/_torch/pyexecutor/model_engine.py, 1.0 on):
    the sizes up to the largest pure-decode batch, min(max_batch_size, max_num_tokens // (1 + draft tokens));
    with padding, that batch itself replaces the first size above it ('padding to max_cuda_graph_bs is
    acceptable')."""
    cap = min(max_num_seqs, max_tokens // q)
    out: list[int] = []
    for size in sorted(set(sizes)):
        if size <= cap:
            out.append(size)
        else:
            if padding and cap >= 1 and (not out or out[-1] != cap):
                out.append(cap)
            break
    return tuple(out)


@dataclass(frozen=True)
class GraphTraits:
    """A framework version's CUDA-graph behaviour (profiles/data/engine_time/frameworks.yaml `graphs`):
    the default mode and the modes it offers, how a captured decode batch replays, whether prefill and mixed
    steps get piecewise graphs, the unit of its capture sizes, whether it pads by default and whether its
    captured forward includes the LM head."""

    default_mode: str
    modes: tuple[str, ...]
    decode: str                 # full | piecewise
    mixed: str                  # piecewise | eager
    unit: str                   # tokens | seqs
    padding: bool
    lm_head_in_graph: bool
    v1: bool = True             # vLLM: the V1 engine (False: V0)


def graph_policy(framework: str, version: str, traits: GraphTraits, *, mode: str | None,
                 capture_sizes: tuple[int, ...] | None, padding: bool | None, max_num_seqs: int,
                 max_tokens: int, q: int, speculating: bool, gpu_memory_bytes: float, tp: int,
                 datacenter_blackwell: bool = False, prefill: PrefillContext = PrefillContext()) -> GraphPolicy:
    """The deployment's rule at release `version`: the version's traits with the user's `cuda_graphs` mode,
    capture sizes and padding where given (None: the version's default); `prefill`: what decides SGLang's
    prefill graphs (`sglang_prefill_sizes`)."""
    mode = traits.default_mode if mode is None else mode
    if mode == "none":
        return GraphPolicy("none", (), traits.unit, False, FULL)
    if padding is None and framework == "sglang" and speculating and not sglang_eagle_pads(version):
        padding = False   # (the EAGLE block's disable_cuda_graph_padding: profiles.engine_time.sglang_decode_graphs)
    padding = traits.padding if padding is None else padding
    sizes, unit = default_capture_sizes(framework, traits.v1, version, max_num_seqs=max_num_seqs,
                                        max_tokens=max_tokens, q=q, speculating=speculating,
                                        gpu_memory_bytes=gpu_memory_bytes, tp=tp, datacenter_blackwell=datacenter_blackwell,
                                        padding=padding)
    if capture_sizes is not None:
        sizes = tuple(sorted(set(capture_sizes)))
        if framework == "trtllm":   # the executor filters the user's batch_sizes too
            sizes = trtllm_filter(sizes, padding, max_num_seqs, max_tokens, q)
    decode = PIECEWISE if mode == "piecewise" else traits.decode
    if framework == "sglang":   # prefill buckets in tokens beside decode sizes in requests; decode never uses them
        mixed = sglang_prefill_sizes(version, max_tokens, prefill) if traits.mixed == PIECEWISE else ()
        return GraphPolicy(mode, sizes, unit, padding, decode, mixed, traits.lm_head_in_graph,
                           mixed_pad_factor=0.0 if _before(version, "0.5.16") else 2.0, decode_falls_to_mixed=False)
    mixed = sizes if traits.mixed == PIECEWISE and unit == "tokens" else ()
    return GraphPolicy(mode, sizes, unit, padding, decode, mixed, traits.lm_head_in_graph)
