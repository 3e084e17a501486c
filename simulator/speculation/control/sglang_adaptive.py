"""sglang_adaptive: SGLang's adaptive speculative decoding (`--speculative-adaptive`): the number of draft
steps (`speculative_num_steps`, EAGLE/EAGLE-3 with `speculative_eagle_topk` 1, so a chain of that many
draft tokens) chosen per batch-size slot from an EMA of the accepted lengths.

What SGLang ships (read 2026-11-26; python/sglang/srt/speculative/adaptive_spec_params.py and
adaptive_step_router.py): PR #21599 "[SPEC][1/N] adaptive speculative_num_steps for EAGLE topk=1"
(merged 2026-03-28), spec-v2 support PR #23336, batch-size-aware slots PR #24055 (merged 2026-05); opt-in
(`--speculative-adaptive`, optional `--speculative-adaptive-config` JSON). Only EAGLE/EAGLE3 with topk 1,
no attention DP, no two-batch overlap.
- Slots: the config maps batch-size keys to `candidate_steps` and hysteresis; the default
  (DEFAULT_ADAPTIVE_CONFIG) is, from v0.5.20, {1: [1, 3, 5, 7] (down_hysteresis −0.25), 8: [0, 1, 3], 32: [0, 1], 64: [0]}
  (earlier releases: `default_slots`, keyed by the engine's release; without SGLang engine time the newest),
  with ema_alpha 0.2, update_interval 5, warmup_batches 10, up_hysteresis 0, ceiling_coeff 0.
- Routing (AdaptiveStepRouter.batch_size_key_for_batch): the decode batch size is first padded to the
  smallest CUDA-graph batch size ≥ it (if any), then mapped to the largest slot key ≤ that (the smallest
  key if none). SGLang's CUDA-graph batch sizes under speculation (server_args.py,
  _generate_cuda_graph_batch_sizes): 1…8, 10…32 step 2, 40…64 step 4, 72…256 step 8, 272… step 16, up to
  cuda_graph_max_bs.
- A slot starts at the server's speculative_num_steps if it is a candidate, else at its middle candidate,
  with EMA = steps − 1. After every verify of a batch routed to it, the slot's EMA of the batch's mean
  accepted drafts per request is updated (only while its steps > 0); after warmup_batches batches and then
  every update_interval batches it re-chooses: from 0 steps it probes the next candidate; otherwise it
  steps down while EMA ≤ (prev − 0.5, or 0.5 when prev is 0) + down_hysteresis, and if it did not step
  down, steps up while EMA > current − 0.5 + up_hysteresis.
- The steps of the slot a batch routes to are the draft tokens of every request of that batch; 0 means a
  plain decode step.

Here: the decode batch is the step's decode requests (SGLang runs prefill and decode batches apart);
`drafter.gamma` must be at least the largest candidate (the drafter runs the deepest tier); `initial_steps`
is speculative_num_steps (default: drafter.gamma). A step's acceptances are folded in at the replica's
next step (the engine does so right after the verify, before the next batch is formed: the same order).
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from simulator.speculation.control.base import ControlPolicy

DEFAULT_SLOTS = {1: {"candidate_steps": [1, 3, 5, 7], "up_hysteresis": 0.0, "down_hysteresis": -0.25},
                 8: {"candidate_steps": [0, 1, 3], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
                 32: {"candidate_steps": [0, 1], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
                 64: {"candidate_steps": [0], "up_hysteresis": 0.0, "down_hysteresis": 0.0}}


def default_slots(version: str | None) -> dict:
    """SGLang's DEFAULT_ADAPTIVE_CONFIG at release `version` (None or "": the newest modelled), read in the
    PyPI releases (speculative/adaptive_spec_params.py): v0.5.13 {1: [1, 3, 7], 8: [1, 3], 32: [1]};
    v0.5.14 - v0.5.19 {1: [1, 3, 7], 8: [0, 1, 3], 32: [0, 1], 64: [0]}; from v0.5.20 slot 1 is [1, 3, 5, 7]
    (DEFAULT_SLOTS). Before v0.5.13 there are no batch-size slots (profiles.engine_time.support refuses the
    policy there)."""
    from profiles.measured.source import version_key
    if not version or not version_key(version) < version_key("0.5.20"):
        return DEFAULT_SLOTS
    slots = {k: dict(v, candidate_steps=list(v["candidate_steps"])) for k, v in DEFAULT_SLOTS.items()}
    slots[1]["candidate_steps"] = [1, 3, 7]
    if version_key(version) < version_key("0.5.14"):
        slots = {1: slots[1], 8: dict(slots[8], candidate_steps=[1, 3]), 32: dict(slots[32], candidate_steps=[1])}
    return slots


def spec_cuda_graph_batch_sizes(max_bs: int) -> list[int]:
    sizes = (list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4)) + list(range(72, 257, 8))
             + list(range(272, max_bs + 1, 16)))
    return [b for b in sizes if b <= max_bs]


class Slot:
    """One batch-size slot's EMA state (SGLang's AdaptiveStepSlot, module docstring)."""

    def __init__(self, initial_steps: int, candidates, ema_alpha: float, update_interval: int,
                 warmup_batches: int, up_hysteresis: float, down_hysteresis: float, ceiling_coeff: float):
        self.candidates = sorted(set(int(c) for c in candidates))
        self.alpha, self.interval, self.warmup = ema_alpha, update_interval, warmup_batches
        self.up, self.down, self.ceiling = up_hysteresis, down_hysteresis, ceiling_coeff
        self.steps = initial_steps if initial_steps in self.candidates else self.candidates[len(self.candidates) // 2]
        self.ema = float(self.steps - 1)
        self.batches = 0

    def update(self, accepted_per_request) -> None:
        if not len(accepted_per_request):
            return
        if self.steps > 0:
            self.ema = (1 - self.alpha) * self.ema + self.alpha * float(np.mean(accepted_per_request))
        self.batches += 1
        if self.batches <= self.warmup or (self.batches - self.warmup) % self.interval:
            return
        self._recompute()

    def _recompute(self) -> None:
        c, old = self.candidates, self.steps
        i = old_i = c.index(old)
        if old == 0:
            i = min(i + 1, len(c) - 1)
            if c[i] > 0 and self.ema < 0:
                self.ema = float(c[i] - 1)
            self.steps = c[i]
            return
        while i > 0:
            prev = c[i - 1]
            if self.ema <= (0.5 if prev == 0 else prev - 0.5) + self.down:
                i -= 1
            else:
                break
        if i >= old_i:
            while i < len(c) - 1 and self.ema > c[i] - 0.5 + self.up:
                i += 1
        if self.ceiling > 0:
            cap = max(1, math.ceil(self.ema * self.ceiling))
            if c[i] > cap and c[i] <= old:
                while i > 0 and c[i] > cap:
                    i -= 1
        self.steps = c[i]


def _engine_version(cost) -> str | None:
    """The SGLang release the replica's engine models (None: no SGLang engine time, so the newest rules)."""
    engine = getattr(cost, "engine", None)
    return engine.version if engine is not None and engine.framework == "sglang" else None


