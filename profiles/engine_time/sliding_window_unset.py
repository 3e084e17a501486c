"""A config.json whose layer_types name sliding-window layers but whose `sliding_window` is 0 or null
(ModelSpec.sliding_window_unset; gpt-oss, models.hf_config), or a `sliding_window` of 0 on a model whose attention
takes it on every layer (Llama, Mistral, Mixtral, Qwen3-MoE; Qwen2 / Qwen3 with use_sliding_window): draftsim
prices those layers with no window, as the engine releases that serve such a config do; `check` refuses the
releases that do not, naming the model's field. Read in the releases' sources:

- vLLM, a 0 on Llama, Mistral, Mixtral or Qwen: ModelConfig.get_sliding_window returns it (Qwen's only with
  use_sliding_window, 0.4.1 - 0.10.2; every one after) and Attention takes cache_config.sliding_window = 0 (0.5.0 -
  0.18.1; the model's own in 0.4.1): V1's sliding-window manager frees every block before the next token, V0's
  block manager keeps 0 // block_size + 2 blocks (core/block_manager.py max_block_sliding_window, 0.6.6; 0.4.1's
  block_manager_v1 takes logical_idx % 0) while the flash-attention window (sliding_window - 1, 0) = (-1, 0)
  attends to all: refused before 0.19.0 (0 becomes no window there).
  SGLang builds no window for these (profiles.engine_time.sliding_window_served): served.

- vLLM (gpt_oss.py passes `config.sliding_window` to every even layer's Attention, 0.11.0 - 0.33.0): null is no
  window (Attention's sliding_window None). 0 is "no window" from 0.19.0 (vllm/config/model.py: "Some checkpoints
  set sliding_window to 0 to indicate that sliding window is disabled ... Convert 0 to None to avoid errors";
  absent in 0.18.1); before it the 0 reaches SlidingWindowSpec(sliding_window=0), whose manager drops every block
  before the next token (get_num_skipped_tokens: num_computed_tokens - 0 + 1) while the kernel's window
  (sliding_window - 1, 0) = (-1, 0) attends to all of them: refused.
- SGLang (gpt_oss.py get_attention_sliding_window_size: `config.sliding_window - 1`, every release from 0.5.0rc0
  to 0.5.23): null fails at model build (None - 1): refused. 0 gives -1, "normal attention"; 0.5.0rc0 - 0.5.7 then
  keep one full KV pool (model_runner: hybrid SWA memory only where the window is > 0; 0.5.7's is_hybrid_model takes
  no gpt-oss): served. From 0.5.8 gpt-oss is a hybrid-SWA model by its architecture (configs/model_config.py
  is_hybrid_swa_model): 0.5.8 - 0.5.12 assert the window is > 0 at start-up (model_runner_kv_cache_mixin.py
  set_num_tokens_hybrid_swa), 0.5.13 on free the SWA layers' KV before pre_len - (-1) - page_size
  (managers/schedule_batch.py) while those layers attend to every token: refused from 0.5.8.

Not checked, named: TensorRT-LLM (modeling_gpt_oss.py passes `sliding_window` as attention_window_size; None is
full attention; what its attention op does with 0 was not read): served with no window.
"""
from __future__ import annotations

from dataclasses import dataclass

from profiles.engine_time.support import UnsupportedCombination
from profiles.measured.source import version_in_span


@dataclass(frozen=True)
class Served:
    """The releases that serve the value with no window: from `since` (None: from the first) to before `until`
    (None: to the newest); `never`: none does. `why`: what the others do (the refusal's reason)."""

    why: str
    since: str | None = None
    until: str | None = None
    never: bool = False
    architectures: tuple[str, ...] = ()   # the Hugging Face architectures the rule is for (empty: every one)

    def serves(self, version: str) -> bool:
        return not self.never and version_in_span(version, self.since, self.until)

    def allowed(self) -> str:
        if self.never:
            return "a config.json whose sliding_window is a number of tokens >= 1"
        span = f"a version >= {self.since}" if self.since else f"a version before {self.until}"
        return f"{span}, or a config.json whose sliding_window is a number of tokens >= 1"


# (framework, config.json's sliding_window) -> the releases that serve it; a pair not listed is served everywhere
RULES = {
    ("vllm", "0"): Served("vLLM before 0.19.0 hands the 0 to its sliding-window KV manager, which frees every block "
                          "before the next token while the attention kernel reads them all (vllm/config/model.py "
                          "turns 0 into no window from 0.19.0)", since="0.19.0"),
    ("sglang", "null"): Served("SGLang's gpt_oss.py takes config.sliding_window - 1 (None - 1 fails at model build)",
                               never=True, architectures=("GptOssForCausalLM",)),
    ("sglang", "0"): Served("SGLang from 0.5.8 holds gpt-oss in its hybrid SWA memory pool with a window of -1 "
                            "(0.5.8 - 0.5.12 assert it is > 0 at start-up; later releases free the sliding layers' "
                            "KV outside it while they attend to every token)", until="0.5.8",
                            architectures=("GptOssForCausalLM",)),
}


def check(framework: str, version: str | None, model, model_field: str = "cluster.model") -> None:
    """UnsupportedCombination naming `model_field` where `framework` `version` does not serve `model`'s sliding
    layers without a window (module docstring)."""
    unset = getattr(model, "sliding_window_unset", "")
    rule = RULES.get((framework, unset)) if unset else None
    if rule is None or version is None or rule.serves(version):
        return
    if rule.architectures:
        from profiles.engine_time.architectures import architecture
        if architecture(model) not in rule.architectures:
            return
    raise UnsupportedCombination(model_field, f"{framework} {version} cannot serve {model.name}: its config.json's "
                                              f"sliding_window is {unset} on its sliding-window attention; "
                                              f"{rule.why}; allowed: {rule.allowed()}")
