"""Drafter families: what a draft pass costs, where it runs, and what it occupies in HBM.

Each family (one builder plus one line in `DRAFTERS`) yields a *pass pricer* with ForwardCost's interface
(dense, prefill_attention, decode_forward, decode_attention, exact_decode, stage_gpus, gpu_layers) that
StepCostModel calls once per draft pass, the HBM it needs on the target's GPUs, and, for drafters on their
own GPUs, how much of the draft time the step exposes. Approximations are named where made:

- `draft_model`, placement `colocated`: the draft model's op graph on the target's first `tp` GPUs, run
  before verification (time-shared); weights and KV in the same HBM.
- `draft_model` with `layer_parallel` > 1 (EasySpec): simulator.cost.layer_parallel.
- `draft_model`, placement `separate`: the draft model on its own `tp` GPUs; drafting for step t+1 runs
  concurrently with the verification of step t assuming step t accepts everything (PEARL's post-verify).
  A request whose window was not fully accepted must be redrafted serially. Step time =
  max(draft, verify) + (1 − P(full accept))·draft: the expected redraft, with the redraft's cost taken
  proportional to the share of requests that need it (exact at batch 1 in expectation; at large batch a
  partial redraft costs more than its share because small draft passes are memory-bound). PEARL's
  pre-verify is the control policy `pearl` (simulator.speculation.control.pearl). No HBM on the target's GPUs; the draft's `tp`
  GPUs are the replica's too (`DrafterBuild.own_gpus`: counted in gpus, cost, MFU/MBU and energy, where
  they are taken to be busy for the step's whole device time, since they draft during verification).
- `draft_model`, placement `cpu`: the draft's op graph priced by the host CPU's measured profile
  (profiles/data/cpu-local, fp32) plus, per draft pass, one PCIe transfer of the pass's token ids
  (4 bytes each) at the catalog's host-link bandwidth and latency. Drafting and verification are serial
  (Dovetail-style). No HBM.
- `head`, style `autoregressive` (EAGLE): one decoder layer of the target's width + the target's shared
  embedding and LM head, one pass per draft depth over the expanded nodes; the FC that fuses feature and
  token embedding (2h×h) is counted in memory but not timed. Own one-layer KV cache.
- `head`, styles `sequential` (Hydra), `rnn` (Clover), `layers` > 1 (KOALA), `tokens_per_pass` > 1
  (Falcon): simulator.cost.heads.
- `head`, style `parallel` (Medusa): `gamma` heads, each a residual block (h×h GEMM) and its own LM head
  (h×V), all run in one pass on the last hidden state of each request; ops sharded over the target's tp
  (the logits all-gather is not priced). No KV.
- `layer_skip`: the target with round(layers_fraction·L) layers; the draft reads the KV of the kept
  layers (shared with the target: no extra memory; the skipped layers' KV for draft tokens is filled by
  the verify pass).
- `ngram`: prompt lookup on the host; zero GPU time (string matching costs microseconds), no memory.
- `cascade`: CS Drafting's horizontal and vertical cascades of draft models (simulator.cost.cascade).
- `sparse_kv`: MagicDec's self-speculation, the target attending to a bounded KV window
  (simulator.cost.sparse_kv). No extra memory.
- `eagle3`: an EAGLE-3 head (simulator.cost.eagle3); `mtp`: the model's own MTP modules
  (simulator.cost.mtp). Both run the engines' hidden-state proposer layout (simulator.cost.proposer).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.ops import GEMM, Op
from models.spec import ModelSpec, dense_weight_dtype, dtype_bytes, kv_cache_dtype
from models.step import Parallelism
from simulator.errors import ScenarioError
from simulator.cost.step_cost import SECONDS, ForwardCost, _price, zero_cost


class ZeroCost:
    """A drafter with no GPU work (n-gram / prompt lookup)."""

    def stage_gpus(self) -> float:
        return 1.0

    def gpu_layers(self) -> int:
        return 0

    def passes_per_call(self) -> int:
        return 1

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        return zero_cost()

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        return zero_cost()

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        return zero_cost()

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        return np.zeros((len(np.atleast_1d(context_sums)), 3))

    decode_attention = decode_forward


class TokenwiseHeadCost(ZeroCost):
    """A head pass whose cost depends only on its input tokens (GEMMs on hidden states: no attention, no
    KV); subclasses price `dense`. The head runs as one layer-like pass on the target's GPUs."""

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        return self.dense(seqs * q, seqs * q)

    stage_gpus = ForwardCost.stage_gpus

    def gpu_layers(self) -> int:
        return 1  # one layer-like pass, not the target's layers

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        seqs = np.broadcast_to(np.asarray(seqs), np.shape(np.atleast_1d(context_sums)))
        return np.array([self.dense(int(b) * q, int(b) * q) for b in seqs]).reshape(-1, 3)

    def decode_attention(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        return np.zeros((len(np.atleast_1d(context_sums)), 3))


@dataclass
class MedusaHeadsCost(TokenwiseHeadCost):
    """`heads` Medusa heads (residual h×h block + own LM head h×V) on each head-input token."""

    spec: ModelSpec
    parallelism: Parallelism
    latency: object
    dtype: str
    heads: int
    _memo: dict = field(default_factory=dict, repr=False)

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        t = int(logits_tokens)
        if t == 0 or self.heads == 0:
            return zero_cost()
        cost = self._memo.get(t)
        if cost is None:
            h, v, tp = self.spec.hidden_size, self.spec.vocab_size, self.parallelism.tp
            w, a = dtype_bytes(dense_weight_dtype(self.dtype)), 2.0   # heads are not experts
            ops = []
            for name, n in (("medusa_resblock", h / tp), ("medusa_lm_head", v / tp)):
                ops.append(Op.make(GEMM, name, 2.0 * t * n * h, a * t * (h + n) + w * h * n, self.heads,
                                   m=t, n=n, k=h))
            cost = self._memo[t] = _price(self.latency, ops)
        return cost



@dataclass
class HostForwardCost(ForwardCost):
    """A draft model on the host CPU: its passes priced by the CPU latency model, plus one PCIe transfer
    of each pass's token ids (see the module docstring)."""

    link_bandwidth_bytes_per_s: float = 64e9
    link_latency_s: float = 3e-6

    def stage_gpus(self) -> float:
        return 0.0  # its FLOPs/bytes are host work, not counted in GPU MFU/MBU

    def gpu_layers(self) -> int:
        return 0

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        base = super().dense(num_tokens, logits_tokens)
        if logits_tokens == 0:
            return base
        transfer_s = self.link_latency_s + 4.0 * logits_tokens / self.link_bandwidth_bytes_per_s
        return base + np.array([transfer_s, 0.0, 0.0])


def overlap_exposure(full_accept_prob: float):
    """`exposed_draft` for a drafter on its own GPUs (see the module docstring, placement `separate`)."""
    rollback = 1.0 - float(full_accept_prob)

    def exposed(draft: np.ndarray, target: np.ndarray) -> np.ndarray:
        out = np.array(draft, dtype=np.float64, copy=True)
        out[:, SECONDS] = np.maximum(draft[:, SECONDS] - target[:, SECONDS], 0.0) + rollback * draft[:, SECONDS]
        return out
    return exposed


@dataclass(frozen=True)
class DrafterBuild:
    """A drafter ready for the step cost model and the memory model."""

    cost: object                    # pass pricer (ForwardCost interface)
    passes_per_step: int | None     # None: one pass per tree level; 1: parallel heads
    weight_bytes_per_gpu: float     # on the target's GPUs
    kv_bytes_per_token_per_gpu: float
    separate: bool = False          # drafts on its own GPUs, overlapped with verification
    spec: ModelSpec | None = None   # the draft model (for reports), if there is one
    colocated_model: bool = False   # an independent draft model whose KV lives beside the target's
    tokens_per_pass: int = 1        # draft tokens per request one pass proposes (semi-autoregressive heads)
    fixed_chain: str | None = None  # why the drafter runs one fixed chain per step (no trees, no control policy)
    hidden_state: object | None = None  # simulator.cost.proposer.HiddenStateHooks: an EAGLE-3/MTP engine layout
    own_gpus: int = 0               # GPUs the drafter runs on beside the target's (placement separate: its tp)


def _ngram(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str) -> DrafterBuild:
    return DrafterBuild(ZeroCost(), None, 0.0, 0.0)


def _layer_skip(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str) -> DrafterBuild:
    n = max(1, min(target.num_layers - 1, round(d.layers_fraction * target.num_layers)))
    spec = target.with_layers(n)
    return DrafterBuild(ForwardCost(spec, Parallelism(par.tp, 1), latency, dtype, kv_dtype), None, 0.0, 0.0, spec=spec)


def _head(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str) -> DrafterBuild:
    tp_par = Parallelism(par.tp, 1)
    if d.style in ("sequential", "rnn"):
        from simulator.cost.heads import HEAD_STYLES
        return HEAD_STYLES[d.style](d, target, par, latency, dtype)
    if d.style == "parallel":
        w = d.gamma * (target.hidden_size ** 2 + target.hidden_size * (1 + target.vocab_size))
        cost = MedusaHeadsCost(target, tp_par, latency, dtype, d.gamma)
        return DrafterBuild(cost, 1, w * dtype_bytes(dense_weight_dtype(dtype)) / par.tp, 0.0)
    spec = target.with_layers(d.layers)
    fc = 2 * target.hidden_size ** 2   # the layers it runs, and its fc
    weights = spec.decoder_weight_bytes(dtype) + fc * dtype_bytes(dense_weight_dtype(dtype))
    return DrafterBuild(ForwardCost(spec, tp_par, latency, dtype, kv_dtype), None, weights / par.tp,
                        spec.kv_bytes_per_token_per_gpu(tp_par, kv_dtype), spec=spec, tokens_per_pass=d.tokens_per_pass,
                        fixed_chain=None if d.tokens_per_pass == 1 else
                        "a semi-autoregressive head (tokens_per_pass > 1) drafts one fixed chain")


def _draft_model(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str) -> DrafterBuild:
    from models import get_model
    from models.spec import validate_parallelism
    try:
        spec = get_model(d.model)
    except ValueError as exc:
        raise ScenarioError("drafter.model", str(exc)) from None
    if spec.param_count() > target.param_count():   # (llama-3.1-8b drafting for llama-3.2-1b ran, exit 0)
        raise ScenarioError("drafter.model", f"{spec.name} ({spec.param_count() / 1e9:.3g} B parameters) is larger "
                                             f"than the target {target.name} ({target.param_count() / 1e9:.3g} B) it "
                                             "drafts for; allowed: a model no larger than the target")
    draft_par = Parallelism(d.tp, 1)
    if d.placement == "colocated" and d.tp > par.gpus:
        raise ScenarioError("drafter.tp", f"{d.tp} exceeds the replica's {par.gpus} GPUs")
    try:
        validate_parallelism(spec, draft_par)
    except ValueError as exc:
        raise ScenarioError("drafter.tp", str(exc)) from None
    if d.placement == "colocated" and d.layer_parallel > 1:
        from simulator.cost.layer_parallel import layer_parallel_cost
        if d.layer_parallel > par.gpus:
            raise ScenarioError("drafter.layer_parallel", f"{d.layer_parallel} exceeds the replica's {par.gpus} GPUs")
        k = d.layer_parallel
        return DrafterBuild(layer_parallel_cost(spec, k, d.gamma, latency, dtype, kv_dtype), 1,
                            spec.weight_bytes(dtype) / k, spec.kv_bytes_per_token_per_gpu(draft_par, kv_dtype) / k, spec=spec, colocated_model=True,
                            fixed_chain="a layer-parallel (EasySpec) draft prices its gamma fuzzy passes and "
                                        "its calibration pass as one fixed chain")
    if d.placement == "colocated":
        return DrafterBuild(ForwardCost(spec, draft_par, latency, dtype, kv_dtype), None,
                            spec.weight_bytes(dtype) / draft_par.gpus,
                            spec.kv_bytes_per_token_per_gpu(draft_par, kv_dtype), spec=spec, colocated_model=True)
    if d.placement == "separate":
        if spec.weight_bytes(dtype) / draft_par.gpus >= hw.hbm_bytes:
            raise ScenarioError("drafter.tp", f"draft {spec.name} does not fit on {d.tp} GPU(s) of {hw.id}")
        return DrafterBuild(ForwardCost(spec, draft_par, latency, dtype, kv_dtype), None, 0.0, 0.0, separate=True,
                            spec=spec, own_gpus=draft_par.gpus)
    from profiles.predictor import load_latency_model
    cpu = load_latency_model("cpu-local", dtype="fp32")
    cost = HostForwardCost(spec, Parallelism(1, 1), cpu, "fp32",
                           link_bandwidth_bytes_per_s=hw.host_link_bandwidth_bytes_per_s,
                           link_latency_s=hw.host_link_latency_s)
    return DrafterBuild(cost, None, 0.0, 0.0, spec=spec)


def _sparse_kv(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str) -> DrafterBuild:
    from simulator.cost.sparse_kv import SparseKVForwardCost
    return DrafterBuild(SparseKVForwardCost(target, par, latency, dtype, kv_dtype, kv_budget_tokens=d.kv_budget), None,
                        0.0, 0.0)


def _cascade(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str) -> DrafterBuild:
    from simulator.cost.cascade import build_cascade
    return build_cascade(d, target, par, latency, hw, dtype, kv_dtype)


def _eagle3(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str,
            context: "DraftContext") -> DrafterBuild:
    from simulator.cost.eagle3 import build_eagle3
    return build_eagle3(d, target, par, latency, hw, dtype, kv_dtype, context.release)


def _mtp(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str,
         context: "DraftContext") -> DrafterBuild:
    from simulator.cost.mtp import build_mtp
    return build_mtp(d, target, par, latency, hw, dtype, kv_dtype, context)


@dataclass(frozen=True)
class DraftContext:
    """What some drafters need of the pool beyond the common arguments: the scenario's `cluster.moe`
    options (an MTP module's MoE routes as the target's), the scenario's folder (routing traces) and the engine
    release the pool runs (simulator.cluster.factory.deployment_release: (framework, version or None); None:
    no engine, the checkpoint's weights as they are), whose rules say which of an EAGLE-3 head's or MTP
    module's weights it shares with the target."""

    moe: object = None
    base_dir: object = None
    release: tuple[str, str | None] | None = None


# drafter.kind -> builder(drafter section, target, parallelism, latency model, hardware, dtype, KV dtype)
DRAFTERS = {"ngram": _ngram, "layer_skip": _layer_skip, "head": _head, "draft_model": _draft_model,
            "cascade": _cascade, "sparse_kv": _sparse_kv,
            "suffix": lambda d, *_: DrafterBuild(ZeroCost(), 1, 0.0, 0.0)}  # host proposer: one call per step
# ... and those whose builder also takes the pool's DraftContext
CONTEXT_DRAFTERS = {"mtp": _mtp, "eagle3": _eagle3}

# drafter.kind -> the family whose serving-engine behaviour (profiles.engine_time: proposer host work,
# synchronous or overlapped scheduling) the drafter gets; heads by style (`head_family`).
# cascade: a chain of independent draft models, run by the proposer like a draft model; sparse_kv:
# self-speculation of the whole target (no serving engine ships it), like layer skipping; eagle3 and mtp:
# vLLM runs both through its EagleProposer and keeps async scheduling for "EAGLE/MTP" (v0.14 notes), SGLang
# runs MTP (NextN) as an EAGLE draft model (EAGLEWorker), so both get the EAGLE family's engine behaviour.
ENGINE_FAMILIES = {"draft_model": "draft_model", "layer_skip": "layer_skip", "ngram": "ngram", "suffix": "suffix",
                   "cascade": "draft_model", "sparse_kv": "layer_skip", "eagle3": "eagle", "mtp": "eagle"}


def engine_family(d) -> str:
    """The engine-time family of a drafter section (see ENGINE_FAMILIES)."""
    if d.kind == "head":
        return HEAD_ENGINE_FAMILIES[d.style]
    return ENGINE_FAMILIES[d.kind]


# head style -> engine family. Hydra (sequential) and Clover (rnn) are drop-in heads of the Medusa
# framework (their papers build on Medusa's code; no serving engine ships them), so they get Medusa's
# engine behaviour; KOALA's multi-layer and Falcon's semi-autoregressive heads are EAGLE-style heads.
HEAD_ENGINE_FAMILIES = {"autoregressive": "eagle", "parallel": "medusa", "sequential": "medusa", "rnn": "medusa"}


def build_drafter(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str,
                  kv_dtype: str | None = None, context: DraftContext | None = None) -> DrafterBuild:
    """The DrafterBuild of a scenario's drafter section `d` (any kind but none); a drafter's own KV (draft
    model, EAGLE head) is stored in `kv_dtype` (default: the model's 16-bit dtype, models.spec.kv_cache_dtype; the factory passes the deployment's)."""
    kv = kv_cache_dtype(dtype, kv_dtype)
    if d.kind in CONTEXT_DRAFTERS:
        return CONTEXT_DRAFTERS[d.kind](d, target, par, latency, hw, dtype, kv, context or DraftContext())
    return DRAFTERS[d.kind](d, target, par, latency, hw, dtype, kv)
