"""The prefix caching a serving engine runs when its deployment gives no flag for it (vLLM
`--enable-prefix-caching` / `--no-enable-prefix-caching`, SGLang `--disable-radix-cache`, TensorRT-LLM
`KvCacheConfig.enable_block_reuse`): what `cluster.kv_cache.prefix_caching` is where a scenario names its engine
and leaves it out (simulator.cluster.engine_cache).

`engine_prefix_caching(framework, version, drafter, hybrid)` returns (on, rule): on is the engine's default, or
None where draftsim reads no rule (it keeps its own default, off). Each rule as read in the releases' sources:

- vLLM V0 (before 0.8.0, profiles.engine_time.batch_defaults.V1_FROM): off. vllm/engine/arg_utils.py
  `EngineArgs.__post_init__` of the 0.7 line: `if self.enable_prefix_caching is None: self.enable_prefix_caching =
  bool(envs.VLLM_USE_V1)`, V0 being the default engine; the 0.8 line's V0 path `_set_default_args_v0` keeps it off.
- vLLM V1 (0.8.0 on): on. `EngineArgs._set_default_args_v1` (0.8.x): "V1 enables prefix caching by default",
  `if self.enable_prefix_caching is None: self.enable_prefix_caching = True`; `_set_default_args` (0.10 - 0.11, read
  in 0.11.0) the same for non-pooling runners; from `_set_default_chunked_prefill_and_prefix_caching_args`
  `default_prefix_caching = model_config.is_prefix_caching_supported` (True for decoder-only generative models,
  vllm/config/model.py, read in 0.32.0; CacheConfig.enable_prefix_caching = True there too).
  Off for hybrid models (Mamba / linear-attention layers beside attention): vllm/model_executor/models/config.py
  `MambaModelConfig.verify_and_update_config` sets `cache_config.enable_prefix_caching = False` ("Hybrid or
  mamba-based model detected: disabling prefix caching since it is not yet supported", 0.10.2 - 0.11.0);
  `_set_default_args` "Disable prefix caching default for hybrid models since the feature is still
  experimental" (`if model_config.is_hybrid: ... False`, 0.11.x); `default_prefix_caching =
  model_config.is_prefix_caching_supported and not model_config.is_hybrid` ("Hybrid models support prefix
  caching but keep it opt-in for now", 0.27.1). Not read for every release from 0.28 on: taken as off there too.
  Approximation, named: the 0.8 - 0.9 releases fell back to the V0 engine for what V1 did not support yet
  (`_is_v1_supported_oracle`); draftsim takes every 0.8+ deployment as V1, as its scheduler rule does
  (batch_defaults.engine_scheduler_kind). Pooling / encoder-decoder models, prompt embeddings and the RISC-V CPU
  backend, where vLLM turns it off too, are not modelled here.
- SGLang: the radix cache is on unless `--disable-radix-cache` (server_args.py `disable_radix_cache: bool =
  False`, 0.4.x - 0.5.23), but off with EAGLE speculation before 0.4.3.post3: `ServerArgs.__post_init__` of
  0.4.3 - 0.4.3.post2 `if self.speculative_algorithm == "EAGLE": ... self.disable_radix_cache = True` ("The radix
  cache, chunked prefill, and overlap scheduler are disabled because of using eagle speculative decoding");
  0.4.3.post3's EAGLE block (and 0.4.4's) sets the running limit (32), the overlap scheduler and CUDA-graph padding
  only (PyPI wheels 0.4.3, .post1 - .post4, 0.4.4 read). MTP runs as EAGLE (NEXTN, from 0.4.3.post1). Hybrid models: on in 0.5.23 (arg_groups/model_hook.py `handle_mamba_radix_cache`, MambaRadixCache);
  earlier releases not read (taken as on). PD-disaggregation's decode server keeps no radix cache (pd_disaggregation
  _hook.py), as draftsim's decode pool keeps none.
- TensorRT-LLM, PyTorch backend (1.0.0 on): on, `KvCacheConfig.enable_block_reuse: bool = Field(default=True)`
  (tensorrt_llm/llmapi/llm_args.py, read in a 1.x llm_args.py; LLM API reference 1.0). The TensorRT-engine releases
  before 1.0: None, draftsim's default (off). Read: the C++ executor's `explicit KvCacheConfig(bool
  enableBlockReuse = false, ...)` (cpp/include/tensorrt_llm/executor/executor.h at 0.10.0.dev2024043000), which the
  Triton backend and ModelRunnerCpp ran with unless told, and block reuse needs an engine built with paged context
  FMHA (plugin.py `_use_paged_context_fmha`, default False in the older plugin configs read, True in later ones);
  the release where the executor's default became True (it is `= true` in the 1.x executor.h) and the 0.1x LLM
  API's default were not pinned to a version, so no one value is claimed for the whole 0.x line. Attention backends other than the default TRTLLM one (FLASHINFER turns block
  reuse off: py_executor_creator) are not modelled.

`vllm_eagle_drops_hit_block(version, method)`: whether vLLM V1's prefix cache gives a request one block less than
it found cached, with a speculation method that drafts from the target's hidden states (`use_eagle()`): the drafter
needs the hidden states of the last cached block's tokens, so vLLM computes that block again. vllm/v1/core/
kv_cache_manager.py `KVCacheManager.get_computed_blocks` of v0.8.5 (wheel read, lines 140-145): "if self.use_eagle
and len(computed_blocks) > 0: # Drop the last matched block if (1) eagle is enabled and (2) there is a cache hit.
This is to recompute the last block to get the required hidden states for eagle drafting head.
computed_blocks.pop()", with `SpeculativeConfig.use_eagle()` = method in ("eagle", "eagle3") (vllm/config.py,
v0.8.5) and the scheduler passing `use_eagle` to the KVCacheManager (v1/core/sched/scheduler.py); the v0.8.3 and
v0.8.4 wheels have no such rule (their v1/core has no use_eagle). The same drop stands in the newest sources
(v1/core/single_type_kv_cache_manager.py `FullAttentionManager.find_longest_cache_hit`: "Need to drop the last
matched block if eagle is enabled", `use_eagle()` = ("eagle", "eagle3", "mtp", "dflash"); vllm issue #53670,
2026-08, on 0.26.1: "the EAGLE last-block drop (`drop_eagle_block`) in the prefix-cache hit path", and the
open RFC #50438 / PR #50897 to lift it). MTP is taken from v0.9.0, the release from which draftsim runs vLLM V1's
MTP (profiles.engine_time.support; `use_eagle()` holds "deepseek_mtp" there, as batch_defaults.vllm_kv_lookahead
reads it). Draft models (`uses_draft_model()`), n-gram, suffix decoding and Medusa: no drop. SGLang's radix cache
and TensorRT-LLM's block reuse were not read for such a rule: no drop is modelled for them.
"""
from __future__ import annotations