class SglangAdaptive(ControlPolicy):
    chain_only = True
    needs_gamma = True

    def __init__(self, params, spec, gamma: int, cost):
        super().__init__(params, spec, gamma, cost)
        self.slot_cfg = {int(k): (v.model_dump(exclude_none=True) if hasattr(v, "model_dump") else dict(v))
                         for k, v in (params.slots or default_slots(_engine_version(cost))).items()}
        deepest = max(max(v["candidate_steps"]) for v in self.slot_cfg.values())
        if deepest > gamma:   # (the slots as the scenario gave them, or the release's defaults: say which)
            from simulator.errors import ScenarioError
            version = _engine_version(cost)
            release = f"sglang {version}'s" if version else "the newest SGLang release modelled's"
            source = "policy.slots" if params.slots else f"not given: {release} DEFAULT_ADAPTIVE_CONFIG"
            raise ScenarioError("drafter.gamma", f"policy sglang_adaptive's slots ({source}) reach {deepest} draft "
                                f"steps; allowed: drafter.gamma >= {deepest}, or policy.slots whose candidate_steps "
                                f"are at most {gamma}")
        self.keys = sorted(self.slot_cfg)
        self.graph_bs = spec_cuda_graph_batch_sizes(params.cuda_graph_max_bs)
        self.initial = gamma if params.initial_steps is None else params.initial_steps
        self._slots: dict[int, dict[int, Slot]] = {}
        self._pending: dict[int, tuple] = {}

    def slot_key(self, batch: int) -> int:
        g = bisect.bisect_left(self.graph_bs, batch)
        padded = self.graph_bs[g] if g < len(self.graph_bs) else batch
        return self.keys[max(0, bisect.bisect_right(self.keys, padded) - 1)]

    def _slots_of(self, rep) -> dict:
        slots = self._slots.get(id(rep))
        if slots is None:
            p = self.params
            slots = self._slots[id(rep)] = {
                k: Slot(self.initial, v["candidate_steps"], v.get("ema_alpha", p.ema_alpha),
                        v.get("update_interval", p.update_interval), v.get("warmup_batches", p.warmup_batches),
                        v.get("up_hysteresis", 0.0), v.get("down_hysteresis", -0.25), v.get("ceiling_coeff", 0.0))
                for k, v in self.slot_cfg.items()}
        return slots

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        slots = self._slots_of(rep)
        pending = self._pending.pop(id(rep), None)
        if pending is not None:
            prev_ids, before, key = pending
            slots[key].update(rep.s.accepted[prev_ids] - before)
        key = self.slot_key(len(ids))
        self._pending[id(rep)] = (ids.copy(), rep.s.accepted[ids].copy(), key)
        return np.full(len(ids), slots[key].steps, dtype=np.int64)
