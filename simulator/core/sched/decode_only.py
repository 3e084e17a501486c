"""The decode pool's scheduler (disaggregated clusters, simulator.cluster.pool_replicas.DecodeReplica): every
step decodes the running batch. Requests join it when their KV has arrived, with blocks reserved for their
whole life at hand-off, so it never admits (its replica's hand-off does) and never needs to preempt."""
from __future__ import annotations

from simulator.core.sched import Prefills, StepPlan, grow_decodes


class DecodeOnly:
    def plan(self, view, now_s: float) -> StepPlan:
        return Prefills().plan(view, grow_decodes(view, list(view.running)))

    def admission_room(self, view) -> int:
        return 0

    def admissible(self, view, token_room: int) -> bool:
        return False
