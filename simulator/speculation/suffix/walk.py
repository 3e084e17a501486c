"""Greedy speculative decoding walked through real multi-turn sessions: for each request of a session
corpus (profiles.acceptance.sessions), the draft tokens a model-free proposer offers at every step and
how many of them the target accepts.

A step starts after `pos` output tokens (the prefill produced the first): the proposer drafts from the
context so far; a draft token is accepted iff it equals the target's actual next token (greedy
verification, exact: the corpus holds the target's own greedy text); the step emits the accepted tokens
plus the target's bonus token and the proposer is told the emitted tokens, as vLLM does after sampling.
A step accepts at most the tokens left minus one when the output was cut at its token budget (the bonus
token is the last one), and all tokens left when it ended with a stop token (the stop token is accepted
and ends the request) — the convention of profiles.acceptance.trace (`max_accept`).

Proposers:
- `suffix` (simulator.speculation.suffix.cache.SuffixProposer): one engine's suffix cache. Requests are
  served one after another in turn-major order (every session's turn 0, then every session's turn 1, …,
  sessions in corpus order), each started, stepped to its end and stopped before the next: the global
  tree holds the outputs of every earlier request (and the request's own output so far). Approximation
  (named here): in a serving engine, concurrent requests' outputs enter the global tree interleaved, so a
  request could also match the unfinished outputs of requests running beside it; serving them one by one
  gives it the earlier requests' complete outputs instead.
- `ngram` (`NgramIndex`, the semantics of profiles.acceptance.drafters.ngram_propose, which the project
  checked against vLLM's n-gram proposer: longest n-gram first, earliest occurrence) over the request's
  own prompt and output, at most γ tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from simulator.speculation.suffix.cache import SuffixParams, SuffixProposer


@dataclass(frozen=True)
class Walks:
    """Per request (in corpus row order): draft tokens proposed and accepted at each step."""

    proposed: tuple[np.ndarray, ...]
    accepted: tuple[np.ndarray, ...]
    workloads: tuple[str, ...]

    def steps(self, workload: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        keep = [i for i, w in enumerate(self.workloads) if workload is None or w == workload]
        if not keep:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return (np.concatenate([self.proposed[i] for i in keep]), np.concatenate([self.accepted[i] for i in keep]))


def walk_request(output: Sequence[int], ended_by_stop: bool, first_draft: Sequence[int],
                 next_draft: Callable[[list, bool], Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(proposed, accepted) per step of one request (module docstring). `next_draft(emitted, more)` is
    told each step's emitted tokens and returns the next draft (`more`: the request goes on)."""
    out = [int(t) for t in output]
    n, pos, draft = len(out), 1, list(first_draft)
    proposed, accepted = [], []
    while pos < n:
        max_accept = n - pos if ended_by_stop else n - pos - 1
        a = 0
        while a < len(draft) and a < max_accept and int(draft[a]) == out[pos + a]:
            a += 1
        proposed.append(len(draft))
        accepted.append(a)
        emitted = out[pos:pos + a + 1]
        pos += len(emitted)
        draft = list(next_draft(emitted, pos < n))
    return np.asarray(proposed, np.int64), np.asarray(accepted, np.int64)


def serving_order(frame) -> list[int]:
    """Row indices in turn-major order (module docstring)."""
    turns = frame["turn"].to_numpy()
    return sorted(range(len(frame)), key=lambda i: (int(turns[i]), i))


def suffix_walks(frame, params: SuffixParams) -> Walks:
    import gc
    was = gc.isenabled()
    gc.disable()             # millions of acyclic tree nodes: the cyclic collector only costs time here
    try:
        return _suffix_walks(frame, params)
    finally:
        if was:
            gc.enable()


def _suffix_walks(frame, params: SuffixParams) -> Walks:
    prop = SuffixProposer(params)
    proposed, accepted = [None] * len(frame), [None] * len(frame)
    for i in serving_order(frame):
        row = frame.iloc[i]
        out = [int(t) for t in row["output_tokens"]]
        first = prop.start(i, [int(t) for t in row["prompt_tokens"]], out[:1]).tokens

        def step(emitted, more, i=i):
            if more:
                return prop.propose(i, emitted).tokens
            prop.cache.add_active_response(i, emitted)   # the last tokens still enter the trees
            return ()
        proposed[i], accepted[i] = walk_request(out, bool(row["ended_by_stop"]), first, step)
        prop.stop(i)
    return Walks(tuple(proposed), tuple(accepted), tuple(frame["workload"].astype(str)))


class NgramIndex:
    """Incremental prompt lookup with the semantics of profiles.acceptance.drafters.ngram_propose: the
    last n tokens (n = max_n … min_n, longest first) are looked up at their earliest earlier occurrence
    and the tokens that followed it are proposed. Keeps each n-gram's first start position as the context
    grows (O(max_n) per token instead of a scan of the context per proposal)."""

    def __init__(self, max_n: int, min_n: int, max_proposal: int):
        self.max_n, self.min_n, self.max_proposal = max_n, min_n, max_proposal
        self.ctx: list = []
        self.first: dict = {}

    def extend(self, tokens) -> None:
        ctx, first = self.ctx, self.first
        for t in tokens:
            ctx.append(int(t))
            end = len(ctx)
            for n in range(self.min_n, self.max_n + 1):
                if end >= n:
                    first.setdefault(tuple(ctx[end - n:end]), end - n)

    def propose(self) -> list:
        ctx, L = self.ctx, len(self.ctx)
        for n in range(min(self.max_n, L - 1), self.min_n - 1, -1):
            start = self.first.get(tuple(ctx[L - n:]))
            if start is not None and start < L - n:
                return ctx[start + n:start + n + self.max_proposal]
        return []


def ngram_walks(frame, gamma: int, max_n: int = 3, min_n: int = 1) -> Walks:
    proposed, accepted = [], []
    for _, row in frame.iterrows():
        out = [int(t) for t in row["output_tokens"]]
        index = NgramIndex(max_n, min_n, max(1, gamma))
        index.extend(row["prompt_tokens"])
        index.extend(out[:1])

        def step(emitted, more, index=index):
            index.extend(emitted)
            return index.propose() if more and gamma else []
        first = index.propose() if gamma else []
        p, a = walk_request(out, bool(row["ended_by_stop"]), first, step)
        proposed.append(p)
        accepted.append(a)
    return Walks(tuple(proposed), tuple(accepted), tuple(frame["workload"].astype(str)))


def summarize(walks: Walks, workload: str | None = None, tail=(4, 8, 16)) -> dict:
    """Mean accepted length per step, proposal rate, the accepted-length tail P(τ ≥ k) and the share of
    accepted tokens from steps accepting ≥ 8 (burstiness)."""
    proposed, accepted = walks.steps(workload)
    if not len(accepted):
        return {"steps": 0}
    out = {"steps": int(len(accepted)), "mean_accepted": float(accepted.mean()),
           "mean_proposed": float(proposed.mean()), "proposal_rate": float((proposed > 0).mean()),
           "tokens_per_step": float(accepted.mean() + 1.0)}
    for k in tail:
        out[f"p_tau_ge_{k}"] = float((accepted >= k).mean())
    out["share_of_accepted_from_tau_ge_8"] = float(accepted[accepted >= 8].sum() / max(1, accepted.sum()))
    return out
