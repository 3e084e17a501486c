"""Iterative retrieval-augmented serving in the DES (`retrieval:`): the baseline and RaLMSpec (Zhang et al.,
"Accelerating Retrieval-Augmented Language Model Serving with Speculation", ICML 2024, arXiv 2401.14021).

A request's output is generated in *intervals* of `interval_tokens` tokens; each interval is conditioned
on one retrieved document. The first interval's document comes with the prompt (retrieved before the
request arrives: not simulated). Every later one is retrieved at the interval's start:

- **baseline**: the request leaves its replica's batch while one knowledge-base query runs, then rejoins
  (simulator.core.pauses: its KV stays resident, or with `kv_while_paused: released` is freed and
  re-prefilled; a cache lookup's short pause always keeps it). A query over n documents takes `kb_fixed_s +
  kb_per_query_s · n` on one of `kb_servers` servers of a knowledge base shared by the cluster, FIFO
  (`KnowledgeBase`); a request waits there while the servers are busy.
- **ralmspec**: the request answers from its local cache instead (a pause of `lookup_s`; the cached
  document is the knowledge base's with probability `cache_hit_p`, a counter-based draw per (request,
  lookup): independent of batching and timing), and keeps generating. After `stride` intervals (a
  *round*), or when it reaches its output length, it leaves the batch for one knowledge-base query of
  its n cache-answered documents. Intervals before the first wrong document are committed; from that
  one on they are discarded: their tokens were generated (the steps that made them are priced and in
  the step log) but are not delivered, and at the resume the request rolls its context and KV back to
  that point (simulator.core.pauses; the freed KV blocks return to the replica). The verification returned the right document
  for the wrong interval, so the next round's first interval needs no lookup (theory.ralmspec's state
  K); after a round without a wrong document the next round starts with a lookup (state U).
  A request finishes when its output length is reached and verified.

For one request alone on a replica with a constant step time this is exactly theory.ralmspec's
two-state chain with G = interval_tokens × step time (tests/simulator/speculation/test_sim_ralmspec.py checks the DES's
committed intervals per second and speedup against it, Monte-Carlo error).

Approximations, named here:
- the knowledge base serves each request's query on its own (no merging of concurrent requests' queries
  into one batch); its latency is an input (no model of the index);
- a paused request keeps its KV blocks by default (as a serving engine keeps a request that waits on a
  tool or a retrieval) and cannot be preempted while paused; released KV is re-prefilled in full (no
  prefix cache keeps part of it: an upper bound); the lookup runs on the host, serially for the request
  (RaLMSpec's asynchronous verification and prefetching, which overlap it, are not modelled: a larger
  cache raises `cache_hit_p` — give the rate it reaches);
- one token per decode step (plain decoding: a drafter is refused), so boundaries fall on step ends;
- a resumed request rejoins at the next step boundary of its replica (as an arrival does).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from simulator.errors import ScenarioError
from simulator.speculation.acceptance import counter_uniforms

NONE = -1


@dataclass(frozen=True)
class RetrievalSpec:
    """The `retrieval:` block inside the engine (simulator.config.retrieval), with its draw seed."""

    mode: str
    interval_tokens: int
    kb_fixed_s: float
    kb_per_query_s: float
    kb_servers: int
    lookup_s: float
    cache_hit_p: float
    stride: int
    seed: int


class KnowledgeBase:
    """`servers` identical servers, FIFO: a query submitted at t starts on the first server free at or
    after t. Queries must be submitted in time order (the coupled driver's event order does it), which
    makes this the SimPy Resource of that capacity (checked in tests/simulator/speculation/test_sim_ralmspec.py)."""

    def __init__(self, servers: int, fixed_s: float, per_query_s: float):
        self.fixed_s, self.per_query_s = fixed_s, per_query_s
        self._free = [0.0] * servers   # heap of the servers' next free times
        self.busy_s = 0.0
        self.wait_s = 0.0
        self.queries = 0
        self.documents = 0

    def query(self, submit_s: float, documents: int) -> float:
        """Submit a query over `documents` documents at `submit_s`; returns when it completes."""
        submit_s = float(submit_s)
        start_s = max(submit_s, self._free[0])
        service_s = self.fixed_s + self.per_query_s * documents
        end_s = start_s + service_s
        heapq.heapreplace(self._free, end_s)
        self.busy_s += service_s
        self.wait_s += start_s - submit_s
        self.queries += 1
        self.documents += documents
        return end_s


class _IterativeRetrieval:
    """A simulator.core.pauses.PauseHook: per-request retrieval state (arrays indexed by request id, shared
    by the cluster's replicas) and the knowledge base. Subclasses decide what happens at a boundary."""

    def __init__(self, spec: RetrievalSpec, state):
        self.spec, self.s = spec, state
        self.kb = KnowledgeBase(spec.kb_servers, spec.kb_fixed_s, spec.kb_per_query_s)
        n = state.n
        zeros = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
        self.next_at = np.full(n, spec.interval_tokens, dtype=np.int64)  # generated tokens of the next boundary
        self.kb_queries, self.kb_documents, self.cache_lookups, self.cache_right = zeros(), zeros(), zeros(), zeros()
        self.rollbacks, self.discarded = zeros(), zeros()
        self.paused_s = np.zeros(n)

    def after_step(self, rep, candidates: list[int], end_s: float) -> list[int]:
        s = self.s
        ids = np.asarray(candidates, dtype=np.int64)
        g = s.emitted[ids]
        at = (g >= self.next_at[ids]) | (g >= s.output[ids])
        if not at.any():
            return candidates
        keep = []
        for r, hit in zip(candidates, at.tolist()):
            queries = int(self.kb_queries[r])
            until_s = self._boundary(r, int(s.emitted[r]), end_s) if hit else None
            if until_s is None:
                keep.append(r)
            else:   # only a knowledge-base query is long enough to release the KV (kv_while_paused)
                rep.paused.pause(rep, r, until_s, may_release=self.kb_queries[r] > queries)
                self.paused_s[r] += until_s - end_s
        return keep

    def _kb(self, r: int, documents: int, submit_s: float) -> float:
        self.kb_queries[r] += 1
        self.kb_documents[r] += documents
        return self.kb.query(submit_s, documents)

    def _boundary(self, r: int, generated: int, end_s: float) -> float | None:
        """Request r generated `generated` tokens at `end_s`, reaching a boundary or its output length:
        the time it rejoins, or None to stay in the batch."""
        raise NotImplementedError

    def resume(self, rep, r: int, resume_s: float) -> tuple[int, bool]:
        return 0, False

    # ---- outputs ---------------------------------------------------------------------------------------
    def request_columns(self) -> dict[str, np.ndarray]:
        return {"retrieval_pause_s": self.paused_s.copy(), "kb_queries": self.kb_queries.copy(),
                "kb_documents": self.kb_documents.copy(), "cache_lookups": self.cache_lookups.copy(),
                "rollbacks": self.rollbacks.copy(), "discarded_tokens": self.discarded.copy()}

    def summary(self, end_s: float) -> dict:
        """summary.json's retrieval fields (README of scenarios/speculation, `ralmspec.yaml`)."""
        kb, lookups = self.kb, int(self.cache_lookups.sum())
        finished = np.isfinite(self.s.finish_s)
        return {"retrieval_mode": self.spec.mode, "kb_queries": kb.queries, "kb_documents": kb.documents,
                "kb_busy_s": kb.busy_s,
                "kb_utilization": kb.busy_s / (self.spec.kb_servers * float(end_s)) if end_s > 0 else 0.0,
                "kb_wait_mean_s": kb.wait_s / kb.queries if kb.queries else 0.0,
                "cache_lookups": lookups,
                "cache_right_fraction": int(self.cache_right.sum()) / lookups if lookups else float("nan"),
                "rollbacks": int(self.rollbacks.sum()), "discarded_tokens": int(self.discarded.sum()),
                "generated_tokens": int(self.s.emitted.sum() + self.discarded.sum()),
                "retrieval_pause_mean_s": float(self.paused_s[finished].mean()) if finished.any() else float("nan")}


class BaselineRetrieval(_IterativeRetrieval):
    """Every interval after the first waits for its knowledge-base query, out of the batch."""

    def _boundary(self, r: int, generated: int, end_s: float) -> float | None:
        if generated >= self.s.output[r]:
            return None
        interval = self.spec.interval_tokens
        self.next_at[r] = (generated // interval + 1) * interval
        return self._kb(r, 1, end_s)


class RalmSpecRetrieval(_IterativeRetrieval):
    """Speculative retrieval with batched verification (module docstring). Round state per request: its
    first generated token (`round_start`, committed), the intervals begun (`round_len`), the cache
    lookups among them and the first wrong one (NONE: none)."""

    def __init__(self, spec: RetrievalSpec, state):
        super().__init__(spec, state)
        n = state.n
        self.round_start = np.zeros(n, dtype=np.int64)   # the first request's round: its first document known
        self.round_len = np.ones(n, dtype=np.int64)
        self.lookups = np.zeros(n, dtype=np.int64)
        self.first_wrong = np.full(n, NONE, dtype=np.int64)
        self.draws = np.zeros(n, dtype=np.int64)         # lookups drawn so far (the draw's counter)
        self.pending_discard = np.zeros(n, dtype=np.int64)
        self.done_at_resume = np.zeros(n, dtype=bool)

    def _lookup(self, r: int) -> None:
        """Begin the next interval of r's round on a cached document."""
        u = counter_uniforms(self.spec.seed, np.array([r]), self.draws[r:r + 1])[0]
        self.draws[r] += 1
        self.cache_lookups[r] += 1
        if u < self.spec.cache_hit_p:
            self.cache_right[r] += 1
        elif self.first_wrong[r] == NONE:
            self.first_wrong[r] = self.round_len[r]
        self.lookups[r] += 1
        self.round_len[r] += 1
        self.next_at[r] = self.round_start[r] + self.round_len[r] * self.spec.interval_tokens

    def _new_round(self, r: int, start: int, known: bool) -> None:
        self.round_start[r] = start
        self.round_len[r] = 1 if known else 0
        self.lookups[r] = 0
        self.first_wrong[r] = NONE
        self.next_at[r] = start + self.spec.interval_tokens
        if not known:
            self._lookup(r)

    def _after_lookup(self, t_s: float) -> float | None:
        return t_s + self.spec.lookup_s if self.spec.lookup_s > 0 else None

    def _boundary(self, r: int, generated: int, end_s: float) -> float | None:
        done = generated >= self.s.output[r]
        if not done and self.round_len[r] < self.spec.stride:
            self._lookup(r)
            return self._after_lookup(end_s)
        if self.lookups[r] == 0:            # the round's only document was known: nothing to verify
            if done:
                return None
            self._new_round(r, generated, known=False)
            return self._after_lookup(end_s)
        verified_s = self._kb(r, int(self.lookups[r]), end_s)
        wrong = int(self.first_wrong[r])
        if wrong != NONE:                   # roll back to the wrong interval's start, rejoin with its document
            kept = int(self.round_start[r]) + wrong * self.spec.interval_tokens
            self.pending_discard[r] = generated - kept
            self.rollbacks[r] += 1
            self._new_round(r, kept, known=True)
            return verified_s
        if done:
            self.done_at_resume[r] = True
            return verified_s
        self._new_round(r, generated, known=False)
        return verified_s + self.spec.lookup_s

    def resume(self, rep, r: int, resume_s: float) -> tuple[int, bool]:
        dropped = int(self.pending_discard[r])
        self.pending_discard[r] = 0
        self.discarded[r] += dropped
        complete = bool(self.done_at_resume[r])
        self.done_at_resume[r] = False
        return dropped, complete


# retrieval.mode -> the hook (a new mode: a class with `_boundary` plus one line here)
RETRIEVAL_MODES = {"baseline": BaselineRetrieval, "ralmspec": RalmSpecRetrieval}


def check_retrieval(scenario) -> None:
    """Refuse what `retrieval:` is not modelled with (one line naming the field), before any work."""
    if scenario.retrieval is None:
        return
    cl = scenario.cluster
    unsupported = [("drafter.kind", scenario.drafter.kind != "none",
                    "RaLMSpec speculates on documents, not tokens: plain decoding only; allowed: none"),
                   ("cluster.disaggregation", cl.disaggregation is not None, "a colocated cluster only; allowed: none"),
                   ("cluster.kv_cache.prefix_caching", cl.kv_cache.prefix_caching, "plain KV counting only; allowed: false"),
                   ("cluster.kv_cache.host_memory_gib", cl.kv_cache.host_memory_gib > 0,
                    "plain KV counting only; allowed: 0"),
                   ("workload.parallel_samples", scenario.workload.parallel_samples > 1,
                    "one sequence per request only; allowed: 1")]
    for field, present, allowed in unsupported:
        if present:
            raise ScenarioError(field, f"cannot be combined with retrieval: {allowed}")


def build_retrieval(scenario, state) -> _IterativeRetrieval | None:
    """The cluster's retrieval hook for `scenario.retrieval` (None without it); its draws come from their
    own stream of the scenario's seed."""
    cfg = scenario.retrieval
    if cfg is None:
        return None
    seed = int(np.random.SeedSequence(scenario.seed).spawn(5)[4].generate_state(1, dtype=np.uint64)[0])
    spec = RetrievalSpec(cfg.mode, cfg.interval_tokens, cfg.kb_fixed_s, cfg.kb_per_query_s, cfg.kb_servers,
                         cfg.lookup_s, cfg.cache_hit_p, cfg.stride, seed)
    return RETRIEVAL_MODES[cfg.mode](spec, state)
