"""The running-request limit a serving engine sets itself when the deployment gives none (vLLM `--max-num-seqs`,
SGLang `--max-running-requests`): draftsim's `scheduler.max_batch_size` when a scenario leaves it out.

`default_max_num_seqs(framework, version, hardware, drafter)` returns the engine's value, or None where draftsim
keeps its own default (256) because it models no engine rule there. Each rule as read in the releases' sources:

- vLLM V1 (0.8.0 on), `EngineArgs` in vllm/engine/arg_utils.py (`_set_default_args_v1` in 0.8.x,
  `get_batch_defaults` from 0.9.0), the same for the offline LLM class and the API server (`vllm serve`):
  0.8.0-0.8.3: 1024 on any GPU; 0.8.4: 1024 if the device name holds "h100" or "h200", else 256; 0.8.5: 1024 with
  >= 70 GiB of device memory, else 256; 0.9.0 on (read in v0.9.0, v0.14.0 and v0.33.0): 1024 with >= 70 GiB and
  not an A100 (vLLM PR #17885), else 256 (v0.33.0 adds a >= 160 GiB tier, also 1024, and keeps the DGX Spark
  GB10 at 256: no catalog hardware is a GB10).
  From v0.11.1 a defaulted max_num_seqs is lowered to max_num_batched_tokens when that is smaller
  (`_set_default_max_num_seqs_and_batched_tokens_args`: `min(self.max_num_seqs, self.max_num_batched_tokens)`;
  v0.11.0 and earlier keep it, and `SchedulerConfig._verify_args` then refuses the deployment, which
  simulator.cluster.build.batch_scheduler refuses as well).
- vLLM V0 (before 0.8.0): `EngineArgs.max_num_seqs = 256`.
- SGLang (server_args.py `ServerArgs.__post_init__` to 0.5.2, `_handle_speculative_decoding` after it;
  arg_groups/speculative_hook.py from v0.5.13, read in v0.5.14): with speculative decoding `max_running_requests`
  is reset when the user gives none (`if self.max_running_requests is None: self.max_running_requests = N`), for
  EAGLE (EAGLE3 from v0.4.4.post2; MTP runs as EAGLE, "NEXTN shares the same implementation of EAGLE") to 32 in
  v0.4.3.post3 - v0.4.4.post3 (the EAGLE block of v0.4.3 - v0.4.3.post2 disables the radix cache and chunked
  prefill instead and sets no limit; PyPI wheels read: 0.4.3, .post1 - .post4, 0.4.4, .post1 - .post4, 0.4.5), to
  48 from v0.4.4.post4; STANDALONE (a draft model) to 48 from v0.5.2 and NGRAM from v0.5.3. Without that reset SGLang sizes its request pool from its KV pool (`sglang_max_running_requests`,
  given the pool: None here): model_runner.py `init_memory_pool` (0.4.x - 0.5.x; `_resolve_max_num_reqs` in the
  newest) `min(max(int(max_total_num_tokens / context_len × 512), 2048), 4096)`, the newest also at most
  max_total_num_tokens // 2 (applied to every release here: it binds only below 8,192 pool tokens), and the
  scheduler runs at most that many (`max_running_requests = min(given or pool size, req_to_token_pool.size)`).
- TensorRT-LLM, PyTorch backend (1.0.0 on): `max_batch_size` 2048 (tensorrt_llm/llmapi/llm_args.py, BaseLlmArgs
  `max_batch_size: Optional[int] = Field(default=2048)`, read in a 1.x llm_args.py; LLM API reference 1.0; the
  TorchLlmArgs signature of 1.3.0rc27 and 1.4.0rc4 keeps it; trtllm-serve's --max_batch_size defaults to the same
  BuildConfig value), with or without speculation. The TensorRT-engine releases before 1.0 (trtllm-build's
  own default, not read here): None.
- Host CPUs (vLLM's CPU defaults depend on the entrypoint, 128 or 256 per rank): None.

`vllm_kv_lookahead(version, method, spec_tokens)` returns the KV slots vLLM V1's scheduler reserves beyond a
request's scheduled tokens for the proposer's next drafts (vllm/v1/core/sched/scheduler.py passes
`num_lookahead_tokens` to `KVCacheManager.allocate_slots`, which asks for blocks for computed + new + lookahead
tokens; at most max_model_len tokens from v0.9.0, `num_tokens_need_slot = min(..., self.max_model_len)`), as read
in the v0.8.0 - v0.9.2 and v0.15.0 wheels and the newest scheduler.py:
- 0.8.0 - 0.8.3: none (no num_lookahead_tokens);
- 0.8.4: `num_speculative_tokens` where `speculative_config.method == "eagle"`, for RUNNING requests only (the
  WAITING pass's allocate_slots passes none);
- 0.8.5 on: `num_spec_tokens` where `speculative_config.use_eagle()` ("eagle", "eagle3"; "deepseek_mtp" from
  v0.9.0, "mtp" in later releases), for running requests; for a waiting request's first chunk by release (read in
  the v0.10.0 - v0.33.0 wheels on 2026-11-29: 0.10.0, 0.10.1, 0.10.2, 0.11.0, 0.12.0, 0.15.0, 0.18.0 - 0.24.0,
  0.28.0, 0.33.0):
  - 0.8.5 - 0.10.0: the waiting pass's `allocate_slots` passes `num_lookahead_tokens=self.num_lookahead_tokens`;
  - 0.10.1 - 0.22.x: it passes `effective_lookahead_tokens = 0 if request.num_computed_tokens == 0 else
    self.num_lookahead_tokens` ("an extra block gets allocated which creates a mismatch between the number of
    local and remote blocks"), and every request the waiting pass admits here has request.num_computed_tokens 0:
    a new one (a local prefix hit is counted in the pass's own variable, not the request's), and a preempted one
    (`_preempt_request` sets it to 0); only a request whose KV a connector loaded asynchronously has more, which
    draftsim does not model. So none;
  - 0.23.0 on: `effective_lookahead_tokens = 0` only where the KV loads asynchronously (`limit_lookahead_tokens =
    load_kv_async and self.use_eagle`; `... and self.num_lookahead_tokens > 0` in 0.33.0): num_spec_tokens again;
- 0.15.0 on: also where `speculative_config.uses_draft_model()` (method draft_model; draftsim's layer skipping runs
  as a draft model in vLLM, profiles.engine_time.support);
- n-gram, suffix and Medusa proposers: none in any release.
Not modelled (named): the 0.8.0 - 0.8.4 KV manager's `num_preallocate_tokens = 64` (blocks preallocated beyond a
request's need, fewer by the lookahead's blocks).

`vllm_drafting_slots(version, method)` returns what vLLM V1 keeps of `max_num_batched_tokens` for the rows a draft
model's proposer adds to its own batch (`SpeculativeConfig.max_num_new_slots_for_drafting`: 1 per request for
method draft_model, "the autoregressive draft-model input retains one unsliced token"; 0 for EAGLE, EAGLE-3, MTP and
n-gram; parallel drafting, not modelled, K - 1 or K), as (slots per max_num_seqs taken off the step's budget, slots
per scheduled request), read in the PyPI wheels:
- 0.15.0 - 0.16.0: none (v1/core/sched/scheduler.py `self.max_num_scheduled_tokens =
  self.scheduler_config.max_num_batched_tokens`; no max_num_new_slots_for_drafting);
- 0.17.0 - 0.27.1 (read in 0.17.0, 0.18.0, 0.24.0, 0.27.0, 0.27.1): vllm/config/vllm.py
  `VllmConfig._set_max_num_scheduled_tokens`: "for some speculative decoding methods, the drafter model may insert
  additional slots into the batch when drafting. To account for this, we need to decrease the
  max_num_scheduled_tokens", `max_num_scheduled_tokens = max_num_batched_tokens - max_num_new_slots_for_drafting *
  max_num_seqs`, the scheduler's token budget (a draft model under `vllm serve` on an H100: 8192 - 1024 = 7168);
- 0.28.0 on (read in 0.28.0, 0.29.0, 0.30.0, 0.32.0, 0.33.0): max_num_scheduled_tokens = max_num_batched_tokens, and
  `Scheduler.schedule` charges every scheduled request, decoding or prefilling, its tokens + draft_slots of an
  `input_budget` of max_num_batched_tokens (`input_budget -= num_new_tokens + draft_slots`; a request gets at most
  `input_budget - draft_slots` tokens and none once `input_budget <= draft_slots`).
Draftsim's layer skipping runs as a draft model in vLLM (profiles.engine_time.support): the same slots.

`vllm_whole_prompt_admission(version)` returns whether vLLM V1 admits a waiting request only when its whole
sequence's blocks are free (`scheduler_reserve_full_isl`, `--scheduler-reserve-full-isl`, SchedulerConfig default
True from its first release) and whether that check caps a sliding-window group's blocks, as read in the PyPI
wheels 0.18.0, 0.19.0, 0.20.0, 0.21.0, 0.23.0, 0.24.0, 0.28.0 and 0.33.0 on 2026-11-29:
- 0.10 - 0.18 (read in 0.10.2, 0.15.0, 0.18.0): no such flag; `Scheduler.schedule`'s waiting loop admits a request
  when `KVCacheManager.allocate_slots` finds blocks for its hit and first chunk (+ lookahead) only;
- 0.19.0 - 0.20.x: `Scheduler.schedule`'s waiting loop calls `KVCacheManager.can_fit_full_sequence` before
  `allocate_slots` and stops admission (`break`) when it is False; 0.21.0 on the same check is the first stage of
  `allocate_slots(..., full_sequence_must_fit=self.scheduler_reserve_full_isl)`, returning None (`break`). Both ask
  `coordinator.get_num_blocks_to_allocate` for `min(request.num_tokens, max_model_len)` tokens with the request's
  prefix hit counted as computed (its blocks not asked again, those in the free queue counted as taken), no
  lookahead, against `block_pool.get_num_free_blocks()`. It is a check only: the blocks are still allocated chunk
  by chunk. It runs for every request of the waiting loop, new or preempted (a preempted request's num_tokens is
  its prompt and the output it had), never in the running loop;
- from 0.20.0 a sliding-window group asks at most `SlidingWindowSpec.max_admission_blocks_per_request`,
  ceil(min(window - 1 + max_num_batched_tokens, max_model_len) / block) + 1 blocks
  (single_type_kv_cache_manager.py `get_num_blocks_to_allocate`; 0.21 on with `apply_admission_cap=True`); 0.19.0
  asks for every block of the sequence in every group;
- 0.23.0 on: `allocate_slots(..., reserved_blocks=...)` keeps free the blocks in-flight prefills still need, only
  where the request loads its KV asynchronously through a KV connector (`load_kv_async`,
  `Scheduler._inflight_prefill_reserved_blocks`): not modelled (draftsim has no asynchronous KV-connector load);
- 0.24.0 on: `KVCacheManager(watermark=SchedulerConfig.watermark)` adds `int(watermark × num_blocks)` blocks to both
  checks for WAITING / PREEMPTED requests while some request runs (`has_scheduled_reqs=bool(self.running)`);
  `--watermark` defaults to 0.0 (read in 0.24.0, 0.28.0, 0.33.0), so no blocks at the defaults draftsim models.

`engine_batching(framework, version, hardware, gpu_bytes, entrypoint)` returns the batching scheduler an engine
runs by default (a `scheduler.kind` of simulator.core.sched) and its step token budget:

- vLLM V0 (before 0.8.0): prefill-first (`vllm`: enable_chunked_prefill off), max_num_batched_tokens =
  max(max_model_len, 2048) (EngineArgs / SchedulerConfig of v0.5 - v0.7). Approximation, named: from v0.5 V0 turns
  chunked prefill on where max_model_len > 32768 on a CUDA GPU without sliding window, speculative decoding, LoRA
  or prompt adapters (vllm/engine/arg_utils.py `use_long_context`, read in v0.7.3), with a 2048-token budget
  (config.py SchedulerConfig.__post_init__); not modelled: such a deployment runs prefill-first here (set
  cluster.engine.chunked_prefill: true for V0's chunked scheduler, kind sarathi). The 0.2 line has no chunked
  prefill;
- vLLM V1 (0.8.0 on): its own scheduler (`vllm_v1`, chunked prefill always on: vLLM V1 blog 2025-01-27, section 3;
  profiles/data/engine_time/SOURCES.md 1.2), max_num_batched_tokens by
  UsageContext (`get_batch_defaults`): on the GPUs `vllm_v1_large_defaults` names 16384 for the offline LLM
  class, 8192 for the API server (`vllm serve`); elsewhere 8192 and 2048;
- SGLang: prefill batches apart from decode batches (`vllm`: enable_mixed_chunk is False by default,
  server_args.py) of at most `sglang_chunked_prefill_size` tokens, a prompt longer than what is left chunked over
  consecutive prefill steps as SGLang's PrefillAdder chunks it (simulator.core.sched.vllm, with SGLang's
  max_prefill_tokens: simulator.cluster.factory.engine_batch_rules). With EAGLE speculation (MTP runs as EAGLE: NEXTN from v0.4.3.post1) the EAGLE block
  of `ServerArgs.__post_init__` sets `prefill_only_one_req = True` in v0.4.1.post4 (the first release with
  speculative decoding) - v0.4.3.post3 (`sglang_prefill_requests`: Scheduler.get_new_batch_prefill stops after
  one request, managers/scheduler.py) and `chunked_prefill_size = -1` in v0.4.1.post4 - v0.4.3.post2
  (`sglang_chunks_prompts`: "The radix cache, chunked prefill, and overlap scheduler are disabled because of using
  eagle speculative decoding"); v0.4.3.post3 keeps only the first, v0.4.3.post4 neither (PyPI wheels read:
  0.4.0 - 0.4.5, every post release). Without chunking the scheduler's PrefillAdder gets `rem_chunk_tokens` None
  and `rem_input_tokens` = max_prefill_tokens (16384, server_args.py; managers/schedule_policy.py
  `add_one_req` admits the batch's first request whatever its length): the step budget filled in is that;
  with one request per prefill it never binds;
- TensorRT-LLM: its in-flight batching scheduler (`trtllm`), max_num_tokens 8192 (the LLM API's BaseLlmArgs
  default, the same read as `max_batch_size`), context chunking off unless cluster.engine.chunked_prefill (the LLM
  API's enable_chunked_prefill False, reference 1.0 - 1.4.0rc4; before 1.0 the C++ executor's ExecutorConfig
  `enableChunkedContext = false`, cpp/include/tensorrt_llm/executor/executor.h at 0.10.0.dev2024043000;
  simulator.cluster.build.batch_scheduler).
"""
from __future__ import annotations

