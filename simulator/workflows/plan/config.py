"""Capacity-plan files: models, priced hardware, workload, SLOs and the search space; candidates.

A plan YAML (unknown keys are errors)::

    name: llama8b_chat
    models: [llama-3-8b]
    hardware:                               # price: usd_per_gpu_hour, else simulator.workflows.plan.prices
      - {id: h100-sxm}
      - {id: a100-80gb, usd_per_gpu_hour: 1.6}
    workload: {...}                         # as in a scenario
    acceptance: {kind: constant, alpha: 0.7}
    slo: {ttft_s: 0.5, tpot_s: 0.03, attainment: 0.9}
    scheduler: {kind: vllm, max_batch_size: 256}
    search:
      tp: [1, 2, 4]
      pp: [1]
      replicas: [1, 2, 4]                   # or max_gpus: 16 (every replica count that fits)
      ep: [1]                               # MoE: e.g. [1, 8] (ep GPUs per stage; plan-level `moe:` as cluster.moe)
      drafters:
        - {kind: none}
        - {kind: draft_model, model: llama-68m, gamma: [2, 4, 6]}   # another vocabulary than Llama-3's: where
                                            # plan.engine names a vLLM >= 0.25.0, add heterogeneous_vocab: true
        - {kind: draft_model, model: llama-68m, gamma: 5,        # trees need ranked/pair acceptance
           speculation: {kind: tree, builder: sequoia, budget: 32}}
        - {kind: eagle3, gamma: [1, 2, 3, 5],                    # head: default the one published for the model
           acceptance: {kind: constant, alpha: 0.74}}            # a drafter's own acceptance (default: the plan's)
        - {kind: mtp, gamma: [1, 2, 3], modules: 1}              # models that ship MTP modules only
      deployments: [colocated, disaggregated]   # disaggregated: every prefill/decode split
    engine: {version: "0.15.0"}             # optional: cluster.engine of every candidate (default: each
                                            # hardware's measured-tables release, e.g. vLLM 0.14.0 on A100s)
    confirm_top: 5                          # candidates confirmed with the DES
    rank_by: usd_per_hour                   # or usd_per_mtok, j_per_token (among those meeting the SLOs)

Extension points: `DRAFTER_KINDS` (with `speculation`, a draft model drafts any tree/multi-draft shape; EAGLE-3
and MTP take SGLang's EAGLE tree, `{kind: dynamic_tree, top_k, depth, budget}`, and each drafter choice may carry
its own `acceptance`: drafters of different kinds accept differently) and
`simulator.workflows.plan.screen.DEPLOYMENTS` (colocated; disaggregated prefill/decode pools with the same
per-replica TP/PP, every split of the replica count — scenarios/disagg/search.py searches pool
parallelisms separately with the DES); a kind or deployment
that is not registered is a one-line error listing the registered ones.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from models.errors import catalog_key, is_boolean
from simulator.errors import ScenarioError
from simulator.config.names import FolderName
from simulator.config.base import Strict, field_error
from simulator.config.scenario import AcceptanceConfig, SLOConfig
from simulator.config.speculation import SpeculationConfig
from simulator.workflows.plan.prices import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR, price_per_gpu_hour
from simulator.config.scenario import read_config, validate_config

FIELD = "plan"
DRAFTER_KINDS = ("none", "draft_model", "eagle3", "mtp")
DEFAULT_GAMMA = [4]              # a drafter choice's depths when it lists none
# speculation kinds whose shape does not depend on drafter.gamma for the plan's drafters (one pass per tree
# level: simulator.speculation.shapes.build_speculation reads gamma for parallel heads only)
GAMMA_FREE_SHAPES = ("tree", "dynamic_tree")
MAX_CONFIRM_TOP = 1000         # candidates confirmed with the DES (each a full simulation)
MAX_PLAN_CANDIDATES = 100_000   # screened at ~0.4 ms each (the llama8b example): about 40 s


class HardwareChoiceConfig(Strict):
    id: str
    usd_per_gpu_hour: float | None = Field(default=None, ge=MIN_USD_PER_GPU_HOUR, le=MAX_USD_PER_GPU_HOUR, allow_inf_nan=False)


class DrafterChoiceConfig(Strict):
    """A drafter to try, at every depth in `gamma`. `draft_model`: `model` (and its `tp`); `eagle3`: `head` (a
    head of models/heads/eagle3.yaml; default: the one published for each planned model); `mtp`: `modules`
    (default: all the model ships; candidates of models without MTP modules are screened out with the
    reason). `heterogeneous_vocab` (draft_model): a scenario's drafter.heterogeneous_vocab, vLLM's
    use_heterogeneous_vocab from 0.25.0 (profiles.engine_time.draft_vocabulary). `speculation`: a scenario
    `speculation` block (default chain): a draft model drafts any tree,
    multi-draft shape, e.g. {kind: tree, builder: sequoia, budget: 32}; EAGLE-3 and MTP run SGLang's EAGLE
    tree {kind: dynamic_tree, top_k, depth, budget}; trees need an acceptance that ranks children
    ({kind: ranked, accept_probs: [...]} or a pair). `acceptance`: this drafter's own acceptance section
    (default: the plan's)."""

    kind: str
    model: str | None = None
    head: str | None = None
    modules: int | None = Field(None, ge=1)
    gamma: list[int] = Field(default_factory=lambda: list(DEFAULT_GAMMA))
    tp: int = Field(1, ge=1, le=64)
    heterogeneous_vocab: bool = False
    speculation: dict | None = None
    acceptance: dict | None = None

    @field_validator("gamma", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if is_boolean(value):   # (an int to Python: `gamma: true` became [True], planned as gamma 1, exit 0)
            raise ValueError(f"Input should be a number or a list of numbers, not the boolean {str(value).lower()}")
        return [value] if isinstance(value, int) else value

    @model_validator(mode="after")
    def _check(self) -> "DrafterChoiceConfig":
        if self.kind not in DRAFTER_KINDS:
            raise ValueError(f"unknown drafter kind {self.kind!r}; allowed: {', '.join(DRAFTER_KINDS)}")
        owned = {"model": ("draft_model", None), "tp": ("draft_model", 1), "head": ("eagle3", None),
                 "modules": ("mtp", None), "heterogeneous_vocab": ("draft_model", False)}
        for name, (kind, default) in owned.items():
            if getattr(self, name) != default and self.kind != kind:
                raise ValueError(f"{name} goes with a {kind} drafter")
        if (self.speculation is not None or self.acceptance is not None) and self.kind == "none":
            raise ValueError("speculation and acceptance go with a drafter")
        if self.kind == "none" and self.gamma != DEFAULT_GAMMA:   # (ignored; beside {kind: none} it made every
            raise ValueError("gamma goes with a drafter; kind none drafts no tokens")   # candidate twice)
        if self.acceptance is not None:
            _screenable_acceptance(self.acceptance)
        if self.kind == "draft_model" and not self.model:
            raise ValueError("a draft_model drafter needs model")
        if self.kind != "none" and (not self.gamma or any(g < 1 or g > 64 for g in self.gamma)):
            raise ValueError("gamma must list values in 1..64")
        shape = (self.speculation or {}).get("kind")
        if shape in GAMMA_FREE_SHAPES and len(self.gamma) > 1:   # (the same candidates once per gamma)
            raise field_error("gamma", f"a {shape} speculation's shape is set by its own fields (budget, depth, k, "
                                       f"top_k), not gamma: gamma {self.gamma} made the same candidates "
                                       f"{len(self.gamma)} times; give one value, or list several shapes as drafters")
        if self.kind in ("eagle3", "mtp") and self.speculation is not None:
            from simulator.cost.proposer import hidden_state_shape_error
            refusal = hidden_state_shape_error(self.speculation, self.kind)
            if refusal is not None:   # (every candidate of this drafter could not run)
                raise field_error("speculation.kind", refusal)
        return self

    def block(self) -> dict:
        """The scenario `drafter` section of this choice, without its gamma."""
        if self.kind == "draft_model":
            return {"kind": "draft_model", "model": self.model, "tp": self.tp,
                    **({"heterogeneous_vocab": True} if self.heterogeneous_vocab else {})}
        extra = {"head": self.head} if self.kind == "eagle3" and self.head else \
            {"modules": self.modules} if self.kind == "mtp" and self.modules else {}
        return {"kind": self.kind, **extra}

    def label(self) -> str:
        """How candidates and tables name this drafter: a draft model by its name, EAGLE-3 by its head."""
        if self.kind == "draft_model":
            return self.model
        if self.kind == "eagle3":
            return f"eagle3:{self.head}" if self.head else "eagle3"
        return "mtp" if not self.modules else f"mtp:{self.modules}"


def _screenable_acceptance(acc: dict) -> dict:
    if acc.get("kind") not in ("constant", "positional", "ranked", "pair"):
        raise ValueError("plan acceptance must be constant, positional, ranked or pair (the screen needs "
                         "acceptance probabilities, not a trace)")
    return acc


class SearchSpaceConfig(Strict):
    tp: list[int] = Field(default_factory=lambda: [1], min_length=1)
    pp: list[int] = Field(default_factory=lambda: [1], min_length=1)
    replicas: list[int] | None = None
    max_gpus: int | None = Field(default=None, ge=1, le=4096)
    ep: list[int] = Field(default_factory=lambda: [1], min_length=1)   # expert parallelism (MoE models)
    drafters: list[DrafterChoiceConfig] = Field(default_factory=lambda: [DrafterChoiceConfig(kind="none")], min_length=1)
    deployments: list[str] = Field(default_factory=lambda: ["colocated"], min_length=1)

    @model_validator(mode="after")
    def _replicas_rule(self) -> "SearchSpaceConfig":
        if (self.replicas is None) == (self.max_gpus is None):
            raise ValueError("give exactly one of replicas (a list) or max_gpus")
        if self.replicas is not None and not (self.replicas and 1 <= min(self.replicas)
                                              and max(self.replicas) <= 4096):
            raise ValueError("replicas must list counts in 1..4096 (a scenario's cluster.replicas)")
        # a scenario's cluster.parallelism bounds: a value beyond them made every candidate fail alone
        for name, top in (("tp", 64), ("pp", 64), ("ep", 1024)):
            if min(getattr(self, name)) < 1 or max(getattr(self, name)) > top:
                raise ValueError(f"{name} must list values in 1..{top} (a scenario's cluster.parallelism.{name})")
        # a value listed twice made the same candidates twice: confirmed twice, they took the places of others
        lists = [("tp", self.tp), ("pp", self.pp), ("ep", self.ep), ("replicas", self.replicas or []),
                 ("deployments", self.deployments)]
        lists += [(f"drafters.{i}.gamma", d.gamma) for i, d in enumerate(self.drafters)]
        for name, values in lists:
            twice = _repeated(values)
            if twice is not None:
                raise ValueError(f"{name} lists {twice!r} twice; give each value once")
        return self   # (drafters listed twice: _check_drafters_once, which needs the plan's models and acceptance)


def _repeated(values: list):
    """The first value of `values` seen before, or None."""
    seen = []
    for value in values:
        if value in seen:
            return value
        seen.append(value)
    return None


def _as_resolved(name: str, names) -> str:
    """`name` as the catalog of `names` resolves it (models.errors.catalog_key), when it is a catalog name;
    anything else (a path to a file) as written."""
    key = catalog_key(name)
    return key if key in names else name


class PlanConfig(Strict):
    name: FolderName = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    seed: int = Field(0, ge=0)
    models: list[str] = Field(min_length=1)
    hardware: list[HardwareChoiceConfig] = Field(min_length=1)
    dtype: Literal["fp32", "bf16", "fp16", "fp8", "fp8_block", "int4", "nvfp4", "mxfp4"] = "bf16"
    kv_dtype: Literal["fp32", "bf16", "fp16", "fp8", "nvfp4"] | None = None
    workload: dict
    acceptance: dict = Field(default_factory=lambda: {"kind": "constant", "alpha": 0.7})
    slo: SLOConfig
    scheduler: dict = Field(default_factory=dict)
    moe: dict = Field(default_factory=dict)   # cluster.moe of the scenarios (routing skew, pre-scheduling)
    engine: dict = Field(default_factory=dict)   # cluster.engine of the scenarios (framework, version, flags)
    search: SearchSpaceConfig
    confirm_top: int = Field(5, ge=0, le=MAX_CONFIRM_TOP)
    # how confirmed candidates that meet the SLOs are ordered: cost per hour, cost per million output tokens
    # (the DES's tokens/s at the candidate's $/h) or energy per output token (the DES's, simulator.results.energy)
    rank_by: Literal["usd_per_hour", "usd_per_mtok", "j_per_token"] = "usd_per_hour"

    @field_validator("acceptance")
    @classmethod
    def _screenable(cls, acc: dict) -> dict:
        return _screenable_acceptance(acc)

    @field_validator("slo")
    @classmethod
    def _some_limit(cls, slo: SLOConfig) -> SLOConfig:
        # (with none, every runnable candidate 'met the SLOs': the plan answered its cheapest replica count)
        if slo.ttft_s is None and slo.tpot_s is None and slo.e2e_s is None:
            raise ValueError("a plan looks for the cheapest candidate that meets the SLOs: give at least one of "
                             "ttft_s, tpot_s or e2e_s")
        return slo

    @field_validator("models", "hardware")
    @classmethod
    def _each_once(cls, values: list, info) -> list:
        # (twice, the same candidates twice: confirmed twice, they took the places of others; also in another
        # case, `llama-3-8b` and `LLAMA-3-8B`, which the catalog reads as one name)
        from models.catalog import catalog
        from profiles.hardware import HARDWARE
        names = catalog() if info.field_name == "models" else HARDWARE
        given = [getattr(v, "id", v) for v in values]
        keys = [_as_resolved(name, names) for name in given]
        twice = _repeated(keys)
        if twice is not None:
            raise ValueError(f"{given[keys.index(twice, keys.index(twice) + 1)]!r} is listed twice; give each once")
        return values


@dataclass(frozen=True)
class Candidate:
    model: str
    hardware: str
    usd_per_gpu_hour: float
    tp: int
    pp: int
    replicas: int
    drafter: str                 # "none" or a draft model name
    gamma: int                   # 0 without a drafter
    drafter_tp: int
    deployment: str
    prefill_replicas: int = 0    # disaggregated: replicas in the prefill pool (the rest decode); 0 colocated
    ep: int = 1                  # expert parallelism: ep GPUs per stage, ep/tp data-parallel attention groups
    speculation: str = ""        # JSON of the scenario speculation block; "" = chain
    drafter_block: str = ""      # JSON of the scenario drafter section without gamma; "" = a draft model `drafter`
    #                              (one with heterogeneous_vocab carries its section here too)
    acceptance: str = ""         # JSON of this drafter's own acceptance section; "" = the plan's

    @property
    def decode_replicas(self) -> int:
        return self.replicas - self.prefill_replicas

    @property
    def gpus_per_replica(self) -> int:
        return (self.ep if self.ep > 1 else self.tp) * self.pp

    @property
    def gpus(self) -> int:
        return self.gpus_per_replica * self.replicas

    @property
    def usd_per_hour(self) -> float:
        return self.gpus * self.usd_per_gpu_hour

    @property
    def label(self) -> str:
        draft = f"{self.drafter} γ={self.gamma}" if self.gamma else "no drafter"
        if self.speculation:
            draft += f" {json.loads(self.speculation).get('kind', 'chain')}"
        split = f" {self.prefill_replicas}P+{self.decode_replicas}D" if self.prefill_replicas else ""
        ep = f" ep{self.ep}" if self.ep > 1 else ""
        return (f"{self.model} on {self.replicas}x{self.hardware} tp{self.tp} pp{self.pp}{ep}, {draft}, "
                f"{self.deployment}{split}")


def load_plan(path: str | Path) -> tuple[PlanConfig, Path]:
    spec = read_config(path, PlanConfig, FIELD)
    from models import get_model
    from profiles.hardware import get_hardware

    names = [(f"{FIELD}.models.{i}", get_model, m) for i, m in enumerate(spec.models)]
    names += [(f"{FIELD}.hardware.{i}.id", get_hardware, h.id) for i, h in enumerate(spec.hardware)]
    names += [(f"{FIELD}.search.drafters.{i}.model", get_model, d.model)
              for i, d in enumerate(spec.search.drafters) if d.kind == "draft_model"]
    from models.eagle3 import get_eagle3_head
    names += [(f"{FIELD}.search.drafters.{i}.head", get_eagle3_head, d.head)
              for i, d in enumerate(spec.search.drafters) if d.kind == "eagle3" and d.head]
    for where, getter, name in names:
        try:
            getter(name)
        except ValueError as exc:  # UnknownNameError
            raise ScenarioError(where, str(exc).splitlines()[0]) from None
    from simulator.cluster.factory import CPU_ID
    for i, hw in enumerate(spec.hardware):   # (make_latency_model refuses latency source auto on it; a plan has no
        if get_hardware(hw.id).id == CPU_ID:   # other source: every candidate failed, exit 1, outputs written)
            raise ScenarioError(f"{FIELD}.hardware.{i}.id", f"{hw.id}: a plan prices its candidates with latency "
                                "source auto, which cannot price this machine's CPU (a GPU's op costs from nominal "
                                "figures); allowed: a GPU of the catalog or a hardware file, or a scenario of "
                                "cpu-local with cluster.latency.source: profile")
    if spec.engine:   # (checked here: a bad block screened every candidate out, each with the same reason)
        from simulator.config.engine import EngineConfig
        engine = validate_config(EngineConfig, spec.engine, f"{FIELD}.engine")
        if engine.version is not None:   # (a release with no engine model: every candidate out, exit 1, as above)
            from profiles.engine_time.frameworks import entry_for
            from models.errors import FieldError
            try:
                entry_for(engine.framework or "vllm", engine.version, f"{FIELD}.engine")
            except FieldError as exc:
                raise ScenarioError(exc.field, exc.message) from None
    if spec.moe:
        from simulator.config.scenario import MoeConfig
        moe = validate_config(MoeConfig, spec.moe, f"{FIELD}.moe")
        if moe.routing == "trace":
            raise ScenarioError(f"{FIELD}.moe.routing", "plans take uniform or zipf routing; replay a routing "
                                "trace in a scenario (cluster.moe) instead")
        if moe != MoeConfig() and spec.search.ep == [1]:   # (as a scenario's cluster.moe with ep 1 in every pool)
            raise ScenarioError(f"{FIELD}.moe", "routing and pre-scheduling price the all-to-alls of expert "
                                "parallelism (an MoE model with ep > 1); plan.search.ep lists only 1, so they would "
                                "apply to no candidate: remove plan.moe or list an ep > 1 in plan.search.ep")
    _check_sections(spec)
    _check_drafters_once(spec)
    _check_size(spec)
    _check_parallelism(spec)
    base_dir = Path(path).resolve().parent
    _check_dtypes(spec, base_dir)
    _check_draft_models(spec)
    _check_eagle3_drafters(spec)
    _check_drafter_steps(spec)
    releases = candidate_releases(spec, base_dir)
    _check_architectures(spec, releases)
    _check_draft_vocabulary(spec, releases)
    _check_eagle3_embedding(spec, releases)
    _check_mtp_draft_lengths(spec, releases)
    _check_tree_shapes(spec, releases)
    _check_schedule_policy(spec, releases)
    _check_workload(spec, base_dir)
    _check_context(spec, base_dir, releases)
    for i, hw in enumerate(spec.hardware):
        if hw.usd_per_gpu_hour is None and price_per_gpu_hour(hw.id) is None:
            raise ScenarioError(f"{FIELD}.hardware.{i}.usd_per_gpu_hour",
                                f"no catalog price for {hw.id!r}; give usd_per_gpu_hour")
    return spec, base_dir


def candidate_release(spec: PlanConfig, hardware: str, base_dir: Path) -> tuple[str, str | None]:
    """(framework, version) of the engine release the plan's candidates on GPU `hardware` run, as their scenarios
    resolve it: the cluster section of a candidate (the plan's engine, dtype and kv_dtype) read as a scenario reads
    it (ClusterConfig: cluster.engine's framework names the kernels' too), then simulator.cluster.factory.
    pool_release (plan.engine.version, else the measured tables' release on that GPU, else the newest modelled
    one). Where plan.engine names no version it differs by GPU (vLLM 0.14.0 on A100s, 0.24.0 on H100s)."""
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import pool_release
    from simulator.config.scenario import ClusterConfig
    cluster = validate_config(ClusterConfig, {"model": spec.models[0], "hardware": hardware, "dtype": spec.dtype,
                                              **({"kv_dtype": spec.kv_dtype} if spec.kv_dtype else {}),
                                              **({"engine": dict(spec.engine)} if spec.engine else {})}, FIELD)
    return pool_release(cluster.latency, cluster.engine, get_hardware(hardware), spec.dtype, spec.kv_dtype, base_dir)


def candidate_releases(spec: PlanConfig, base_dir: Path) -> dict[str, tuple[str, str | None]]:
    """Hardware id -> candidate_release of each planned GPU."""
    return {choice.id: candidate_release(spec, choice.id, base_dir) for choice in spec.hardware}


def _check_architectures(spec: PlanConfig, releases: dict[str, tuple[str, str | None]]) -> None:
    """A planned model or draft model that no candidate's engine release (`releases`: candidate_releases) can
    load (profiles.engine_time.architectures: its architecture, or its rope scaling type): refused here, as every
    one of its candidates would be screened out with the same reason (exit 1, outputs written). Checked at each
    GPU's release, also where plan.engine names no version (the measured tables' or the newest modelled release:
    SGLang 0.5.23 has no Jamba); a model that one GPU's release loads and another's does not is left to the screen,
    which screens those candidates out with the reason."""
    from models import get_model
    from profiles.engine_time import architectures
    from profiles.engine_time.support import UnsupportedCombination
    models = [(f"{FIELD}.models.{i}", m) for i, m in enumerate(spec.models)]
    models += [(f"{FIELD}.search.drafters.{i}.model", d.model)
               for i, d in enumerate(spec.search.drafters) if d.kind == "draft_model"]
    for where, name in models:
        refusals = []
        for framework, version in dict.fromkeys(releases.values()):
            try:
                architectures.check(framework, version, get_model(name), f"{FIELD}.engine.version", where)
            except UnsupportedCombination as exc:
                refusals.append(exc)
                continue
            break
        else:
            raise ScenarioError(refusals[0].field, _naming_releases(spec, refusals[0].message, releases))


def _naming_releases(spec: PlanConfig, message: str, releases: dict[str, tuple[str, str | None]]) -> str:
    """A refusal at the candidates' releases (`releases`: candidate_releases), saying before its "allowed" part which
    releases those are where plan.engine names no version (the measured tables' or the newest modelled ones)."""
    if spec.engine.get("version") is not None:
        return message
    head, sep, allowed = message.partition("; allowed:")
    runs = ", ".join(f"{framework} {version} on {hw}" for hw, (framework, version) in releases.items())
    return f"{head} (plan.engine names no version; the candidates run {runs}){sep}{allowed}"


def _check_draft_vocabulary(spec: PlanConfig, releases: dict[str, tuple[str, str | None]]) -> None:
    """A draft model whose vocabulary size no planned model's engine release (`releases`: candidate_releases)
    serves it with, or whose heterogeneous_vocab no such release has (profiles.engine_time.draft_vocabulary, as
    simulator.cluster.factory applies it to a run: where plan.engine names the version, or heterogeneous_vocab
    asks for vLLM's TLI): refused here, naming the drafter entry's field, as every one of its candidates would be
    screened out with the same reason (exit 0 beside other drafters, the plan silent about it; exit 1 alone). A
    drafter that one model or GPU's release serves is left to the screen, as _check_architectures does."""
    from models import get_model
    from profiles.engine_time.draft_vocabulary import HETEROGENEOUS_FIELD, vocab_refusal
    named = spec.engine.get("version") is not None
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind != "draft_model" or not (named or drafter.heterogeneous_vocab):
            continue
        where, draft = f"{FIELD}.search.drafters.{i}", get_model(drafter.model)
        refusals = [vocab_refusal(framework, version, get_model(model), draft, drafter.heterogeneous_vocab)
                    for model in spec.models for framework, version in dict.fromkeys(releases.values())
                    if version is not None]
        if not refusals or None in refusals:
            continue
        field, message = refusals[0]
        message = message.replace(HETEROGENEOUS_FIELD, f"{where}.heterogeneous_vocab")
        raise ScenarioError(f"{where}.{field.rsplit('.', 1)[1]}", _naming_releases(spec, message, releases))


def _check_eagle3_embedding(spec: PlanConfig, releases: dict[str, tuple[str, str | None]]) -> None:
    """An `eagle3` drafter whose head no planned model's engine release can give an embedding to draft from
    (profiles.engine_time.eagle3_embedding, as simulator.cluster.factory applies it to a run: where plan.engine
    names the version): refused here, naming the drafter entry's head, as every one of its candidates would be
    screened out with the same reason (exit 0 beside other drafters). A head that one model's release serves, or
    that does not fit a model at all (resolve_head's reason), is left to the screen, as _check_architectures does."""
    from models import get_model
    from models.eagle3 import get_eagle3_head, head_for_target
    from profiles.engine_time.eagle3_embedding import head_embedding_refusal
    if spec.engine.get("version") is None:
        return
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind != "eagle3":
            continue
        refusals = []
        for target in map(get_model, spec.models):
            head = get_eagle3_head(drafter.head) if drafter.head else head_for_target(target.name)
            if head is not None and head.target_hidden_size == target.hidden_size:
                refusals += [head_embedding_refusal(framework, version, target, head)
                             for framework, version in dict.fromkeys(releases.values())]
        if refusals and None not in refusals:
            raise ScenarioError(f"{FIELD}.search.drafters.{i}.head", refusals[0][1])


def _check_mtp_draft_lengths(spec: PlanConfig, releases: dict[str, tuple[str, str | None]]) -> None:
    """A gamma of an `mtp` drafter that no planned model's engine release (`releases`: candidate_releases) drafts from
    the modules the model ships (vLLM: at most n_predict on 0.7.3, a multiple of it above n_predict from 0.8.0;
    simulator.cost.mtp.check_draft_length, as a run applies it): refused here, naming the drafter entry's gamma, as
    each of its candidates would be screened out with the same reason (beside the entry's other gammas or other
    drafters the plan ranked the rest, silent about it, exit 0; alone, exit 1). A gamma that one model's or GPU's
    release drafts is left to the screen, as _check_architectures does; models that ship no modules are
    _check_mtp_drafters' and the screen's."""
    from models import get_model
    from profiles.engine_time.mtp_draft_length import release_mtp_gamma_refusal
    shipped = [n for n in (get_model(name).num_mtp_modules for name in spec.models) if n >= 1]
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind != "mtp" or not shipped:
            continue
        for gamma in drafter.gamma:
            refusals = [release_mtp_gamma_refusal(release, gamma, n_predict)
                        for n_predict in shipped for release in dict.fromkeys(releases.values())]
            if None not in refusals:
                raise ScenarioError(f"{FIELD}.search.drafters.{i}.gamma",
                                    _naming_releases(spec, f"gamma {gamma}: {refusals[0]}", releases))


def _check_tree_shapes(spec: PlanConfig, releases: dict[str, tuple[str, str | None]]) -> None:
    """A drafter's tree (speculation kind tree or dynamic_tree) that the engine release plan.engine names does not
    draft with that drafter (profiles.engine_time.tree_shapes.release_tree_refusal, as simulator.cluster.factory.
    check_tree_shape applies it to a run that names its release): refused here, naming the drafter entry's field,
    as each of its candidates would be screened out with the same reason. Where plan.engine names no version the
    tree is draftsim's own shape, as in a run."""
    from profiles.engine_time.tree_shapes import release_tree_refusal
    if spec.engine.get("version") is None:
        return
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind == "none" or drafter.speculation is None:
            continue
        speculation = _sections(spec, i)[1]
        refusals = [release_tree_refusal(release, drafter.kind, speculation)
                    for release in dict.fromkeys(releases.values())]
        if refusals and None not in refusals:
            field, message = refusals[0]
            where = {"cluster.engine.version": f"{FIELD}.engine.version",
                     "drafter.kind": f"{FIELD}.search.drafters.{i}.kind"}.get(
                field, f"{FIELD}.search.drafters.{i}.{field}")
            raise ScenarioError(where, message)


def _check_schedule_policy(spec: PlanConfig, releases: dict[str, tuple[str, str | None]]) -> None:
    """plan.engine.schedule_policy that no candidate's engine release (`releases`: candidate_releases) runs
    (simulator.cluster.factory.schedule_policy: an engine other than SGLang, a policy the release lacks or draftsim
    does not model, a scheduler other than SGLang's prefill-first one): refused here, as every candidate was screened
    out with the same reason (exit 1, outputs written). One GPU's release that runs it leaves the others to the
    screen, as _check_architectures does."""
    from simulator.cluster.factory import schedule_policy
    from simulator.config.engine import EngineConfig
    from simulator.config.serving import SchedulerConfig
    if spec.engine.get("schedule_policy") is None:
        return
    engine = validate_config(EngineConfig, spec.engine, f"{FIELD}.engine")
    scheduler = validate_config(SchedulerConfig, spec.scheduler, f"{FIELD}.scheduler") \
        if "kind" in spec.scheduler else None   # (no kind: the engine's own, SGLang's prefill-first one)
    refusals = []
    for release in dict.fromkeys(releases.values()):
        try:
            schedule_policy(release, engine, scheduler)
        except ScenarioError as exc:
            refusals.append(exc)
            continue
        return
    message = refusals[0].message.replace("cluster.engine.framework", f"{FIELD}.engine.framework")
    raise ScenarioError(f"{FIELD}.engine.schedule_policy", message)


def _check_size(spec: PlanConfig) -> None:
    """Refuse a search space of no candidate (the screen's empty table was a KeyError traceback) or of more
    than MAX_PLAN_CANDIDATES (they are enumerated in memory first: 8 million, max_gpus 4096 disaggregated,
    never finished), counted without enumerating them."""
    count, search = candidate_count(spec), spec.search
    if count > MAX_PLAN_CANDIDATES:
        raise ScenarioError(f"{FIELD}.search", f"the search space holds {count:,} candidates; at most "
                            f"{MAX_PLAN_CANDIDATES:,} are screened in one plan: narrow tp, pp, ep, replicas or "
                            "max_gpus, drafters or deployments")
    if count == 0:
        fewest = min((ep if ep > 1 else tp) * pp for tp in search.tp for pp in search.pp for ep in search.ep)
        why = (f"max_gpus {search.max_gpus} is below the {fewest} GPUs of the smallest replica"
               if search.max_gpus is not None and search.max_gpus < fewest else
               "a disaggregated deployment needs 2 or more replicas (a prefill and a decode pool)")
        raise ScenarioError(f"{FIELD}.search", f"the search space holds no candidate: {why}")


def _check_parallelism(spec: PlanConfig) -> None:
    """Refuse a searched tp, pp or ep value that can split none of the planned models (tp must divide the heads
    and the MLP widths, pp at most the layers: models.spec.validate_parallelism; tp must leave the plan's
    block-quantized dtype whole blocks: models.block_quant; ep > 1 an MoE model's experts evenly:
    models.opgraph.validate_expert_parallelism), before any work. A tp is tried with every searched ep it can
    form a replica with (under EP the routed experts are whole). Before, every candidate of that value was
    screened out with the same reason, and a plan of that value alone said 'no feasible candidate' (exit 1,
    outputs written). A value that splits some planned models but not others is left to the screen, which
    screens those candidates out with the reason (they are neither ranked nor confirmed)."""
    from models import get_model
    from models.block_quant import validate_block_quantization
    from models.opgraph import validate_expert_parallelism
    from models.spec import validate_parallelism
    from models.step import Parallelism
    targets = [get_model(name) for name in spec.models]

    def splits(check, pars: list[Parallelism]) -> str | None:
        """None when one of `pars` splits some planned model, else the first model's reason (without its own
        list of allowed degrees)."""
        reasons = []
        for target in targets:
            for par in pars:
                try:
                    check(target, par)
                    return None
                except ValueError as exc:
                    reasons.append(str(exc).splitlines()[0].split("; allowed:")[0])
        return reasons[0]

    def loads(target, par: Parallelism) -> None:
        validate_parallelism(target, par)
        validate_block_quantization(target, par, spec.dtype)

    def with_eps(n: int) -> list[Parallelism]:
        pars = [Parallelism(n, 1, ep) for ep in sorted(set(spec.search.ep)) if ep == 1 or ep % n == 0]
        return pars or [Parallelism(n, 1)]

    axes = (("tp", 64, loads, with_eps),
            ("pp", 64, validate_parallelism, lambda n: [Parallelism(1, n)]),
            ("ep", 1024, validate_expert_parallelism, lambda n: [Parallelism(1, 1, n)]))
    for name, top, check, make in axes:
        for value in getattr(spec.search, name):
            why = splits(check, make(value))
            if why is None:
                continue
            allowed = [n for n in range(1, top + 1) if splits(check, make(n)) is None]
            contiguous = len(allowed) > 2 and allowed == list(range(allowed[0], allowed[-1] + 1))
            listed = f"{allowed[0]}..{allowed[-1]}" if contiguous else ", ".join(map(str, allowed))
            raise ScenarioError(f"{FIELD}.search.{name}", f"{value} splits none of the planned models "
                                f"({why}); allowed: {listed}")


def _check_dtypes(spec: PlanConfig, base_dir: Path) -> None:
    """Refuse a plan `dtype` or `kv_dtype` that no planned (model, GPU) pair can run, before any work, with the
    first pair's reason (the scenario's own rules: simulator.cluster.factory.check_dtypes, check_expert_dtype —
    nvfp4 weights on GPUs without FP4 tensor cores, mxfp4 on dense models; simulator.cluster.fp8_marlin — fp8 on
    GPUs without FP8 tensor cores under an engine release without FP8 Marlin). Before, every candidate was screened
    out with that reason and the plan said 'no feasible candidate' (exit 1, outputs written)."""
    from models import get_model
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import check_dtypes, check_expert_dtype
    from simulator.cluster.fp8_marlin import check_fp8_marlin, weight_only_fp8
    reasons = []
    for name in spec.models:
        for choice in spec.hardware:
            try:
                hw = get_hardware(choice.id)
                check_dtypes(hw, spec.dtype, spec.kv_dtype, where="plan")
                check_expert_dtype(get_model(name), spec.dtype, hw)
                if weight_only_fp8(hw, spec.dtype):   # (the candidates' release)
                    release = candidate_release(spec, choice.id, base_dir)
                    check_fp8_marlin(release, hw, get_model(name), spec.dtype)
                return
            except ScenarioError as exc:
                reasons.append(exc)
    first = reasons[0]
    field = f"{FIELD}.{first.field.removeprefix('cluster.')}"
    raise ScenarioError(field, f"no planned model and GPU can run it: {first.message}")


def _check_mtp_drafters(spec: PlanConfig) -> None:
    """Refuse an `mtp` drafter when no planned model ships multi-token-prediction modules (or as many as it asks
    for), before any work (simulator.cost.mtp.build_mtp's rule; each candidate was screened out with it)."""
    from models import get_model
    ships = {name: get_model(name).num_mtp_modules for name in spec.models}
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind == "mtp" and max(ships.values()) < max(1, drafter.modules or 1):
            shipped = ", ".join(f"{name} {n}" for name, n in ships.items())
            raise ScenarioError(f"{FIELD}.search.drafters.{i}.kind", f"mtp drafts with the model's multi-token-"
                                f"prediction modules; the planned models ship too few (modules per model: {shipped})")


def _check_eagle3_drafters(spec: PlanConfig) -> None:
    """Refuse an `eagle3` drafter without `head` when no planned model has an EAGLE-3 head published in the
    catalog, before any work (simulator.cost.eagle3.resolve_head's rule; each candidate was screened out with
    it, and a plan of other drafters beside it dropped it silently, exit 0)."""
    from models import get_model
    from models.eagle3 import eagle3_heads, head_for_target
    if any(head_for_target(get_model(name).name) for name in spec.models):
        return
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind == "eagle3" and drafter.head is None:
            raise ScenarioError(f"{FIELD}.search.drafters.{i}.head", f"no EAGLE-3 head in the catalog drafts for "
                                f"the planned models ({', '.join(spec.models)}); allowed: one of "
                                f"{', '.join(sorted(eagle3_heads()))}")


def _check_drafter_steps(spec: PlanConfig) -> None:
    """Refuse a drafter whose speculative step no candidate can run, before any work: a tree, dynamic_tree or
    multidraft speculation under an acceptance without per-rank figures (simulator.speculation.shapes.
    rank_acceptance_error), a γ whose chain step exceeds the plan scheduler's token budget
    (simulator.config.scenario.speculative_step_error). Before, every candidate of it was screened out with
    that reason: dropped silently beside other drafters (exit 0), else 'no feasible candidate' (exit 1, outputs
    written)."""
    from simulator.config.scenario import speculative_step_error
    from simulator.config.serving import SchedulerConfig
    from simulator.speculation.shapes import TREE_SHAPES, rank_acceptance_error
    scheduler = validate_config(SchedulerConfig, spec.scheduler, f"{FIELD}.scheduler")
    for i, drafter in enumerate(spec.search.drafters):
        if drafter.kind == "none":
            continue
        where = f"{FIELD}.search.drafters.{i}"
        acceptance, speculation = _sections(spec, i)
        refusal = rank_acceptance_error(speculation.kind, acceptance.kind) if speculation.kind in TREE_SHAPES else None
        if refusal is not None:
            whose = "its acceptance" if drafter.acceptance is not None else "the plan's acceptance"
            raise ScenarioError(f"{where}.speculation", f"{refusal} from {whose}; allowed: acceptance kind ranked or "
                                                        "pair for this drafter, or speculation kind chain")
        runs = [g for g in range(1, 65) if speculative_step_error(scheduler, speculation.kind, g) is None]
        for gamma in drafter.gamma:
            refusal = speculative_step_error(scheduler, speculation.kind, gamma)
            if refusal is not None:
                allowed = f"gamma {runs[0]}..{runs[-1]}" if runs else f"no gamma: raise {FIELD}.scheduler." \
                                                                      "max_batched_tokens"
                raise ScenarioError(f"{where}.gamma", f"{gamma}: {FIELD}.{refusal}; allowed: {allowed}")


def _check_drafters_once(spec: PlanConfig) -> None:
    """Refuse a drafter that makes a simulation an earlier one makes, comparing the candidates each expands into
    with defaults filled: a draft model by its catalog name (`LLAMA-68M` is llama-68m), each γ (none for a
    speculation shape that does not read it, GAMMA_FREE_SHAPES), `speculation` (default chain) and
    `acceptance` (default the plan's) as a scenario reads them, EAGLE-3's head (default: the one published for
    each planned model) and MTP's modules (default: all the model ships). Before, the copies were screened and
    confirmed twice, and ranked.csv ranked one simulation twice."""
    from models import get_model
    seen: dict = {}   # candidate drafter -> the first drafter entry making it
    for i, drafter in enumerate(spec.search.drafters):
        runs = {}
        acceptance, speculation = _sections(spec, i)
        sections = json.dumps([acceptance.model_dump(mode="json"), speculation.model_dump(mode="json")], sort_keys=True)
        for model in spec.models:
            if drafter.kind == "none":
                runs[(model, "none")] = "no drafter"
                continue
            name = _resolved_drafter(drafter, get_model(model))
            for gamma in drafter.gamma:
                gamma = None if speculation.kind in GAMMA_FREE_SHAPES else gamma
                key = (model, drafter.kind, name, drafter.tp, gamma, sections)
                runs[key] = f"{name} {speculation.kind}" if gamma is None else f"{name} γ{gamma}"
                if len(spec.models) > 1:
                    runs[key] += f" for {model}"
        for key, label in runs.items():
            if key in seen:
                raise ScenarioError(f"{FIELD}.search.drafters.{i}", f"repeats drafters.{seen[key]} ({label}); "
                                                                    "allowed: each drafter and γ once")
        seen.update({key: i for key in runs})


def _resolved_drafter(drafter: DrafterChoiceConfig, target) -> str:
    """What a drafter entry drafts with for the model `target`, defaults filled: a draft model's catalog name,
    EAGLE-3's head (default: the one published for the target; `eagle3` where none is), MTP's modules (default:
    all the target ships)."""
    from models.catalog import catalog
    from models.eagle3 import get_eagle3_head, head_for_target
    if drafter.kind == "draft_model":
        return _as_resolved(drafter.model, catalog())
    if drafter.kind == "eagle3":
        head = get_eagle3_head(drafter.head) if drafter.head else head_for_target(target.name)
        return f"eagle3:{head.name}" if head else "eagle3"
    return f"mtp:{drafter.modules or target.num_mtp_modules}"


def _check_draft_models(spec: PlanConfig) -> None:
    """Refuse a draft model's `tp` that no candidate can run, before any work: one wider than every replica
    searched (a colocated draft model runs on its replica's GPUs: simulator.cost.drafters) or one that cannot
    split the draft model. Before, every candidate of that drafter was screened out with the same reason, and
    a plan of that drafter alone said 'no feasible candidate' (exit 1, outputs written)."""
    from models import get_model
    from models.spec import validate_parallelism
    from models.step import Parallelism
    _check_mtp_drafters(spec)
    search = spec.search
    widest = max((ep if ep > 1 else tp) * pp for tp in search.tp for pp in search.pp for ep in search.ep)
    for i, drafter in enumerate(search.drafters):
        if drafter.kind != "draft_model":
            continue
        where = f"{FIELD}.search.drafters.{i}.tp"
        if drafter.tp > widest:
            raise ScenarioError(where, f"{drafter.tp} exceeds the GPUs of every replica searched (at most {widest}: "
                                       "tp × pp, or ep × pp with expert parallelism); a draft model runs on its "
                                       "replica's GPUs")
        try:
            validate_parallelism(get_model(drafter.model), Parallelism(drafter.tp, 1))
        except ValueError as exc:
            raise ScenarioError(where, str(exc).splitlines()[0].replace(f"parallelism.tp={drafter.tp}",
                                                                         str(drafter.tp), 1)) from None


def _check_workload(spec: PlanConfig, base_dir: Path) -> None:
    """The plan's workload validated as a scenario's, and refused when the requests its screen and every DES
    confirmation draw cannot fit in this machine's memory (simulator.config.host_memory): num_requests 1e9
    was drawn by the screen until the kernel killed the plan."""
    from simulator.config.host_memory import check_workload_memory
    from simulator.config.serving import SchedulerConfig
    from simulator.config.workload import WorkloadConfig
    workload = validate_config(WorkloadConfig, spec.workload, f"{FIELD}.workload")
    block_size = validate_config(SchedulerConfig, spec.scheduler, f"{FIELD}.scheduler").block_size
    check_workload_memory(workload, block_size, prefix=f"{FIELD}.", base_dir=base_dir)


def _check_context(spec: PlanConfig, base_dir: Path, releases: dict[str, tuple[str, str | None]]) -> None:
    """With workload.context_overflow 'error' (the default), refuse a plan whose requests, as every DES
    confirmation draws them (simulator.cluster.build: the scenario seed's workload stream), do not fit a
    planned model's context on a planned GPU: the context its candidates' engine release (`releases`:
    candidate_releases) derives from the model's config, as a run derives it where no cluster.max_model_len is
    given (simulator.core.context.context_and_rule; a plan sets none). Before, a trace or a length distribution
    beyond a model's context was screened, then every confirmation failed ("invalid") and the plan said no
    candidate met the SLOs (exit 1, outputs written); and the limit was max_position_embeddings whatever the
    release, which refused requests the candidates' runs serve (TensorRT-LLM before 1.0 scales a yarn model's
    context by its rope factor: profiles.engine_time.context_length)."""
    from models import get_model
    from simulator.cluster.build import Streams
    from simulator.config.serving import SchedulerConfig
    from simulator.config.workload import WorkloadConfig
    from simulator.core.context import check_least_request, context_and_rule
    from simulator.core.workload import generate_requests
    workload = validate_config(WorkloadConfig, spec.workload, f"{FIELD}.workload")
    if workload.context_overflow != "error":
        return
    block_size = validate_config(SchedulerConfig, spec.scheduler, f"{FIELD}.scheduler").block_size
    limits = []   # (model index, name, limit, where it comes from): one per model and distinct release
    for i, name in enumerate(spec.models):
        model = get_model(name)
        for release in dict.fromkeys(releases.values()):
            try:
                limit, rule = context_and_rule(model, None, release)
            except ScenarioError as exc:   # (a release that cannot derive it: the model's config lacks a key)
                raise ScenarioError(f"{FIELD}.models.{i}", exc.message) from None
            gpus = ", ".join(hw for hw, r in releases.items() if r == release)
            limits.append((i, name, limit, f"the context {release[0]} derives for the candidates on {gpus}: {rule}"))
    for i, name, limit, _ in limits:   # (before sessions are drawn)
        check_least_request(workload.spec(), f"the context of {name} ({FIELD}.models.{i})", limit, base_dir,
                            f"{FIELD}.workload")
    try:
        table = generate_requests(workload.spec(), Streams.from_seed(spec.seed).workload, base_dir,
                                  block_size=block_size)
    except ScenarioError as exc:   # (a trace's errors name the scenario's field, workload.arrival.trace_csv)
        field = exc.field if exc.field.startswith(f"{FIELD}.") else f"{FIELD}.{exc.field}"
        raise ScenarioError(field, exc.message) from None
    total = table.prompt_tokens + table.output_tokens
    for i, name, limit, rule in limits:
        over = total > limit
        if over.any():
            r = int(over.argmax())
            raise ScenarioError(f"{FIELD}.workload", f"request {r} needs {int(total[r])} tokens (prompt "
                                f"{int(table.prompt_tokens[r])} + output {int(table.output_tokens[r])}) but the "
                                f"context of {name} ({FIELD}.models.{i}) is {limit}; set {FIELD}.workload."
                                f"context_overflow: drop or truncate, or plan models with a longer context ({rule})")


class _Acceptance(Strict):   # (the union validated under its own key, so errors read `<where>.acceptance.…`)
    acceptance: AcceptanceConfig


class _Speculation(Strict):
    speculation: SpeculationConfig


def _sections(spec: PlanConfig, i: int) -> tuple:
    """(acceptance, speculation) of drafter `i` as a scenario reads them, defaults filled: its own acceptance
    or the plan's, its speculation or a chain."""
    drafter, where = spec.search.drafters[i], f"{FIELD}.search.drafters.{i}"
    acceptance = validate_config(_Acceptance, {"acceptance": drafter.acceptance}, where) \
        if drafter.acceptance is not None else validate_config(_Acceptance, {"acceptance": spec.acceptance}, FIELD)
    speculation = validate_config(_Speculation, {"speculation": drafter.speculation or {"kind": "chain"}}, where)
    return acceptance.acceptance, speculation.speculation


def _check_sections(spec: PlanConfig) -> None:
    """The scenario sections a plan passes to every candidate (`scheduler`, `acceptance`, each drafter's own
    `acceptance` and `speculation`) validated as a scenario's, before any work: a bad value is the plan's
    error (exit 2), not every candidate's failure."""
    from simulator.config.serving import SchedulerConfig
    validate_config(SchedulerConfig, spec.scheduler, f"{FIELD}.scheduler")
    validate_config(_Acceptance, {"acceptance": spec.acceptance}, FIELD)
    for i in range(len(spec.search.drafters)):
        _sections(spec, i)


def _replica_counts(search: SearchSpaceConfig, per_replica: int):
    """The replica counts searched for replicas of `per_replica` GPUs: the listed ones, else every count
    within max_gpus."""
    return search.replicas or range(1, search.max_gpus // per_replica + 1)


def candidate_count(spec: PlanConfig) -> int:
    """How many candidates `enumerate_candidates` makes, counted without making them."""
    search = spec.search
    choices = sum(len(d.gamma) if d.kind != "none" else 1 for d in search.drafters)
    count = 0
    for tp, pp, ep in itertools.product(search.tp, search.pp, search.ep):
        counts = _replica_counts(search, (ep if ep > 1 else tp) * pp)
        for deployment in search.deployments:   # disaggregated: every prefill/decode split
            count += sum(r - 1 for r in counts) if deployment == "disaggregated" else len(counts)
    return count * len(spec.models) * len(spec.hardware) * choices


def enumerate_candidates(spec: PlanConfig, deployments: tuple[str, ...]) -> list[Candidate]:
    """Every point of the search space (parallelism validity and memory are checked by the screen)."""
    for i, name in enumerate(spec.search.deployments):
        if name not in deployments:
            raise ScenarioError(f"{FIELD}.search.deployments.{i}", f"unknown deployment {name!r}; "
                                f"supported now: {', '.join(deployments)}")
    drafters = [(d.label() if d.kind != "none" else "none", g, d.tp,
                 json.dumps(d.speculation, sort_keys=True) if d.speculation else "",
                 json.dumps(d.block(), sort_keys=True) if d.kind not in ("none", "draft_model")
                 or d.heterogeneous_vocab else "",
                 json.dumps(d.acceptance, sort_keys=True) if d.acceptance else "")
                for d in spec.search.drafters for g in (d.gamma if d.kind != "none" else [0])]
    out = []
    for model, hw, tp, pp, ep, (draft, gamma, dtp, tree, block, acc), deployment in itertools.product(
            spec.models, spec.hardware, spec.search.tp, spec.search.pp, spec.search.ep, drafters,
            spec.search.deployments):
        price = hw.usd_per_gpu_hour or price_per_gpu_hour(hw.id).usd_per_gpu_hour
        counts = _replica_counts(spec.search, (ep if ep > 1 else tp) * pp)
        for replicas in counts:
            if deployment == "disaggregated":  # every prefill/decode split of the replicas
                out += [Candidate(model, hw.id, price, tp, pp, replicas, draft, gamma, dtp, deployment, p, ep, tree,
                                  block, acc) for p in range(1, replicas)]
            else:
                out.append(Candidate(model, hw.id, price, tp, pp, replicas, draft, gamma, dtp, deployment, 0, ep,
                                     tree, block, acc))
    return out
