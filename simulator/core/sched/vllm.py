"""`scheduler.kind: vllm` — prefill-first continuous batching (vLLM V0's default): if any waiting request can
be admitted, the step prefills the admitted ones (FCFS, up to `max_batched_tokens`; a lone prompt longer
than the budget is admitted alone, whole; at most `limits.prefill_requests` of them where set: SGLang's
prefill_only_one_req), else it decodes every running request."""
from __future__ import annotations

from simulator.core.sched import BatchLimits, Prefills, StepPlan, grow_decodes, head_admissible, plain_head_admissible


class Vllm:
    def __init__(self, limits: BatchLimits):
        self.limits = limits

    def plan(self, view, now_s: float) -> StepPlan:
        prefills = Prefills()
        room = self.limits.max_batched_tokens
        admissible = plain_head_admissible if getattr(view, "plain_kv", False) else head_admissible
        most = self.limits.prefill_requests
        while (most is None or len(prefills.ids) < most) \
                and admissible(view, room if prefills.ids else max(room, 1), len(prefills.ids)):
            r = view.admit_head(now_s)
            if view.decoding(r):   # swapped back in: decodes from the next decode step
                continue
            room -= prefills.add(view, r)
        if prefills.ids:
            return prefills.plan(view, ())
        return prefills.plan(view, grow_decodes(view, list(view.running)))

    def admission_room(self, view) -> int:
        return max(self.limits.max_batched_tokens, 1)

    def admissible(self, view, token_room: int) -> bool:
        if getattr(view, "plain_kv", False):
            return plain_head_admissible(view, token_room, 0)
        return head_admissible(view, token_room, 0)