from profiles.measured.source import version_in_span, version_key

GIB = 2 ** 30
DEFAULT_MAX_NUM_SEQS = 256   # draftsim's running-request limit where neither the scenario nor an engine rule sets one
TRTLLM_MAX_BATCH_SIZE = 2048     # BaseLlmArgs.max_batch_size, TensorRT-LLM 1.0 on (module docstring)
# drafter engine family -> ((the first SGLang release that resets max_running_requests to N, N), ...), oldest
# first; each holds until the next (module docstring)
SGLANG_SPEC_MAX_RUNNING = {"eagle": (("0.4.3.post3", 32), ("0.4.4.post4", 48)),
                           "draft_model": (("0.5.2", 48),), "ngram": (("0.5.3", 48),)}


def vllm_v1_large_defaults(version: str | None, hardware) -> bool:
    """Whether vLLM `version` (>= 0.8.0; None: the newest) gives `hardware` its large batch defaults (module
    docstring): 1024 sequences, and 16384 / 8192 tokens per step for the LLM class / the API server (2048 tokens
    for the API server on other GPUs, 8192 for the LLM class; the same test keys both in `_set_default_args_v1`
    and `get_batch_defaults`)."""
    if version is None:
        return hardware.hbm_bytes >= 70 * GIB and "a100" not in hardware.id.lower()
    v = version_key(version)
    if v < version_key("0.8.4"):
        return True
    if v < version_key("0.8.5"):
        return any(name in hardware.id.lower() for name in ("h100", "h200"))
    big = hardware.hbm_bytes >= 70 * GIB
    if v < version_key("0.9.0"):
        return big
    return big and "a100" not in hardware.id.lower()