from profiles.engine_time.batch_defaults import V1_FROM
from profiles.measured.source import version_key

# speculation method (as simulator.cluster.factory.speculation_method names it) -> the first vLLM release whose prefix
# cache drops the last block of a hit for it (module docstring)
VLLM_EAGLE_HIT_DROP_FROM = {"eagle": "0.8.5", "eagle3": "0.8.5", "mtp": "0.9.0"}
SGLANG_EAGLE_RADIX_FROM = "0.4.3.post3"   # the first SGLang release that keeps the radix cache with EAGLE (docstring)
TRTLLM_BLOCK_REUSE_FROM = "1.0.0"   # the first TensorRT-LLM release (PyTorch backend) whose default was read


def engine_prefix_caching(framework: str, version: str, drafter: str | None, hybrid: bool) -> tuple[bool | None, str]:
    """(the prefix caching `framework` at `version` runs by default, or None where no rule is read; the rule, one
    line citing its source) for speculation of engine family `drafter` (None: none; simulator.cost.drafters
    .engine_family) and a `hybrid` target (recurrent-state layers beside attention) (module docstring).
    ValueError for an unknown framework."""
    v = version_key(version)
    if framework == "vllm":
        if v < version_key(V1_FROM):
            return False, (f"vLLM V0 (before {V1_FROM}): enable_prefix_caching off by default (vllm/engine/arg_utils.py "
                           "EngineArgs.__post_init__, 0.7: bool(VLLM_USE_V1))")
        if hybrid:
            return False, ("vLLM V1 keeps prefix caching off for hybrid models by default (model_executor/models/"
                           "config.py MambaModelConfig.verify_and_update_config, 0.10.2-0.11.0; engine/arg_utils.py "
                           "'and not model_config.is_hybrid', 0.27.1)")
        return True, ("vLLM V1: enable_prefix_caching on by default (vllm/engine/arg_utils.py "
                      "EngineArgs._set_default_args_v1, 0.8; is_prefix_caching_supported, 0.32)")
    if framework == "sglang":
        if drafter == "eagle" and v < version_key(SGLANG_EAGLE_RADIX_FROM):
            return False, (f"SGLang before {SGLANG_EAGLE_RADIX_FROM} disables the radix cache with EAGLE speculation "
                           "(srt/server_args.py ServerArgs.__post_init__, 0.4.3 - 0.4.3.post2)")
        return True, "SGLang: radix cache on unless --disable-radix-cache (srt/server_args.py, 0.4.3.post3-0.5.23)"
    if framework == "trtllm":
        if v < version_key(TRTLLM_BLOCK_REUSE_FROM):
            return None, (f"TensorRT-LLM before {TRTLLM_BLOCK_REUSE_FROM} (TensorRT engines): no one default for the "
                          "0.x line (the C++ executor's KvCacheConfig enableBlockReuse = false at 0.10, executor.h); "
                          "draftsim's default (off)")
        return True, ("TensorRT-LLM: KvCacheConfig.enable_block_reuse True by default (tensorrt_llm/llmapi/"
                      "llm_args.py, 1.x)")
    raise ValueError(f"no prefix-caching default for framework {framework!r}")


def vllm_eagle_drops_hit_block(version: str, method: str | None) -> bool:
    """Whether vLLM `version`'s prefix cache computes the last block of a request's cache hit again under
    speculation `method` (eagle, eagle3, mtp, draft_model, ngram, ...; None: none) (module docstring)."""
    first = VLLM_EAGLE_HIT_DROP_FROM.get(method) if method is not None else None
    return first is not None and version_key(version) >= version_key(first)
