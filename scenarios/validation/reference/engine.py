"""The reference serving engine: the simulator's own scheduler driving real torch draft and target models.

What is real here: every step executes the draft model's γ forward passes and the target's verification
pass (`models.torch_impl.fused.FusedDecoder`, the profiled kernels) over a slot-based KV cache, with the
batch composition a continuous-batching server would run, and its wall time is measured.

What is shared with the simulator, by construction, so that the two step sequences can be compared one to
one:
- scheduling: the engine builds the scenario with `simulator.cluster.build.build` and asks the same `Replica`
  (`plan_step` / `apply_step`) which requests to admit, prefill (and in which chunks), decode or preempt —
  same admission, same step composition, same KV block accounting, same preemption by recompute;
- acceptance, *forced*: the accepted length τ of request r's k-th speculative step is the simulator's draw,
  `ChainAcceptance.tau(r, k)` (counter-based uniforms of the scenario's seed). The engine still computes
  the draft tokens and the target's verification logits and argmax; it then emits the first τ draft tokens
  plus the target's token at position τ (the bonus token), and rolls both KV caches back accordingly.

Speculative step, per decode request with ctx cached tokens (the last emitted token is not cached yet):
draft passes j = 1…γ feed the last emitted token, then d1…d(γ−1), one token per pass; the target pass
verifies q = γ+1 tokens (last emitted + d1…dγ) at positions ctx…ctx+γ. Afterwards the target cache keeps
ctx+τ+1 positions and the draft cache min(ctx+τ+1, ctx+γ): when all γ drafts were accepted the draft never
saw dγ, so its next first pass ingests two tokens for that request (as a 2-token chunk; the simulator does
not price that one extra draft token — its error shows up in validation).

Token ids are fed to each model modulo its vocabulary (random-weight draft and target may have different
vocabularies; with forced acceptance the ids only need to be valid).

Arrivals: requests enter the waiting queue when the wall clock since the start passes their arrival_s
(an offline workload, all at 0, is queued at once). The step timeline tiles: a step starts where the
previous one ended (or at an arrival after idling), so its duration includes the scheduler's own work.
"""
from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from models.torch_impl.fused import (TORCH_DTYPES, DecodeGroup, FusedDecoder, PrefillChunk, config_from_spec,
                                      new_op_seconds)
from profiles.profiler.table import cpu_model
from simulator.cluster.build import build
from simulator.results.metrics import build_requests_frame, build_steps_frame
from simulator.config.scenario import LatencyConfig, Scenario
from simulator.core.state import DROP_EXCEEDS_KV
from simulator.cost.step_cost import Cost, StepCost

EXTRA_STEP_COLUMNS = ("plan_s", "draft_wall_s", "target_wall_s", "accept_s", "draft_lag_tokens", "prefill_attn_pairs")
_INT_COLUMNS = ("draft_lag_tokens", "prefill_attn_pairs")


@dataclass(frozen=True)
class ReferenceConfig:
    """device: "cpu" or "cuda"; threads: torch.set_num_threads (recorded); weights_seed: random weights;
    warmup: untimed forward passes before the run; op_breakdown: time every kernel call (adds a clock
    read per kernel, and a synchronize per kernel on CUDA) and report per-step seconds by op kind."""

    device: str = "cpu"
    threads: int = 2
    weights_seed: int = 0
    warmup: bool = True
    op_breakdown: bool = False

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be an integer >= 1, got {self.threads!r}")


@dataclass
class ReferenceResult:
    requests: pd.DataFrame          # simulator request columns (ttft_s, tpot_s, e2e_s, …), measured
    steps: pd.DataFrame             # simulator step columns, measured, plus EXTRA_STEP_COLUMNS (+ op_* columns)
    meta: dict                      # threads, torch version, device, models, load average, wall time
    tokens: list[list[int]] = field(repr=False, default_factory=list)   # prompt + output ids per request


def _reference_scenario(scenario: Scenario) -> Scenario:
    """The scenario with the roofline latency model: the engine only uses the build's scheduler and op
    graph (FLOPs/bytes for the step log), never its predicted seconds."""
    cluster = scenario.cluster.model_copy(update={"latency": LatencyConfig(source="roofline")})
    return scenario.model_copy(update={"cluster": cluster})


