"""Per-step engine time of a serving framework: what a real engine spends every step besides its GPU
kernels, and how much of it lands on the step's critical path.

Two kinds of time, given the kernels' device time `device_s` (Σ op seconds of the step's draft and target
passes):

* Device-timeline overheads (`gaps_seconds`), paid on the GPU's timeline whatever the host does. How a
  step's passes are launched is the deployment's CUDA-graph policy (`graphs`, profiles.engine_time.graphs:
  mode, capture sizes, padding): a batch is padded up to the next captured size (the caller prices the
  padded slots' kernels, `launch(...).tokens`), then
  - a pass replayed as one full CUDA graph costs `graph_launch_s`;
  - a pass run as piecewise graphs (eager attention between the pieces) costs `piecewise_per_layer_s` per
    layer: graph-piece launches and the eager attention call between them leave the GPU idle;
  - a pass run eagerly (no graph: `cuda_graphs: none`, or a batch beyond the captured sizes) is issued
    kernel by kernel from Python: the host needs `eager_kernel_s` per kernel and `eager_collective_s` per
    collective call (`PassLayout.kernels`, `.collectives`, counted on the op graph), and the GPU, which
    runs the kernels as they arrive, finishes at max(kernel time, issue time). Approximation: the step's
    passes are taken together (max over the step's sums, not per pass); with uniform layers the error is
    at most one layer's imbalance between kernel and issue time;
  - `step_gap_s` per step: the GPU idles between steps even when the engine prepares the next step
    ahead (synchronisation with the host, a residual the overlap does not hide);
  - speculative steps add `spec_step_s` (rejection sampling and its bookkeeping kernels) and
    `spec_per_pass_s` per draft pass (the proposer's per-pass input preparation: small eager kernels
    and metadata rebuilt between draft passes).
* Host work (`host_seconds`): scheduling, input preparation, sampled-token handling and the scheduler's
  update, `step_s + per_seq_s·seqs + per_token_s·tokens` (+ `spec_host_step_s` + `spec_host_per_seq_s`
  · decode seqs when speculating: the proposer's own host work and the speculative bookkeeping, per
  drafter family, `spec_host_by_drafter`), over the step's scheduled sequences and tokens.
  - synchronous engines run it between steps: it is added;
  - engines that prepare step i+1 while step i runs (`overlap`: vLLM's async scheduling, SGLang's
    overlap scheduler, TensorRT-LLM's overlap scheduler) expose only what exceeds the device time.

    wall = device_s + gaps + host                       (synchronous)
    wall = device_s + gaps + max(0, host − device_s − gaps)   (overlapped)

Speculation methods that disable the overlap in a framework (e.g. vLLM's CPU n-gram and draft-model
proposers) are listed per framework (`sync_drafters`); `for_drafter` applies that.
Host time runs at the speed of the deployment's host CPU: every host constant (the host-work terms and the
eager launch costs) is stored as measured on its reference host and multiplied by `host_scale` (that
host's single-thread time over the deployment host's: profiles.engine_time.host) when the engine is
built. Where each constant comes from is in `profiles/data/engine_time/frameworks.yaml` (`sources`) and
`profiles/data/engine_time/SOURCES.md`; none is fitted to a validation run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from profiles.engine_time.graphs import EAGER, FULL, GraphPolicy, Launch


def one_step(value) -> bool:
    """Whether a per-step quantity is one step's (a number, `np.ndim(value) == 0`) rather than one value
    per step (an array); a Python or numpy float, or a Python int (the common calls), without numpy."""
    return isinstance(value, (int, float)) or np.ndim(value) == 0

# The policy of an engine model without CUDA-graph knowledge (a measured engine profile, tests): no graph,
# no padding, and eager launches cost nothing unless eager_kernel_s is set.
NO_GRAPHS = GraphPolicy("none", (), "tokens", False, FULL)


@dataclass(frozen=True)
class PassLayout:
    """The passes of one step of a replica: the proposer's iterations (`draft_passes`; 0 without
    speculation), GPU passes in all (target + draft passes on the GPU), their layers in all, and when run
    eagerly the kernels they launch and the collective calls among them (counted on the op graph:
    simulator.cost.step_cost.ForwardCost.launches)."""

    draft_passes: int
    gpu_passes: int
    layers: int
    kernels: int = 0
    collectives: int = 0


@dataclass(frozen=True)
class EngineTime:
    framework: str
    versions: str                    # the version range the constants describe (human-readable)
    step_s: float
    per_seq_s: float
    per_token_s: float
    overlap: bool
    step_gap_s: float
    graphs: GraphPolicy
    graph_launch_s: float
    piecewise_per_layer_s: float
    spec_step_s: float
    spec_per_pass_s: float
    spec_host_step_s: float
    spec_host_per_seq_s: float
    eager_kernel_s: float = 0.0
    eager_collective_s: float = 0.0
    host_scale: float = 1.0          # the factor already applied to the host constants (profiles.engine_time.host)
    host: str = ""                   # the deployment's host CPU
    version: str = ""                # the release modelled (rules keyed by release read it, e.g. sglang_adaptive)
    sync_drafters: tuple[str, ...] = ()
    sync_trees: bool = False         # tree verification runs synchronously (SGLang 0.5.11-0.5.12: spec v2 chains only)
    spec_host_by_drafter: Mapping[str, tuple[float, float]] = field(default_factory=dict, compare=False)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name.endswith("_s") and not getattr(self, f.name) >= 0.0:
                raise ValueError(f"engine time {self.framework}: {f.name} must be >= 0, got {getattr(self, f.name)!r}")
        if not self.host_scale > 0.0:
            raise ValueError(f"engine time {self.framework}: host_scale must be > 0, got {self.host_scale!r}")

    def with_host_scale(self, factor: float, host: str = "") -> "EngineTime":
        """This engine on a host whose single-thread time is `factor` × the reference host's: every host
        constant (host work, speculative host work, eager launch costs) × factor; device-timeline terms
        unchanged."""
        if not factor > 0.0:
            raise ValueError(f"host scale must be > 0, got {factor!r}")
        scaled = {k: getattr(self, k) * factor for k in HOST_FIELDS}
        return dataclasses.replace(self, **scaled, host_scale=self.host_scale * factor, host=host or self.host,
                                   spec_host_by_drafter={k: (a * factor, b * factor)
                                                         for k, (a, b) in self.spec_host_by_drafter.items()})

    def without_host(self) -> "EngineTime":
        """This engine with no host work per step (scheduling, input preparation, speculative bookkeeping):
        a step whose host work was done ahead for its group (vLLM V0 multi-step). Eager launches and the
        device-timeline terms stay."""
        return dataclasses.replace(self, step_s=0.0, per_seq_s=0.0, per_token_s=0.0, spec_host_step_s=0.0,
                                   spec_host_per_seq_s=0.0, spec_host_by_drafter={})

    def launch(self, prefill_tokens: int, decode_seqs: int, q: int) -> Launch:
        """How a step is launched and over how many (padded) token slots (profiles.engine_time.graphs)."""
        if prefill_tokens == 0:
            return self.graphs.decode(decode_seqs, q)
        return self.graphs.mixed(prefill_tokens + decode_seqs * q)

    def for_drafter(self, drafter_kind: str | None, keep_overlap: bool = False, tree: bool = False) -> "EngineTime":
        """This engine as it runs with `drafter_kind` (None: no speculation), verifying a tree when `tree`: the
        overlap is off for the drafters the framework runs synchronously by default, and for trees where it runs
        them synchronously (`sync_trees`), unless the deployment asked for it (`keep_overlap`, e.g. SGLang's spec
        v2: profiles.engine_time.support checks that the version has it), and the speculative host terms are the
        drafter's (`spec_host_by_drafter`, seconds per step and per decode sequence)."""
        if drafter_kind is None:
            return self
        step, per_seq = self.spec_host_by_drafter.get(drafter_kind, (self.spec_host_step_s, self.spec_host_per_seq_s))
        sync = (drafter_kind in self.sync_drafters or (tree and self.sync_trees)) and not keep_overlap
        return dataclasses.replace(self, overlap=self.overlap and not sync,
                                   spec_host_step_s=step, spec_host_per_seq_s=per_seq)

    def host_seconds(self, prefill_tokens, prefill_seqs, decode_seqs, query_tokens_per_seq: int,
                     draft_passes: int):
        """Host seconds of steps (scalars or arrays of equal shape)."""
        seqs = prefill_seqs + decode_seqs
        tokens = prefill_tokens + decode_seqs * query_tokens_per_seq
        host = self.step_s + self.per_seq_s * seqs + self.per_token_s * tokens
        if draft_passes:
            host = host + self.spec_host_step_s + self.spec_host_per_seq_s * decode_seqs
        return host

    def _launch_gaps(self, kind: str, passes: PassLayout) -> float:
        if kind == FULL:
            return self.graph_launch_s * passes.gpu_passes
        if kind == EAGER:
            return 0.0
        return self.piecewise_per_layer_s * passes.layers

    def issue_seconds(self, passes: PassLayout) -> float:
        """Host seconds to issue the step's passes kernel by kernel (eager launch)."""
        return self.eager_kernel_s * passes.kernels + self.eager_collective_s * passes.collectives

    def gaps_seconds(self, prefill_tokens, decode_seqs, query_tokens_per_seq: int, passes: PassLayout):
        """Device-timeline overheads of steps (see the module docstring), without the eager issue time
        (`wall_seconds` adds it where it exceeds the kernels)."""
        gaps, _ = self._gaps_and_eager(prefill_tokens, decode_seqs, query_tokens_per_seq, passes)
        return gaps

    def _gaps_and_eager(self, prefill_tokens, decode_seqs, q: int, passes: PassLayout):
        if one_step(decode_seqs) and one_step(prefill_tokens):  # one step (the common call)
            kind = self.launch(int(prefill_tokens), int(decode_seqs), q).kind
            gaps = self.step_gap_s + self._launch_gaps(kind, passes)
            eager = kind == EAGER
        else:
            seqs, pre = np.broadcast_arrays(np.asarray(decode_seqs), np.asarray(prefill_tokens))
            kinds = [self.launch(int(p), int(b), q).kind for p, b in zip(pre.ravel(), seqs.ravel())]
            gaps = self.step_gap_s + np.array([self._launch_gaps(k, passes) for k in kinds]).reshape(seqs.shape)
            eager = np.array([k == EAGER for k in kinds]).reshape(seqs.shape)
        if passes.draft_passes:
            gaps = gaps + self.spec_step_s + self.spec_per_pass_s * passes.draft_passes
        return gaps, eager

    def wall_seconds(self, device_s, prefill_tokens, prefill_seqs, decode_seqs, query_tokens_per_seq: int,
                     passes: PassLayout):
        """Wall seconds of steps whose kernels take `device_s`."""
        gaps, eager = self._gaps_and_eager(prefill_tokens, decode_seqs, query_tokens_per_seq, passes)
        busy = device_s + gaps
        issue = self.issue_seconds(passes)
        if issue:  # eager passes finish when both the kernels and their issue are done
            busy = busy + np.where(eager, np.maximum(0.0, issue - device_s), 0.0) if not one_step(busy) else \
                busy + (max(0.0, issue - device_s) if eager else 0.0)
        host = self.host_seconds(prefill_tokens, prefill_seqs, decode_seqs, query_tokens_per_seq,
                                 passes.draft_passes)
        if not self.overlap:
            return busy + host
        return busy + (max(0.0, host - busy) if one_step(busy) else np.maximum(0.0, host - busy))

    def describe(self) -> dict:
        """`engine_time` entry of a run's summary (microseconds)."""
        out = {"framework": self.framework, "versions": self.versions, "overlap": self.overlap,
               "cuda_graphs": self.graphs.describe(), "host": self.host, "host_scale": round(self.host_scale, 6)}
        for f in dataclasses.fields(self):
            if f.name.endswith("_s"):
                out[f.name[:-2] + "_us"] = round(getattr(self, f.name) * 1e6, 3)
        return out


# The host constants: what `with_host_scale` multiplies (profiles.engine_time.host).
HOST_FIELDS = ("step_s", "per_seq_s", "per_token_s", "spec_host_step_s", "spec_host_per_seq_s", "eager_kernel_s",
               "eager_collective_s")
