"""Bulks that run through arrivals: a prefill-first replica's prefill steps folded into its bulk of decode steps.

A bulk that stops at an arrival (simulator.core.bulk: nobody was waiting) hands over to the step loop, which forms
the arrival's prefill step and then plans the next bulk: per arrival, one bulk to set up, apply and log, and two
passes of the loop. Where the replica's arrivals are known ahead (simulator.core.timeline.OwnArrivals) nothing can
cut its bulk, so the bulk goes on instead (`extend`): at the boundary where it stopped, its decode steps so far
are applied (their finishes, the blocks in use: `simulator.core.bulk.settle_decodes`), the arrivals taken, and, the
waiting head admissible, the prefill step is formed, priced and applied by the step path's own functions
(`Replica.plan_step`, `step_costs`, `apply_step`: the same state and the same row in the step log); the requests it
prefilled join the decode profile one by one (as each would join the next bulk) and the scan goes on from the next
decode step. The bulk's boundaries hold its prefill steps' among its decode steps' (`BulkPlan.prefill_at`). Where
a join would move the profile's table (DecodeProfile._room), the bulk's steps so far are logged first (its decode
columns, logged as one view, must stay in one array) and it goes on as a new bulk.

So every step is formed by the rules and from the state the step-by-step path has at that instant, and outputs
stay identical in both modes (tests/simulator/core/test_bulk_arrivals.py; sim_helpers.assert_bulk_equals_step on
every scheduling scenario). The bulk ends where the loop would do more than a prefill step of admitted prompts —
the waiting head not admissible (the loop then plans a bulk with a blocked head), the end of the arrivals known
(a distributed window), a member needing a preemption, the bulk's step limit.

Folded where a step with prompts decodes nobody and completes every prompt it starts (the scheduler's
`prefills_apart`: prefill-first batching of whole prompts, simulator.core.sched.vllm), on the plain block pool with
one sequence per request, with no policy, pauses, pool hooks or closed loop, and a driver that hears of finishes
only after a bulk (`TimelineControls.report_every_step` False).
"""
from __future__ import annotations

from simulator.core.bulk import MAX_BULK_STEPS, BulkPlan, log_profile_bulk, not_joined, scan_steps, settle_decodes


def folds_arrivals(rep, ctl, hooks: bool) -> bool:
    """Replica `rep`'s bulks may run through its arrivals under the timeline controls `ctl` (module docstring);
    `hooks`: its pool adds something to its step loop (simulator.core.timeline.PoolSide)."""
    return (ctl.bulk and rep.arrivals is not None and not ctl.stop_at_finish and not ctl.report_every_step
            and not hooks and rep.policy is None and rep.paused is None and rep.plain_kv
            and not rep.profile.replays and getattr(rep.scheduler, "prefills_apart", False))


def extend(rep, plan: BulkPlan, arrivals, finished: list[int]) -> bool:
    """Fold the prefill step of the arrivals at the end of `plan` into it and scan on (module docstring). Finished
    requests are appended to `finished`. False (nothing folded, or nothing scanned after the prefill step): the
    bulk ends at `plan.end_s`; True: it went on, and may stop at another arrival."""
    t = plan.end_s
    waiting = rep.waiting
    if not plan.cuttable or t >= arrivals.until_s or (arrivals.next_s() > t and not waiting):   # not stopped at an
        # arrival (a bulk behind a blocked head, or stopped by a finish or KV), or at the window's end (a step formed
        # there waits for the next window); requests wait only after a prefill step folded in that left them waiting
        return False
    settle_decodes(rep, plan, finished)
    arrivals.take(waiting, t)
    if not rep.admits_head():
        return False
    prof = rep.profile
    # Where a join of a request admitted now may move the profile's table (DecodeProfile._room), the bulk so far is
    # logged first and goes on as a new one from here (`_split`).
    if plan.steps:
        fresh = prof.fresh_steps(waiting[0]) if len(waiting) == 1 else max(map(prof.fresh_steps, waiting))   # (one
        # waiting, the common case: no max over a map)
        if prof.k - prof.base + fresh > len(prof.table):
            _split(rep, plan)
    step = rep.plan_step(t)   # (prefill-only: `prefills_apart`)
    costs = rep.step_costs(step)
    end_s = t + costs.seconds
    log = rep.log
    log.defer_flush = True   # (until the bulk's decode steps are logged: steplog.StepLog.defer_flush)
    rep.apply_step(step, t, end_s, costs, finished)
    plan.bounds_s.append(end_s)
    n = plan.steps
    if plan.prefill_at is None:
        plan.prefill_at = [n]
    else:
        plan.prefill_at.append(n)
    plan.end_s = end_s
    running = rep.running
    if len(prof.members) < len(running):   # (one by one, each as a bulk's join of one: the same sums)
        for r in not_joined(running, prof.members):
            prof.join_one(r)
    stop_s = arrivals.next_s()   # (at most the window's end: its sentinel)
    if waiting or stop_s <= end_s:   # the step formed at its end may admit someone (the step path's rule): not a
        return True                  # decode step of the bulk
    n_max = min(prof.last_finish - plan.k0 + 1, MAX_BULK_STEPS)
    if n >= n_max:
        return False
    plan.steps = scan_steps(rep, plan.k0 - prof.base, n, n_max, rep.kv.total_blocks - plan.other_blocks, stop_s,
                            plan.bounds_s)
    plan.end_s = plan.bounds_s[-1]
    return plan.steps > n


def _split(rep, plan: BulkPlan) -> None:
    """Log the steps of `plan` so far (all applied: `settle_decodes`) and make it a bulk of no step from their end at
    the profile's next step: the columns it logs are one view of one table, and a join moves only the columns from
    the next step on."""
    log_profile_bulk(rep, plan)
    plan.k0, plan.steps, plan.applied = rep.profile.k, 0, 0
    plan.bounds_s = [plan.end_s]
    plan.prefill_at = None