class ReferenceEngine:
    def __init__(self, scenario: Scenario, base_dir: str | Path, config: ReferenceConfig = ReferenceConfig()):
        if config.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("device 'cuda' requested but torch.cuda.is_available() is False")
        if scenario.cluster.replicas != 1:
            raise ValueError(f"cluster.replicas must be 1 for the reference engine, got {scenario.cluster.replicas}")
        if scenario.cluster.parallelism.tp != 1 or scenario.cluster.parallelism.pp != 1:
            raise ValueError("cluster.parallelism must be tp=1, pp=1 for the reference engine")
        if scenario.cluster.dtype not in TORCH_DTYPES:
            raise ValueError(f"cluster.dtype must be one of {', '.join(TORCH_DTYPES)} for the reference engine, "
                             f"got {scenario.cluster.dtype!r}")
        self.config = config
        torch.set_num_threads(config.threads)
        self.scenario = scenario
        self.built = build(_reference_scenario(scenario), Path(base_dir))
        self.rep = self.built.replicas[0]
        self.s = self.built.state
        self.device = torch.device(config.device)
        dtype = TORCH_DTYPES[scenario.cluster.dtype]
        s = self.s
        self.q = self.rep.q
        max_ctx = int((s.prompt + s.output).max()) + self.q + 1 if s.n else 1
        self.target = FusedDecoder.random(config_from_spec(self.built.target, max_ctx), config.weights_seed,
                                          dtype, self.device)
        self.draft = None
        if self.built.draft is not None:
            self.draft = FusedDecoder.random(config_from_spec(self.built.draft, max_ctx), config.weights_seed + 1,
                                             dtype, self.device)
        slots = max(1, min(self.rep.limits.max_batch_size, s.n))
        for model in self._models():
            model.allocate_cache(slots, max_ctx)
        self.free_slots = list(range(slots - 1, -1, -1))
        self.slot_of: dict[int, int] = {}
        self.draft_len = np.zeros(s.n, dtype=np.int64)      # draft-cache positions valid per request
        vocab = self.built.target.vocab_size
        self.tokens = [np.random.default_rng([scenario.seed, r]).integers(0, vocab, int(s.prompt[r])).tolist()
                       for r in range(s.n)]
        self.max_ctx = max_ctx

    def _models(self) -> list[FusedDecoder]:
        return [m for m in (self.target, self.draft) if m is not None]

    def _clock(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def _ids(self, model: FusedDecoder, values) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int64) % model.cfg.vocab_size

    # ---- warm-up -------------------------------------------------------------------------------------
    def _warmup(self) -> None:
        """Untimed passes of every model over a prefill chunk and full-width decode groups, so that
        allocator pools and kernel code paths are warm before the first timed step."""
        slots = len(self.free_slots)
        chunk = max(1, min(64, self.max_ctx - self.q - 1))
        with torch.inference_mode():
            for model in self._models():
                ids = self._ids(model, list(range(chunk)))
                for _ in range(2):
                    model.forward([PrefillChunk(ids, 0, 0)], None)
                    for q in sorted({1, self.q}):
                        group = torch.zeros(slots, q, dtype=torch.int64)
                        model.forward([], DecodeGroup(group, list(range(slots)), [chunk] * slots))

    # ---- the serving loop --------------------------------------------------------------------------
    def run(self) -> ReferenceResult:
        torch.set_num_threads(self.config.threads)
        load_start = [round(x, 2) for x in os.getloadavg()]
        if self.config.warmup:
            self._warmup()
        s, rep = self.s, self.rep
        extra: list[tuple] = []
        plans = []
        op_rows: list[dict[str, float]] = []
        gc.collect()
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with torch.inference_mode():
                t0 = self._clock()
                prev_end, next_r, done, finished = 0.0, 0, 0, []
                while done < s.n:
                    now = self._clock() - t0
                    while next_r < s.n and s.arrival_s[next_r] <= now:
                        done += self._route(next_r)
                        next_r += 1
                    if not rep.has_work():
                        if next_r < s.n:
                            time.sleep(max(0.0, float(s.arrival_s[next_r]) - now))
                            prev_end = None
                        continue
                    start = now if prev_end is None else prev_end
                    plan = rep.plan_step(start)
                    if plan.empty:
                        raise RuntimeError("the scheduler formed an empty step with work pending")
                    plan_s = self._clock() - t0 - now
                    for model in self._models():
                        model.op_seconds = new_op_seconds() if self.config.op_breakdown else None
                    draft_s, target_s, accept_s, lag, apply = self._execute(plan)
                    end = self._clock() - t0
                    rep.apply_step(plan, start, end, StepCost(Cost(draft_s, 0.0, 0.0), Cost(target_s, 0.0, 0.0)), finished)
                    apply(finished)
                    done += len(finished)
                    finished.clear()
                    extra.append((plan_s, draft_s, target_s, accept_s, lag, plan.prefill_attn_pairs))
                    plans.append(plan)
                    if self.config.op_breakdown:
                        op_rows.append(self._op_row())
                    prev_end = end
                wall_s = self._clock() - t0
        finally:
            if gc_was_enabled:
                gc.enable()
        return self._result(extra, plans, op_rows, wall_s, load_start)

    def _route(self, r: int) -> int:
        """Queue request r (the simulator's rule: dropped when prompt + output + q cannot fit in KV)."""
        s, rep = self.s, self.rep
        if not rep.fits(r):
            s.dropped[r] = True
            s.drop_reason[r] = DROP_EXCEEDS_KV
            return 1
        s.replica[r] = 0
        rep.waiting.append(r)
        return 0

    def _sync_slots(self, plan) -> None:
        """Free the slots of requests the scheduler preempted; give newly admitted ones a slot."""
        running = set(self.rep.running)
        for r in [r for r in self.slot_of if r not in running]:
            self.free_slots.append(self.slot_of.pop(r))
        for r in plan.prefill_ids:
            if r not in self.slot_of:
                self.slot_of[r] = self.free_slots.pop()
            if self.s.prefilled[r] == 0:
                self.draft_len[r] = 0

    def _execute(self, plan):
        """Run the step's passes. Returns (draft seconds, target seconds, acceptance seconds, draft lag
        tokens, apply) where apply(finished) updates caches and tokens after the scheduler's apply_step."""
        s, rep = self.s, self.rep
        self._sync_slots(plan)
        prefill = [(r, c, int(s.prefilled[r])) for r, c in zip(plan.prefill_ids, plan.prefill_chunks)]
        dec = [int(r) for r in plan.decode_ids]
        ctx = [int(s.ctx[r]) for r in dec]
        for r, c in zip(dec, ctx):
            if len(self.tokens[r]) != c + 1:
                raise RuntimeError(f"request {r}: {len(self.tokens[r])} tokens but {c} cached")
        t0 = self._clock()
        drafts, lag = self._draft_passes(prefill, dec, ctx) if self.draft is not None else ([[] for _ in dec], 0)
        t1 = self._clock()
        chunks = [PrefillChunk(self._ids(self.target, self.tokens[r][p:p + c]), self.slot_of[r], p)
                  for r, c, p in prefill]
        group = None
        if dec:
            ids = self._ids(self.target, [[self.tokens[r][c]] + d for r, c, d in zip(dec, ctx, drafts)])
            group = DecodeGroup(ids, [self.slot_of[r] for r in dec], ctx)
        out = self.target.forward(chunks, group).tolist()
        t2 = self._clock()
        new_tokens: dict[int, list[int]] = {}
        for i, (r, c, p) in enumerate(prefill):
            if p + c >= s.prefill_target[r]:
                new_tokens[r] = [out[i]]
        if dec:
            tau = self._forced_tau(np.asarray(dec))
            base = len(prefill)
            for b, r in enumerate(dec):
                verified = out[base + b * self.q: base + (b + 1) * self.q]
                accepted = drafts[b][:tau[b]] + [verified[tau[b]]]
                new_tokens[r] = accepted[:int(min(tau[b] + 1, s.output[r] - s.emitted[r]))]
        t3 = self._clock()

        def apply(finished: list[int]) -> None:
            for r, c, p in prefill:
                self.draft_len[r] = p + c
            for r, c in zip(dec, ctx):
                self.draft_len[r] = min(c + len(new_tokens[r]), c + rep.depth)
            for r, toks in new_tokens.items():
                self.tokens[r].extend(toks)
            for r in list(new_tokens) + [r for r, _, _ in prefill]:
                if len(self.tokens[r]) != s.prompt[r] + s.emitted[r]:
                    raise RuntimeError(f"request {r}: token list and scheduler disagree on emitted tokens")
            for r, c in zip(dec, ctx):
                if s.ctx[r] != c + len(new_tokens[r]):
                    raise RuntimeError(f"request {r}: forced acceptance and scheduler disagree")
            for r in finished:
                if r in self.slot_of:
                    self.free_slots.append(self.slot_of.pop(r))

        return t1 - t0, t2 - t1, t3 - t2, lag, apply

    def _forced_tau(self, ids: np.ndarray) -> np.ndarray:
        """τ per decode request: the simulator's counter-based draw for (request, its k-th decode step)."""
        acc = self.rep.acceptance
        if acc is None:
            return np.zeros(len(ids), dtype=np.int64)
        return acc.tau(ids, self.s.decode_steps[ids])

    def _draft_passes(self, prefill, dec, ctx) -> tuple[list[list[int]], int]:
        """γ draft passes; the first also prefills the step's prompt chunks. Returns γ draft tokens per
        decode request and the number of lagging tokens the first pass ingested (see module docstring)."""
        draft, gamma = self.draft, self.rep.depth
        chunks = [PrefillChunk(self._ids(draft, self.tokens[r][p:p + c]), self.slot_of[r], p)
                  for r, c, p in prefill]
        lagged = [b for b, (r, c) in enumerate(zip(dec, ctx)) if self.draft_len[r] < c]
        plain = [b for b, (r, c) in enumerate(zip(dec, ctx)) if self.draft_len[r] >= c]
        for b in lagged:
            r, c = dec[b], ctx[b]
            if self.draft_len[r] != c - 1:
                raise RuntimeError(f"request {r}: draft cache lags by {c - self.draft_len[r]} tokens")
            chunks.append(PrefillChunk(self._ids(draft, self.tokens[r][c - 1:c + 1]), self.slot_of[dec[b]], c - 1))
        group = None
        if plain:
            group = DecodeGroup(self._ids(draft, [[self.tokens[dec[b]][ctx[b]]] for b in plain]),
                                [self.slot_of[dec[b]] for b in plain], [ctx[b] for b in plain])
        out = draft.forward(chunks, group).tolist()
        if not dec:
            return [], 0
        current = [0] * len(dec)
        for j, b in enumerate(lagged):
            current[b] = out[len(prefill) + j]
        for j, b in enumerate(plain):
            current[b] = out[len(prefill) + len(lagged) + j]
        drafts = [[t] for t in current]
        slots = [self.slot_of[r] for r in dec]
        for j in range(1, gamma):
            ids = self._ids(draft, [[t] for t in current])
            current = draft.forward([], DecodeGroup(ids, slots, [c + j for c in ctx])).tolist()
            for b, t in enumerate(current):
                drafts[b].append(t)
        return drafts, len(lagged)

    # ---- records -----------------------------------------------------------------------------------
    def _op_row(self) -> dict[str, float]:
        row = {}
        for name, model in (("target", self.target), ("draft", self.draft)):
            if model is not None and model.op_seconds is not None:
                for kind, seconds in model.op_seconds.items():
                    row[f"op_{name}_{kind}_s"] = seconds
        return row

    def _result(self, extra, plans, op_rows, wall_s: float, load_start) -> ReferenceResult:
        steps = build_steps_frame(self.built.log.columns())
        for i, name in enumerate(EXTRA_STEP_COLUMNS):
            steps[name] = np.array([row[i] for row in extra], dtype=np.int64 if name in _INT_COLUMNS else float)
        costs = [self.rep.step_costs(plan) for plan in plans]
        steps["flops"] = np.array([c.draft.flops + c.target.flops for c in costs], dtype=float)
        steps["bytes"] = np.array([c.draft.bytes + c.target.bytes for c in costs], dtype=float)
        if op_rows:
            ops = pd.DataFrame(op_rows).fillna(0.0)
            for name in sorted(ops.columns):
                steps[name] = ops[name].to_numpy()
        requests = build_requests_frame(self.s.columns(), self.scenario.slo.spec())
        built = self.built
        meta = {
            "device": self.config.device,
            "device_name": (torch.cuda.get_device_name(self.device) if self.device.type == "cuda"
                            else cpu_model()),
            "torch_version": torch.__version__,
            "threads": torch.get_num_threads(),
            "dtype": self.scenario.cluster.dtype,
            "target_model": built.target.name,
            "draft_model": built.draft.name if built.draft is not None else None,
            "gamma": self.rep.depth,
            "weights": f"random normal, seed {self.config.weights_seed} (draft {self.config.weights_seed + 1})",
            "scheduler": self.scenario.scheduler.kind,
            "acceptance_seed": int(self.rep.acceptance.seed) if self.rep.acceptance is not None else None,
            "wall_s": wall_s,
            "steps": len(steps),
            "load_average_start": load_start,
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "op_breakdown": self.config.op_breakdown,
        }
        return ReferenceResult(requests, steps, meta, [list(t) for t in self.tokens])


def run_reference(scenario: Scenario, base_dir: str | Path, config: ReferenceConfig = ReferenceConfig()
                  ) -> ReferenceResult:
    """Build the engine for `scenario` and run it once."""
    return ReferenceEngine(scenario, base_dir, config).run()
