"""The order in which the prefill-first scheduler (simulator.core.sched.vllm) takes waiting requests under SGLang:
its `--schedule-policy` (profiles.engine_time.queue_defaults: the release's default and choices), as
managers/schedule_policy.py `SchedulePolicy.calc_priority` sorts `Scheduler.waiting_queue` in place
(read in 0.4.0 - 0.4.0.post2, 0.4.1 - 0.4.3, 0.4.5, 0.4.9, 0.5.2, 0.5.10 and 0.5.23). `Scheduler.
get_new_batch_prefill` (managers/scheduler.py) calls it each scheduler iteration that may prefill (someone
waits and the running batch is below max_running_requests), then admits from the head of the sorted queue
until a request does not fit; the queue keeps its sorted order, new requests join its tail.

- `fcfs`: arrival order (draftsim's queue; a preempted request goes back to its head, simulator.core.replica); no
  prefix match and no in-batch check (`calc_priority` returns at once for fcfs; lof is cache-agnostic too), so
  requests sharing an uncached prefix are admitted side by side and each computes it (simulator.core.kv.prefix_cache).
- `lof` (longest output first): a stable sort by max_new_tokens, longest first (`_sort_by_longest_output`); a
  request's max_new_tokens is its output length in draftsim (sglang_reserve's docstring).
- `lpm` (longest prefix match): with more than 128 requests waiting it is fcfs for that iteration
  (`_determine_active_policy`: "Turn off the expensive prefix matching and sorting when the #queue is large");
  else each waiting request is matched against the prefix cache (`tree_cache.match_prefix` of
  `adjust_max_prefix_ids`: its prompt and emitted tokens less the last one) and the queue is sorted, stably, by
  the tokens matched, most first (`_sort_by_longest_prefix`). From 0.4.0.post2 (`_compute_prefix_matches`), in
  queue order, a request whose match is at most IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD (32) tokens is matched
  against a second tree of the prefixes of the waiting requests checked before it: where that match is at least
  IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD (32) tokens it goes behind every other request ("we prefer to
  schedule only one of them so that we can increase the cache hit rate"), else its prefix joins that tree. It is
  only ordered last: where the step's budgets leave room PrefillAdder still takes it into the same batch, which
  then computes the shared prefix twice (SGLang caches a batch's prompts after it has run).
  A cache-aware policy with the radix cache off (`--disable-radix-cache`) is fcfs (`_validate_and_adjust_policy`):
  simulator.cluster.build.batch_scheduler runs fcfs where the pool keeps no prefix cache.

Approximations, named: matches count whole prefix units (the KV block, or a trace's hash block: simulator.core
.prefixes) where SGLang's radix tree counts tokens (page size 1 by default), so two prompts sharing 40 tokens
match 32 with 16-token blocks; the cache match counts units in host memory (simulator.core.kv.host_tier) as 0.5.23's
`num_matched_prefix_tokens` does and the 0.4 releases' device-only match does not; the queue is sorted whenever
draftsim forms a step or asks whether the head could join (`Vllm.admissible`) with someone waiting and room in the
batch, the iterations at which SGLang sorts.
"""
from __future__ import annotations

import numpy as np

LPM_MAX_QUEUE = 128            # _determine_active_policy: lpm is fcfs above this many waiting requests
IN_BATCH_CHECK_TOKENS = 32     # IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD (env, default 32)
IN_BATCH_DEPRIORITIZE_TOKENS = 32   # IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD (env, default 32)


def _resort(waiting, key) -> None:
    """Sort the deque `waiting` in place, stably, by `key` (SGLang's `waiting_queue.sort(key=...)`)."""
    items = sorted(waiting, key=key)
    waiting.clear()
    waiting.extend(items)


def _may_prefill(view) -> bool:
    """SGLang sorts only where get_new_batch_prefill goes on: someone waits, the batch is not full."""
    return len(view.waiting) > 1 and not view.batch_full()


class Fcfs:
    """First come, first served: the queue as it is."""

    name = "fcfs"

    def __init__(self, in_batch: bool = False):
        pass

    def order(self, view) -> None:
        pass


class LongestOutputFirst:
    """`lof`: the longest max_new_tokens first (module docstring)."""

    name = "lof"

    def __init__(self, in_batch: bool = False):
        pass

    def order(self, view) -> None:
        if _may_prefill(view):
            output = view.s.output
            _resort(view.waiting, lambda r: -output.item(r))


class LongestPrefixMatch:
    """`lpm`: the longest prefix-cache match first, in-batch prefix sharers last (module docstring).
    `in_batch`: the release runs the in-batch prefix check (0.4.0.post2 on)."""

    name = "lpm"

    def __init__(self, in_batch: bool = True):
        self.in_batch = in_batch

    def order(self, view) -> None:
        waiting = view.waiting
        if not _may_prefill(view) or len(waiting) > LPM_MAX_QUEUE:
            return
        kv, target = view.kv, view.s.prefill_target
        matched = {r: kv.cached(r, target.item(r)) for r in waiting}
        late = self._deprioritized(kv, target, waiting, matched) if self.in_batch else ()
        _resort(waiting, lambda r: np.inf if r in late else -matched[r])

    @staticmethod
    def _deprioritized(kv, target, waiting, matched) -> set:
        """The requests `_compute_prefix_matches` puts last: a short cache match, and a prefix of at least
        IN_BATCH_DEPRIORITIZE_TOKENS shared with a request checked before them (module docstring). The tree of
        checked prefixes is a set of unit keys: they are chained (a key stands for every token up to its unit's
        end, simulator.core.prefixes), so a request's leading keys found there are its match."""
        tree: set = set()
        late = set()
        unit = kv.prefix_unit_tokens
        for r in waiting:
            if matched[r] > IN_BATCH_CHECK_TOKENS:
                continue
            keys = kv.prompt_keys(r, target.item(r))
            shared = 0
            for k in keys.tolist():
                if k not in tree:
                    break
                shared += 1
            if shared * unit >= IN_BATCH_DEPRIORITIZE_TOKENS:
                late.add(r)
            else:
                tree.update(keys.tolist())
        return late


# cluster.engine.schedule_policy -> its order (profiles.engine_time.queue_defaults.MODELLED; a new one: its class
# plus one line here)
QUEUE_ORDERS = {"fcfs": Fcfs, "lpm": LongestPrefixMatch, "lof": LongestOutputFirst}
CACHE_AWARE = ("lpm",)   # fcfs where the pool keeps no prefix cache (module docstring)
