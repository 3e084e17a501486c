"""The order in which SGLang takes waiting requests into a prefill batch (`--schedule-policy`, server_args.py
`schedule_policy`) by release: its default, the policies a release has, and those draftsim models
(simulator.core.sched.queue_order). `cluster.engine.schedule_policy` names one; left out, the release's default.

As read in the PyPI wheels (server_args.py `ServerArgs.schedule_policy` and the `--schedule-policy` choices;
arg_groups/fields/schedule.py from the 0.5.15 line, read in 0.5.15, 0.5.19, 0.5.21 and 0.5.23):
- default "lpm" (longest prefix match) in 0.4.0 - 0.4.3.post2 (read: 0.4.0, 0.4.1, 0.4.2, 0.4.3, .post1, .post2),
  "fcfs" from 0.4.3.post3 (read: 0.4.3.post3, .post4, 0.4.4 - 0.4.10.post2, 0.5.1 - 0.5.23);
- choices lpm, random, fcfs, dfs-weight in 0.4.0 - 0.4.10.post2; lof from 0.5.1 (absent from 0.4.10.post2; 0.5.1
  is the first 0.5 release on PyPI); priority from 0.5.3 (absent from 0.5.2); routing-key from 0.5.8 (absent from
  0.5.7); hrrn from 0.5.20 (absent from 0.5.19); shortest-prefill-first from 0.5.21 (absent from 0.5.20);
- the rules of lpm (simulator.core.sched.queue_order): managers/schedule_policy.py `SchedulePolicy.calc_priority`,
  read in 0.4.0, 0.4.0.post1, 0.4.0.post2, 0.4.1, 0.4.2, 0.4.3, 0.4.5, 0.4.9, 0.5.2, 0.5.10 and 0.5.23; the in-batch
  prefix check (IN_BATCH_PREFIX_CACHING_*) from 0.4.0.post2 (absent from 0.4.0 and 0.4.0.post1).

draftsim models fcfs, lpm and lof (simulator.core.sched.queue_order). It refuses the others rather than run them as
something else: random shuffles with Python's process-wide `random` (managers/schedule_policy.py
`_sort_randomly`), whose state SGLang's other draws share; dfs-weight orders by the radix tree's node weights, a
tree draftsim's unit keys do not keep; priority and routing-key order by request fields (priority, routing key) no
draftsim workload carries; hrrn and shortest-prefill-first age requests by prefill tokens processed and cap the
chunk being prefilled (`shortest_prefill_chunk_limit`), which draftsim's prefill-first scheduler does not model.
"""
from __future__ import annotations

from profiles.measured.source import version_key

SGLANG_FCFS_FROM = "0.4.3.post3"   # the first release whose default is fcfs (module docstring)
SGLANG_IN_BATCH_FROM = "0.4.0.post2"   # the first release whose lpm deprioritizes in-batch prefix sharers
# --schedule-policy choice -> the first release that has it (module docstring)
SGLANG_POLICIES_FROM = {"lpm": "0.4.0", "random": "0.4.0", "fcfs": "0.4.0", "dfs-weight": "0.4.0", "lof": "0.5.1",
                        "priority": "0.5.3", "routing-key": "0.5.8", "hrrn": "0.5.20",
                        "shortest-prefill-first": "0.5.21"}
MODELLED = ("fcfs", "lpm", "lof")   # (simulator.core.sched.queue_order.QUEUE_ORDERS)


def sglang_default_policy(version: str) -> str:
    """SGLang `version`'s default --schedule-policy (module docstring)."""
    return "lpm" if version_key(version) < version_key(SGLANG_FCFS_FROM) else "fcfs"


def sglang_in_batch_check(version: str) -> bool:
    """Whether SGLang `version`'s lpm runs the in-batch prefix check (module docstring)."""
    return version_key(version) >= version_key(SGLANG_IN_BATCH_FROM)


def sglang_policies(version: str) -> tuple[str, ...]:
    """The --schedule-policy choices SGLang `version` has (module docstring), in its own order."""
    v = version_key(version)
    return tuple(name for name, first in SGLANG_POLICIES_FROM.items() if v >= version_key(first))


def policy_refusal(policy: str, version: str) -> str | None:
    """Why `cluster.engine.schedule_policy: policy` cannot run on SGLang `version` (one line, without the field
    name), or None where it can (module docstring)."""
    have = sglang_policies(version)
    if policy not in have:
        first = SGLANG_POLICIES_FROM.get(policy)
        since = f" (from {first})" if first is not None else ""
        return f"sglang {version} has no schedule policy {policy!r}{since}; it has {', '.join(have)}"
    if policy not in MODELLED:
        return (f"{policy!r} (sglang {version}) is not modelled (profiles/engine_time/queue_defaults.py says why); "
                f"allowed: {', '.join(p for p in MODELLED if p in have)}")
    return None
