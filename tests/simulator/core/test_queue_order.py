"""SGLang's --schedule-policy (simulator.core.sched.queue_order), hand-worked from managers/schedule_policy.py
`SchedulePolicy.calc_priority`, `_compute_prefix_matches`, `_sort_by_longest_prefix` and `_sort_by_longest_output`
(read in 0.4.0, 0.4.0.post2, 0.4.2, 0.4.5, 0.5.2, 0.5.10 and 0.5.23), and its end-to-end effect under SGLang 0.4.2
(default lpm) against 0.4.5 (default fcfs)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import simulator
from sim_helpers import assert_bulk_equals_step, scenario
from simulator.core.kv.block_pool import BlockPool
from simulator.core.kv.prefix_cache import PrefixCache, PrefixCachePool
from simulator.core.prefixes import PrefixKeys
from simulator.core.replica import Replica
from simulator.core.sched import BatchLimits
from simulator.core.sched.queue_order import LongestOutputFirst, LongestPrefixMatch
from simulator.core.sched.vllm import Vllm
from simulator.core.state import RequestState
from simulator.core.steplog import StepLog
from simulator.core.workload import RequestTable

UNIT = 16   # tokens per prefix unit (= the KV block here)
S = [1, 2, 3, 4]        # a 64-token system prompt, cached by the running request R
T = [10, 11, 12]        # a 48-token prefix two waiting requests share, not cached
# request -> (prompt tokens, output tokens, prefix keys); 0 is R (running), 1..6 wait in this arrival order:
# W1 private, W3 and W4 start with T, W2 with S, W5 with S's first two units then its own, W6 private
REQUESTS = {0: (100, 50, S), 1: (100, 30, []), 3: (100, 90, T), 4: (100, 10, T), 2: (100, 70, S + [5]),
            5: (100, 60, [1, 2, 20]), 6: (100, 20, [])}
ARRIVAL = [1, 3, 4, 2, 5, 6]


def _replica(order, budget: int = 10_000, cached: bool = True):
    ids = sorted(REQUESTS)
    table = RequestTable(np.zeros(len(ids)), np.array([REQUESTS[r][0] for r in ids]),
                         np.array([REQUESTS[r][1] for r in ids]))
    state = RequestState(table)
    keys = PrefixKeys.from_lists([REQUESTS[r][2] for r in ids], UNIT)
    kv = PrefixCachePool(state, 1000, UNIT, PrefixCache(1000, UNIT, UNIT, keys), False) if cached \
        else BlockPool(state, 1000, UNIT)
    limits = BatchLimits(16, budget, 512, queue_order=order)
    rep = Replica(0, state, Vllm(limits), kv, limits, cost=SimpleNamespace(flops_scales=(1.0, 1.0)),
                  acceptance=None, log=StepLog())
    rep.waiting.append(0)
    rep.plan_step(0.0)          # R is admitted alone: S's four units are cached (in use)
    rep.waiting.extend(ARRIVAL)
    return rep


def test_lpm_with_the_in_batch_check_by_hand():
    """Matches against the cache (at most prompt − 1 = 99 tokens): W2 64 (S), W5 32 (S's first two units), the
    others 0. In-batch check, in queue order, of those matching at most 32 tokens: W1 (nothing shared) and W3 (T)
    join the waiting tree; W4 matches T's 48 tokens there (>= 32): last; W5 matches nothing there (its 1, 2 are
    in the cache, not the tree) and joins it; W6 nothing. Stable sort by −match, W4 at +inf."""
    rep = _replica(LongestPrefixMatch(in_batch=True))
    assert [rep.kv.cached(r, 100) for r in ARRIVAL] == [0, 0, 0, 64, 32, 0]
    rep.scheduler.queue_order.order(rep)
    assert list(rep.waiting) == [2, 5, 1, 3, 6, 4]


def test_lpm_without_the_in_batch_check_keeps_w4_beside_w3():
    """0.4.0 and 0.4.0.post1 have no in-batch check: the stable sort leaves W4 between W3 and W6."""
    rep = _replica(LongestPrefixMatch(in_batch=False))
    rep.scheduler.queue_order.order(rep)
    assert list(rep.waiting) == [2, 5, 1, 3, 4, 6]


def test_the_admitted_order_lpm_against_fcfs():
    """A 150-token step budget admits whole prompts while they fit, then truncates nothing (no chunking): LPM
    admits W2 (36 tokens to compute after its 64-token hit) and W5 (68 after 32), 104 tokens, then W1's 100 do
    not fit the 46 left; FCFS admits W1 (100), then W3's 100 do not fit the 50 left."""
    lpm = _replica(LongestPrefixMatch(in_batch=True), budget=150)
    plan = lpm.plan_step(0.0)
    assert list(zip(plan.prefill_ids, plan.prefill_chunks)) == [(2, 36), (5, 68)]
    assert list(lpm.waiting) == [1, 3, 6, 4]   # the queue keeps its sorted order (SGLang sorts it in place)
    fcfs = _replica(None, budget=150)
    plan = fcfs.plan_step(0.0)
    assert list(zip(plan.prefill_ids, plan.prefill_chunks)) == [(1, 100)]


