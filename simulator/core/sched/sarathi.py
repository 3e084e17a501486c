"""`scheduler.kind: sarathi` — chunked prefill (Sarathi-Serve, Agrawal et al. OSDI 2024): every decode runs
every step; prompt chunks fill the rest of a `chunk_tokens` token budget, partially prefilled requests
first, then new admissions (FCFS)."""
from __future__ import annotations

from simulator.core.sched import BatchLimits, Prefills, StepPlan, grow_decodes, head_admissible


class Sarathi:
    def __init__(self, limits: BatchLimits):
        self.limits = limits

    def plan(self, view, now_s: float) -> StepPlan:
        decode_ids = grow_decodes(view, [r for r in view.running if view.decoding(r)])
        room = self.limits.chunk_tokens - view.decode_rows(decode_ids) * view.q
        prefills = Prefills()
        for r in view.running:
            if room <= 0:
                break
            if not view.decoding(r):
                room -= prefills.add(view, r, room)
        kv = view.kv
        while room > 0 and view.waiting and not view.batch_full():
            r = view.waiting[0]
            if kv.need(r)[0] > kv.total_blocks - kv.used_blocks:
                break
            view.admit_head(now_s)
            if view.decoding(r):   # swapped back in: decodes from the next step
                continue
            room -= prefills.add(view, r, room)
        return prefills.plan(view, decode_ids)

    def admission_room(self, view) -> int:
        return self.limits.chunk_tokens - len(view.running) * view.q

    def admissible(self, view, token_room: int) -> bool:
        return head_admissible(view, token_room, 0)
