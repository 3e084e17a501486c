"""Acceptance driven by a measured trace (profiles/acceptance): greedy chain speculation.

Each simulated request is assigned one measured sequence (bootstrap by request: a seeded hash of the
request id picks it). A real greedy speculative decoder walking through that sequence takes steps with
accepted lengths τ_0, τ_1, … (`profiles.acceptance.trace.walk_accepted` for one sequence: start at
position 0, accept τ = accepted_lengths[pos], move to pos + τ + 1). The request's k-th speculative step
gets τ_{k mod L}: the walk restarts from the top when a simulated request outlives its measured text.

Approximations (documented here, where they are made):
- the first decode step reads the walk's first step (position 0), although the prefill already produced
  the first token: the walk is the trace's own, so the simulated mean accepted length equals the trace's
  empirical mean accepted length (checked within 2 % by the tests) rather than a shifted variant;
- a request longer than its sequence repeats the sequence's walk (wrap-around).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.acceptance import counter_uniforms
from simulator.errors import ScenarioError

SHIPPED_TRACES = Path(__file__).resolve().parent.parent / "profiles" / "data" / "acceptance"


@dataclass(frozen=True)
class TraceChainAcceptance:
    """τ per (request, step index) from per-sequence walks concatenated in `flat`."""

    gamma: int
    seed: int
    flat: np.ndarray     # all sequences' walk τ values, concatenated
    starts: np.ndarray   # (S,) offset of each sequence's walk in `flat`
    lengths: np.ndarray  # (S,) steps in each sequence's walk (≥ 1)

    def sequence_of(self, request_ids: np.ndarray) -> np.ndarray:
        u = counter_uniforms(self.seed, np.asarray(request_ids), np.zeros(1, dtype=np.int64))
        return np.minimum((u * len(self.starts)).astype(np.int64), len(self.starts) - 1)

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        seq = self.sequence_of(request_ids)
        return self.flat[self.starts[seq] + step_index % self.lengths[seq]]

    def expected_accepted(self) -> float:
        """Mean τ when every sequence is equally likely and its walk is read in full."""
        return float(np.mean([self.flat[a:a + n].mean() for a, n in zip(self.starts, self.lengths)]))


def resolve_trace_path(name_or_path: str, base_dir: Path) -> Path:
    """A path relative to the scenario, an absolute path, or the name of a shipped trace."""
    for candidate in (base_dir / name_or_path, Path(name_or_path), SHIPPED_TRACES / name_or_path,
                      SHIPPED_TRACES / f"{name_or_path}.parquet"):
        if candidate.is_file():
            return candidate
    shipped = sorted(p.stem for p in SHIPPED_TRACES.glob("*.parquet"))
    raise ScenarioError("acceptance.trace", f"no trace file {name_or_path!r} (relative to the scenario, "
                                            f"absolute, or shipped: {', '.join(shipped) or 'none'})")


def load_trace_acceptance(name_or_path: str, drafter: str, gamma: int, seed: int,
                          base_dir: Path) -> TraceChainAcceptance:
    from profiles.acceptance.trace import load_trace, walk_accepted

    path = resolve_trace_path(name_or_path, base_dir)
    try:
        trace = load_trace(path)
        walks = [walk_accepted(rows, gamma, drafter) for _, rows in trace.groupby("seq", sort=False)]
    except ValueError as exc:
        raise ScenarioError("acceptance.trace", f"{path}: {exc}") from None
    if not walks:
        raise ScenarioError("acceptance.trace", f"{path}: the trace has no rows")
    lengths = np.array([len(w) for w in walks], dtype=np.int64)
    return TraceChainAcceptance(gamma, seed, np.concatenate(walks).astype(np.int64),
                                np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64), lengths)