def test_lpm_is_fcfs_above_128_waiting_or_without_a_cache():
    """_determine_active_policy: more than 128 waiting requests: no sort; the cache off: every match is 0 and no
    request shares keys (the build runs fcfs there: simulator.cluster.build.batch_scheduler)."""
    rep = _replica(LongestPrefixMatch(in_batch=True))
    rep.waiting.extend([6] * 123)   # (the same request id repeated: 129 entries; the order is what is checked)
    before = list(rep.waiting)
    rep.scheduler.queue_order.order(rep)
    assert list(rep.waiting) == before
    rep = _replica(LongestPrefixMatch(in_batch=True), cached=False)
    rep.scheduler.queue_order.order(rep)
    assert list(rep.waiting) == ARRIVAL


def test_lof_sorts_by_output_longest_first_and_stably():
    rep = _replica(LongestOutputFirst())
    rep.scheduler.queue_order.order(rep)
    assert list(rep.waiting) == [3, 2, 5, 1, 6, 4]   # outputs 90, 70, 60, 30, 20, 10


def _sessions(version: str, **extra) -> dict:
    """Multi-turn chats behind one of 4 system prompts of 1,500 tokens on one H100 whose KV pool (35 % of its
    memory) keeps a queue of up to about 100 requests waiting (below lpm's 128)."""
    return scenario(seed=7, workload={"arrival": {"process": "poisson", "qps": 8.0}, "num_requests": 600,
                                      "prompt_tokens": {"kind": "lognormal", "median": 400, "sigma": 0.6, "max": 4096},
                                      "output_tokens": {"kind": "uniform", "low": 32, "high": 256},
                                      "shared_prefix": {"prompts": 4, "tokens": 1500},
                                      "sessions": {"turns": {"kind": "uniform", "low": 2, "high": 6},
                                                   "think_time_s": 5.0}},
                    cluster={"gpu_memory_utilization": 0.35,
                             "engine": {"framework": "sglang", "version": version, **extra}},
                    scheduler={"kind": "vllm", "max_batch_size": None})


@pytest.fixture(scope="module")
def e2e():
    return {v: simulator.run(_sessions(v)) for v in ("0.4.2", "0.4.5")}


def test_sglang_0_4_2_runs_lpm_and_0_4_5_fcfs_end_to_end(e2e):
    """The same sessions under SGLang 0.4.2 (lpm by default) and 0.4.5 (fcfs): lpm admits first the turns whose
    history is cached, so more prompt tokens hit (1.209 M against 1.155 M when recorded) and the mean TTFT is lower
    (1.31 s against 1.70 s); naming fcfs on 0.4.2 gives 0.4.5's admission order, and lpm on 0.4.5 0.4.2's (the two
    releases' other rules are the same)."""
    lpm, fcfs = e2e["0.4.2"], e2e["0.4.5"]
    assert lpm.summary["prefix_cache_saved_prefill_tokens"] > 1.03 * fcfs.summary["prefix_cache_saved_prefill_tokens"]
    ttft = {v: (r.requests["first_token_s"] - r.requests["arrival_s"]).mean() for v, r in e2e.items()}
    assert ttft["0.4.2"] < 0.85 * ttft["0.4.5"]
    assert 50 < lpm.steps["queued_requests"].max() <= 128
    assert not np.array_equal(lpm.requests["admit_s"].to_numpy(), fcfs.requests["admit_s"].to_numpy())
    named = simulator.run(_sessions("0.4.2", schedule_policy="fcfs"))
    assert np.array_equal(named.requests["admit_s"].to_numpy(), fcfs.requests["admit_s"].to_numpy())
    assert "schedule_policy" not in named.summary and "schedule_policy" not in fcfs.summary   # (arrival order)
    named = simulator.run(_sessions("0.4.5", schedule_policy="lpm"))
    assert np.array_equal(named.requests["admit_s"].to_numpy(), lpm.requests["admit_s"].to_numpy())
    # summary.json names the order that ran where it is not arrival order, given or the release's default
    assert lpm.summary["schedule_policy"] == named.summary["schedule_policy"] == "lpm"


def test_lpm_bulk_equals_step_and_is_deterministic():
    data = _sessions("0.4.2")
    data["workload"]["num_requests"] = 300
    assert_bulk_equals_step(data)
    a, b = simulator.run(data), simulator.run(data)
    assert a.requests.equals(b.requests) and a.steps.equals(b.steps)


def test_a_disaggregated_prefill_pool_takes_its_queue_in_lpm_order():
    """SGLang's prefill server runs the same get_new_batch_prefill: its pool's queue is sorted as a colocated
    one's (its decode pool keeps no prefix cache: arrival order there). At 60 sessions/s a queue of about 20 prompts
    forms before the prefill pool."""
    data = _sessions("0.4.2")
    data["workload"]["num_requests"] = 300
    data["workload"]["arrival"]["qps"] = 60.0
    data["cluster"]["disaggregation"] = {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}
    lpm = simulator.run(data)
    assert lpm.steps.loc[lpm.steps["replica"] == 0, "queued_requests"].max() > 5
    data["cluster"]["engine"]["schedule_policy"] = "fcfs"
    fcfs = simulator.run(data)
    assert not np.array_equal(lpm.requests["admit_s"].to_numpy(), fcfs.requests["admit_s"].to_numpy())
    assert lpm.summary["prefix_cache_saved_prefill_tokens"] > fcfs.summary["prefix_cache_saved_prefill_tokens"]