def default_max_num_seqs(framework: str, version: str, hardware, drafter: str | None,
                         max_num_batched_tokens: int | None = None) -> int | None:
    """The running-request limit `framework` at `version` sets on `hardware` (a profiles.hardware.HardwareSpec)
    with speculation of engine family `drafter` (None: none) and the step token budget `max_num_batched_tokens`
    when the deployment gives none, or None where draftsim keeps its own default (module docstring)."""
    if hardware.id == "cpu-local":
        return None
    if framework == "vllm":
        if version_key(version) < version_key("0.8.0"):
            return 256
        seqs = 1024 if vllm_v1_large_defaults(version, hardware) else 256
        if max_num_batched_tokens is not None and version_key(version) >= version_key("0.11.1"):
            seqs = min(seqs, max_num_batched_tokens)
        return seqs
    if framework == "trtllm":
        return TRTLLM_MAX_BATCH_SIZE if version_key(version) >= version_key("1.0.0") else None
    if framework == "sglang":
        found = None
        for first, limit in SGLANG_SPEC_MAX_RUNNING.get(drafter, ()) if drafter is not None else ():
            if version_key(version) >= version_key(first):
                found = limit
        return found
    return None


SGLANG_POOL_REQUESTS = (2048, 4096)   # the bounds of SGLang's request pool from its KV pool (module docstring)


