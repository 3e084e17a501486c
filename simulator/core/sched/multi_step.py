"""vLLM V0's multi-step scheduling (`--num-scheduler-steps n`, vLLM 0.6.0–0.7.x; `cluster.engine.
num_scheduler_steps`): the scheduler runs once per group of n decode steps and the batch is fixed for the
group, so a request that arrives (or is waiting) during a group is admitted only at the group's boundary.

Rule by rule (vllm/core/scheduler.py with `is_multi_step`, vllm/worker/multi_step_model_runner.py; RFC
vLLM #6854, PR #7000):
- at a boundary the wrapped scheduler plans as usual: a step with prompt tokens (V0 prefill-first: a prefill
  step, "force single step" for prompts, PR #7000) is one step and the next step is a boundary again; a
  decode-only step starts a group of n steps over that batch;
- inside a group the same requests decode; no one is admitted, no prompt is scheduled; requests that finish
  inside the group leave it. Approximation (named): vLLM keeps a finished sequence's slot computing until
  the group ends and discards its tokens; here it leaves at once (its slot's remaining steps of the group
  are not priced: at most n − 1 rows per finished request);
- the host's scheduling and input preparation run once per group: steps inside a group are marked
  `host_free` and pay no host work (vLLM prepares the next step's inputs on the GPU, `advance_step`, and
  pythonizes outputs asynchronously).

A multi-step replica runs step by step (no bulks): a bulk would not stop at a group boundary.
"""
from __future__ import annotations

from simulator.core.sched import Prefills, StepPlan, grow_decodes


class MultiStep:
    allows_bulks = False

    def __init__(self, inner, steps: int):
        if steps < 2:
            raise ValueError("multi-step scheduling needs steps >= 2")
        self.inner, self.steps = inner, steps
        self.left = 0                     # decode steps left in the current group after this one

    def plan(self, view, now_s: float) -> StepPlan:
        if self.left > 0:
            self.left -= 1
            plan = Prefills().plan(view, grow_decodes(view, [r for r in view.running if view.decoding(r)]))
            plan.host_free = True
            if not len(plan.decode_ids):
                self.left = 0
            return plan
        plan = self.inner.plan(view, now_s)
        if not plan.prefill_ids and len(plan.decode_ids):
            self.left = self.steps - 1     # a new group starts with this step
        return plan

    def admission_room(self, view) -> int:
        return self.inner.admission_room(view)

    def admissible(self, view, token_room: int) -> bool:
        return self.left == 0 and self.inner.admissible(view, token_room)
