"""`scheduler.kind: vllm` — prefill-first continuous batching (vLLM V0's default; SGLang's, prefill batches apart
from decode batches): if any waiting request can be admitted, the step prefills the admitted ones (FCFS, up to
`max_batched_tokens`; a lone prompt longer than the budget is admitted alone, whole; at most
`limits.prefill_requests` of them where set: SGLang's prefill_only_one_req), else it decodes every running request.

With `limits.prefill_input_tokens` set (SGLang with chunked prefill: simulator.cluster.factory.engine_batch_rules)
prompts are chunked as SGLang's PrefillAdder chunks them (managers/schedule_policy.py, read in v0.4.2, v0.4.5 and
v0.5.9): the request being chunked goes first with the next chunk of at most `max_batched_tokens`
(chunked_prefill_size) tokens (`add_chunked_req`), then waiting requests FCFS, each whole while it fits the tokens
left, else truncated to them (`add_one_req`: `trunc_len = self.rem_chunk_tokens`), which ends the step; a prompt
of at least `prefill_input_tokens` (max_prefill_tokens) less the step's tokens is not started behind others
(`real_input_tokens >= self.rem_input_tokens and len(self.can_run_list) != 0`). A step with prompt chunks decodes
nobody (enable_mixed_chunk off). Approximations, named: SGLang rounds a truncated chunk down to its page size
(0.5.x) and compares with `>` rather than `>=` in 0.4.x; neither is modelled."""
from __future__ import annotations

from simulator.core.sched import BatchLimits, Prefills, StepPlan, grow_decodes, head_admissible, plain_head_admissible


class Vllm:
    def __init__(self, limits: BatchLimits):
        self.limits = limits

    def plan(self, view, now_s: float) -> StepPlan:
        prefills = Prefills()
        limits = self.limits
        room = limits.max_batched_tokens
        chunking = limits.prefill_input_tokens is not None
        if chunking and view.prefilling:   # the request being chunked first (module docstring)
            for r in view.running:
                if room <= 0:
                    break
                if not view.decoding(r):
                    room -= prefills.add(view, r, room)
        admissible = plain_head_admissible if getattr(view, "plain_kv", False) else head_admissible
        most, admitted = limits.prefill_requests, 0
        while (most is None or admitted < most) \
                and admissible(view, room if prefills.ids else max(room, 1), 0 if chunking else len(prefills.ids)):
            if chunking and prefills.ids and self._too_long_behind(view, prefills):
                break
            r = view.admit_head(now_s)
            if view.decoding(r):   # swapped back in: decodes from the next decode step
                continue
            room -= prefills.add(view, r, room if chunking else None)
            admitted += 1
        if prefills.ids:
            return prefills.plan(view, ())
        return prefills.plan(view, grow_decodes(view, list(view.running)))

    def _too_long_behind(self, view, prefills) -> bool:
        """The waiting head's prompt is not started behind the step's other prompts: at least max_prefill_tokens
        (`limits.prefill_input_tokens`) less the step's tokens (module docstring)."""
        s, r = view.s, view.waiting[0]
        rest = s.prefill_target.item(r) - s.prefilled.item(r)
        return rest >= self.limits.prefill_input_tokens - sum(prefills.chunks)

    def admission_room(self, view) -> int:
        return max(self.limits.max_batched_tokens, 1)

    def admissible(self, view, token_room: int) -> bool:
        if getattr(view, "plain_kv", False):
            return plain_head_admissible(view, token_room, 0)
        return head_admissible(view, token_room, 0)