def sglang_max_running_requests(pool_tokens: int, context_len: int) -> int:
    """SGLang's running-request limit where the deployment gives none and no speculation resets it: its request
    pool sized from a KV pool of `pool_tokens` tokens and the context length `context_len` (module docstring)."""
    low, high = SGLANG_POOL_REQUESTS
    return max(1, min(max(int(pool_tokens / context_len * 512), low), high, pool_tokens // 2))


# SGLang's EAGLE block (module docstring): [first release, first release without) for drafter family eagle
SGLANG_EAGLE_ONE_PREFILL_REQ = ("0.4.1.post4", "0.4.3.post4")   # prefill_only_one_req = True
SGLANG_EAGLE_UNCHUNKED = ("0.4.1.post4", "0.4.3.post3")         # chunked_prefill_size = -1
SGLANG_MAX_PREFILL_TOKENS = 16384   # server_args.py max_prefill_tokens: the prefill budget without chunking


def _in_span(version: str, span: tuple[str, str]) -> bool:
    return version_in_span(version, *span)


def sglang_prefill_requests(version: str, drafter: str | None) -> int | None:
    """The most requests SGLang `version` puts in one prefill batch with speculation of engine family `drafter`
    (None: none): 1 where its EAGLE block sets prefill_only_one_req, else None (no such limit) (module
    docstring)."""
    return 1 if drafter == "eagle" and _in_span(version, SGLANG_EAGLE_ONE_PREFILL_REQ) else None


def sglang_chunks_prompts(version: str, drafter: str | None) -> bool:
    """Whether SGLang `version` chunks prompts (chunked_prefill_size > 0) with speculation of engine family
    `drafter`: not where its EAGLE block sets chunked_prefill_size = -1 (module docstring)."""
    return not (drafter == "eagle" and _in_span(version, SGLANG_EAGLE_UNCHUNKED))


# vLLM V1's KV lookahead (module docstring): speculation method -> the first release that reserves it; and the
# releases [from, before) that reserve it for a waiting request's first chunk too (None: no end)
VLLM_LOOKAHEAD_FROM = {"eagle": "0.8.4", "eagle3": "0.8.5", "mtp": "0.9.0", "draft_model": "0.15.0",
                       "layer_skip": "0.15.0"}
VLLM_LOOKAHEAD_WAITING = (("0.8.5", "0.10.1"), ("0.23.0", None))


def vllm_kv_lookahead(version: str, method: str | None, spec_tokens: int) -> tuple[int, int]:
    """(lookahead slots of a running request, of a waiting request's first chunk) vLLM V1 `version` reserves with
    speculation `method` (eagle, eagle3, mtp, draft_model, layer_skip, ngram, ...; None: none) of `spec_tokens`
    tokens per step (num_speculative_tokens) (module docstring)."""
    first = VLLM_LOOKAHEAD_FROM.get(method) if method is not None else None
    if first is None or version_key(version) < version_key(first):
        return 0, 0
    waiting = any(version_in_span(version, *span) for span in VLLM_LOOKAHEAD_WAITING)
    return spec_tokens, spec_tokens if waiting else 0


# vLLM V1's drafting slots (module docstring): methods whose proposer adds a row per request, and the releases from
# which the budget is cut by max_num_seqs of them / each scheduled request takes them
VLLM_DRAFT_SLOT_METHODS = ("draft_model", "layer_skip")
VLLM_DRAFT_SLOTS_PER_SEQ = ("0.17.0", "0.28.0")   # [first, first without)
VLLM_DRAFT_SLOTS_PER_REQUEST_FROM = "0.28.0"


def vllm_drafting_slots(version: str, method: str | None) -> tuple[int, int]:
    """(slots per max_num_seqs taken off the step's token budget, slots each scheduled request takes of it) vLLM V1
    `version` keeps for speculation `method` (eagle, eagle3, mtp, draft_model, layer_skip, ngram, ...; None: none)
    (module docstring)."""
    if method not in VLLM_DRAFT_SLOT_METHODS:
        return 0, 0
    if version_key(version) >= version_key(VLLM_DRAFT_SLOTS_PER_REQUEST_FROM):
        return 0, 1
    return (1, 0) if _in_span(version, VLLM_DRAFT_SLOTS_PER_SEQ) else (0, 0)


# vLLM V1's whole-sequence admission check (module docstring): the first release with it (default on), and the first
# whose check caps a sliding-window group's blocks
VLLM_WHOLE_PROMPT_ADMISSION_FROM = "0.19.0"
VLLM_WHOLE_PROMPT_WINDOW_CAP_FROM = "0.20.0"


def vllm_whole_prompt_admission(version: str) -> tuple[bool, bool]:
    """(vLLM V1 `version` admits a waiting request only when its whole sequence's blocks are free, that check caps a
    sliding-window group at max_admission_blocks_per_request) at the engine's defaults (module docstring)."""
    checks = version_key(version) >= version_key(VLLM_WHOLE_PROMPT_ADMISSION_FROM)
    return checks, checks and version_key(version) >= version_key(VLLM_WHOLE_PROMPT_WINDOW_CAP_FROM)


V1_FROM = "0.8.0"   # vLLM's V1 engine is the default from this release (module docstring)
ENTRYPOINTS = ("llm", "api_server")   # vLLM's offline LLM class, its OpenAI-compatible server (`vllm serve`)
TRTLLM_MAX_NUM_TOKENS = 8192          # BaseLlmArgs.max_num_tokens, TensorRT-LLM 1.0 on (module docstring)


def engine_scheduler_kind(framework: str, version: str | None) -> str:
    """The `scheduler.kind` `framework` at `version` (None: its newest) runs by default (module docstring).
    ValueError for an unknown framework."""
    if framework == "sglang":
        return "vllm"
    if framework == "trtllm":
        return "trtllm"
    if framework != "vllm":
        raise ValueError(f"no batching defaults for framework {framework!r}")
    return "vllm" if version is not None and version_key(version) < version_key(V1_FROM) else "vllm_v1"


def engine_batching(framework: str, version: str, hardware, gpu_bytes: float, entrypoint: str = "api_server",
                    max_model_len: int = 2048, drafter: str | None = None) -> tuple[str, int]:
    """(scheduler kind, max_num_batched_tokens) `framework` at `version` runs by default on `hardware` (a
    profiles.hardware.HardwareSpec; `gpu_bytes`: the memory CUDA reports on it) through `entrypoint` (vLLM:
    "llm" or "api_server"), with `max_model_len` the deployment's longest context (vLLM V0's budget) and
    speculation of engine family `drafter` (None: none; SGLang's EAGLE block) (module docstring). ValueError for
    an unknown framework or entrypoint."""
    kind = engine_scheduler_kind(framework, version)
    if framework == "sglang":
        if not sglang_chunks_prompts(version, drafter):
            return kind, SGLANG_MAX_PREFILL_TOKENS
        return kind, sglang_chunked_prefill_size(gpu_bytes, version)
    if framework == "trtllm":
        return kind, TRTLLM_MAX_NUM_TOKENS
    if kind == "vllm":   # V0
        return kind, max(max_model_len, 2048)
    if entrypoint not in ENTRYPOINTS:
        raise ValueError(f"vLLM entrypoint {entrypoint!r} is not one of {', '.join(ENTRYPOINTS)}")
    big = vllm_v1_large_defaults(version, hardware)
    return kind, {("llm", True): 16384, ("api_server", True): 8192,
                  ("llm", False): 8192, ("api_server", False): 2048}[entrypoint, big]


def sglang_chunked_prefill_size(gpu_bytes: float, version: str) -> int:
    """SGLang's default --chunked-prefill-size on a GPU of `gpu_bytes` (the memory CUDA reports where recorded:
    nvidia-smi's total, which SGLang reads, is closer to it than the datasheet's) at release `version` (server_args.py
    __post_init__ 0.4.1 - 0.4.7, `_handle_gpu_memory_settings` 0.5.3 - 0.5.18, arg_groups/memory_hook.py
    `handle_gpu_memory_settings` 0.5.19 - 0.5.23; gpu_mem in MiB):
    0.4.0 - 0.4.7: 2048 below 25,000 MiB, else 8192 (0.4.7: 16384 above 180,000 MiB; PD disaggregation's 16384
    is not modelled); 0.4.8 - 0.5.2: 2048 below 35 GiB, 8192 below 160, 16384 above; 0.5.3 on: 2048 below 35 GiB
    (4096 from 0.5.20 between 20 and 35), 4096 below 60, 8192 below 160, 16384 above."""
    gib, v = gpu_bytes / GIB, version_key(version)
    if v < version_key("0.4.8"):
        if v >= version_key("0.4.7") and gib * 1024 > 180_000:
            return 16384
        return 2048 if gib * 1024 < 25_000 else 8192
    if gib >= 160:
        return 16384
    if gib >= 60 or (gib >= 35 and v < version_key("0.5.3")):
        return 8192
    if gib >= 35:
        return 4096
    return 4096 if gib >= 20 and v >= version_key("0.5.20") else 2048

