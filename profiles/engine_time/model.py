"""Per-step engine time of a serving framework: what a real engine spends every step besides its GPU
kernels, and how much of it lands on the step's critical path.

Two kinds of time, given the kernels' device time `device_s` (Σ op seconds of the step's draft and target
passes):

* Device-timeline overheads (`gaps_seconds`), paid on the GPU's timeline whatever the host does:
  - `step_gap_s` per step: the GPU idles between steps even when the engine prepares the next step
    ahead (synchronisation with the host, a residual the overlap does not hide);
  - a pass replayed as one full CUDA graph (decode-only steps of at most `graph_max_tokens` tokens and
    `graph_max_seqs` sequences) costs `graph_launch_s`;
  - any other pass (prefill and mixed steps run piecewise graphs with eager attention between the
    pieces, or eagerly above the capture size) costs `piecewise_per_layer_s` per layer: graph-piece
    launches and the eager attention call between them leave the GPU idle;
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
Where each constant comes from is in `profiles/data/engine_time/frameworks.yaml` (`sources`) and
`profiles/data/engine_time/SOURCES.md`; none is fitted to a validation run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np


@dataclass(frozen=True)
class PassLayout:
    """The passes of one step of a replica: the proposer's iterations (`draft_passes`; 0 without
    speculation), GPU passes in all (target + draft passes on the GPU) and their layers in all."""

    draft_passes: int
    gpu_passes: int
    layers: int


@dataclass(frozen=True)
class EngineTime:
    framework: str
    versions: str                    # the version range the constants describe (human-readable)
    step_s: float
    per_seq_s: float
    per_token_s: float
    overlap: bool
    step_gap_s: float
    graph_max_tokens: int
    graph_max_seqs: int
    graph_launch_s: float
    piecewise_per_layer_s: float
    spec_step_s: float
    spec_per_pass_s: float
    spec_host_step_s: float
    spec_host_per_seq_s: float
    sync_drafters: tuple[str, ...] = ()
    spec_host_by_drafter: Mapping[str, tuple[float, float]] = field(default_factory=dict, compare=False)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name.endswith("_s") and not getattr(self, f.name) >= 0.0:
                raise ValueError(f"engine time {self.framework}: {f.name} must be >= 0, got {getattr(self, f.name)!r}")
        if self.graph_max_tokens < 0 or self.graph_max_seqs < 0:
            raise ValueError(f"engine time {self.framework}: graph_max_tokens and graph_max_seqs must be >= 0")

    def for_drafter(self, drafter_kind: str | None) -> "EngineTime":
        """This engine as it runs with `drafter_kind` (None: no speculation): the overlap is off for
        the drafters the framework runs synchronously, and the speculative host terms are the drafter's
        (`spec_host_by_drafter`, seconds per step and per decode sequence)."""
        if drafter_kind is None:
            return self
        step, per_seq = self.spec_host_by_drafter.get(drafter_kind, (self.spec_host_step_s, self.spec_host_per_seq_s))
        return dataclasses.replace(self, overlap=self.overlap and drafter_kind not in self.sync_drafters,
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

    def gaps_seconds(self, prefill_tokens, decode_seqs, query_tokens_per_seq: int, passes: PassLayout):
        """Device-timeline overheads of steps (see the module docstring)."""
        tokens = prefill_tokens + decode_seqs * query_tokens_per_seq
        full, piecewise = self.graph_launch_s * passes.gpu_passes, self.piecewise_per_layer_s * passes.layers
        if np.ndim(tokens) == 0:  # one step (the common scalar call): no numpy
            graph = prefill_tokens == 0 and tokens <= self.graph_max_tokens and decode_seqs <= self.graph_max_seqs
            gaps = self.step_gap_s + (full if graph else piecewise)
        else:
            graph = ((np.asarray(prefill_tokens) == 0) & (np.asarray(tokens) <= self.graph_max_tokens)
                     & (np.asarray(decode_seqs) <= self.graph_max_seqs))
            gaps = self.step_gap_s + np.where(graph, full, piecewise)
        if passes.draft_passes:
            gaps = gaps + self.spec_step_s + self.spec_per_pass_s * passes.draft_passes
        return gaps

    def wall_seconds(self, device_s, prefill_tokens, prefill_seqs, decode_seqs, query_tokens_per_seq: int,
                     passes: PassLayout):
        """Wall seconds of steps whose kernels take `device_s`."""
        busy = device_s + self.gaps_seconds(prefill_tokens, decode_seqs, query_tokens_per_seq, passes)
        host = self.host_seconds(prefill_tokens, prefill_seqs, decode_seqs, query_tokens_per_seq,
                                 passes.draft_passes)
        if not self.overlap:
            return busy + host
        return busy + (max(0.0, host - busy) if np.ndim(busy) == 0 else np.maximum(0.0, host - busy))

    def describe(self) -> dict:
        """`engine_time` entry of a run's summary (microseconds)."""
        out = {"framework": self.framework, "versions": self.versions, "overlap": self.overlap,
               "graph_max_tokens": self.graph_max_tokens, "graph_max_seqs": self.graph_max_seqs}
        for f in dataclasses.fields(self):
            if f.name.endswith("_s"):
                out[f.name[:-2] + "_us"] = round(getattr(self, f.name) * 1e6, 3)
        return out
