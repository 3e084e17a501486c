"""EAGLE-3 drafter (`drafter: {kind: eagle3, head, gamma}`): its pass pricer, memory and engine layout.

The op graph of one draft pass, of the fc and of the target's hidden-state capture is models.eagle3; this
module prices it with the scenario's latency model and builds the DrafterBuild:

- pass pricer `Eagle3PassCost`: a ForwardCost over the head's one-layer spec (attention over the head's own
  KV cache, models.opgraph.attention_ops) whose dense part is models.eagle3.pass_ops; `fuse(tokens)` prices
  the fc once per step on the first pass's tokens (simulator.cost.proposer);
- memory on each of the target's tp GPUs: models.eagle3.Eagle3Head.weight_bytes_per_gpu, with the head's own
  embedding where the pool's engine release keeps it (`own_embedding`), and one layer of KV per token
  (`kv_bytes_per_token_per_gpu`), in the drafter KV dtype;
- the target pays `capture_ops` per processed token (StepCostModel adds it to the target's cost).

The head runs with the target's tensor parallelism (vLLM requires the EAGLE head's TP to equal the
target's; the head's linears are TP-sharded and its fc replicated). Not modelled: a head beside an
expert-parallel target with DP attention (parallelism.ep > 1) — refused with a one-line error.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.eagle3 import Eagle3Head, capture_ops, fuse_ops, get_eagle3_head, head_for_target, head_from_fields, pass_ops
from models.spec import WEIGHT_ONLY_DTYPES, ModelSpec, validate_parallelism
from models.step import Parallelism
from simulator.cost.proposer import HiddenStateHooks
from simulator.cost.step_cost import ForwardCost, _price
from simulator.errors import ScenarioError


@dataclass
class Eagle3PassCost(ForwardCost):
    """Draft passes of an EAGLE-3 head (module docstring). `spec` is the head's layer spec."""

    head: Eagle3Head | None = None
    _fuse: dict = field(default_factory=dict, repr=False)

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        key = (num_tokens, logits_tokens)
        cost = self._dense.get(key)
        if cost is None:
            cost = self._dense[key] = _price(self.latency, pass_ops(self.head, num_tokens, logits_tokens,
                                                                    self.parallelism.tp, self.dtype))
        return cost

    def fuse(self, num_tokens: int) -> np.ndarray:
        """(seconds, flops, bytes) of the fc over `num_tokens` captured target tokens."""
        cost = self._fuse.get(num_tokens)
        if cost is None:
            cost = self._fuse[num_tokens] = _price(self.latency, fuse_ops(self.head, num_tokens, self.dtype))
        return cost


@dataclass
class CaptureCost:
    """What the target pays per step to capture its hidden states for the head (models.eagle3.capture_ops)."""

    target: ModelSpec
    latency: object
    dtype: str
    dp: int = 1
    _memo: dict = field(default_factory=dict, repr=False)

    def __call__(self, tokens: int) -> np.ndarray:
        cost = self._memo.get(tokens)
        if cost is None:
            cost = self._memo[tokens] = _price(self.latency, capture_ops(self.target, tokens / self.dp, self.dtype))
        return cost


def resolve_head(d, target: ModelSpec) -> Eagle3Head:
    """The head of a drafter section: a catalog name, an inline block, or (omitted) the head published for
    the target; ScenarioError naming drafter.head when it is missing or does not fit the target."""
    try:
        if d.head is None:
            head = head_for_target(target.name)
            if head is None:
                from models.eagle3 import eagle3_heads
                raise ScenarioError("drafter.head", f"no EAGLE-3 head in the catalog drafts for {target.name}; give "
                                    f"one of {', '.join(sorted(eagle3_heads()))} or an inline head block")
        elif isinstance(d.head, str):
            head = get_eagle3_head(d.head)
        else:
            head = head_from_fields("drafter.head", dict(d.head))
    except ScenarioError:
        raise
    except ValueError as exc:
        raise ScenarioError("drafter.head", str(exc).removeprefix("drafter.head: ")) from None
    if head.target_hidden_size != target.hidden_size:
        # (its fc takes 3·target_hidden_size inputs in every engine: vLLM llama_eagle3's `fc`, SGLang's and
        # TensorRT-LLM's `hidden_size_in`; the target's captured states are 3·hidden_size wide. A vocab_size other
        # than the target's is served: profiles.engine_time.eagle3_embedding, applied per release by
        # simulator.cluster.factory.check_eagle3_embedding)
        raise ScenarioError("drafter.head", f"{head.name} reads hidden states of size {head.target_hidden_size}, but "
                            f"{target.name} has hidden_size {target.hidden_size}; allowed: target_hidden_size "
                            f"{target.hidden_size}")
    return head


def own_embedding(release: tuple[str, str | None] | None, target: ModelSpec, head: Eagle3Head, pp: int) -> bool:
    """Whether the engine release the pool runs (`release`: simulator.cluster.factory.deployment_release; version
    None: the framework's newest modelled release) keeps `head`'s own embedding in GPU memory
    (profiles.engine_time.eagle3_embedding.keeps_own_embedding); no release: the checkpoint's."""
    if release is None:
        return not head.shares_embedding
    from profiles.engine_time.eagle3_embedding import keeps_own_embedding
    from profiles.engine_time.frameworks import release_or_modelled
    framework, version = release
    return keeps_own_embedding(framework, release_or_modelled(framework, version), target, head, pp)


def build_eagle3(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str,
                 release: tuple[str, str | None] | None = None):
    """The DrafterBuild of an `eagle3` drafter section; `release`: the pool's engine (`own_embedding`)."""
    from simulator.cost.drafters import DrafterBuild
    head = resolve_head(d, target)
    if par.ep > 1:
        raise ScenarioError("cluster.parallelism.ep", "an EAGLE-3 head is modelled beside tensor-parallel targets; "
                            f"ep={par.ep} (DP attention) is not supported with drafter kind eagle3")
    tp_par = Parallelism(par.tp, 1)
    spec = head.layer_spec()
    # The head's own weights: its checkpoint's 16-bit ones under a weight-only quantized target (int4); the
    # target's dtype otherwise. Approximation: the head's ops are priced by the target's latency model (for
    # an fp8 target, at its fp8 GEMM speed; int4 GEMMs are the roofline's, which prices the ops' bf16 bytes).
    head_dtype = "bf16" if dtype in WEIGHT_ONLY_DTYPES else dtype
    try:
        validate_parallelism(spec, tp_par)
    except ValueError as exc:
        raise ScenarioError("cluster.parallelism.tp", f"the EAGLE-3 head {head.name} runs at the target's tp: {exc}") \
            from None
    cost = Eagle3PassCost(spec, tp_par, latency, head_dtype, kv_dtype, head=head)
    capture = CaptureCost(target, latency, dtype)
    weights = head.weight_bytes_per_gpu(par.tp, head_dtype, own_embedding(release, target, head, par.pp))
    return DrafterBuild(cost, None, weights,
                        head.kv_bytes_per_token_per_gpu(par.tp, kv_dtype), spec=spec,
                        hidden_state=HiddenStateHooks(cost.fuse, capture))

