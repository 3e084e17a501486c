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

from simulator.speculation.acceptance import AcceptanceModel, counter_uniforms
from simulator.errors import ScenarioError

SHIPPED_TRACES = Path(__file__).resolve().parents[2] / "profiles" / "data" / "acceptance"


def assign_sequences(seed: int, request_ids: np.ndarray, num_sequences: int) -> np.ndarray:
    """Bootstrap by request: a seeded hash of each request id picks one of the trace's sequences."""
    u = counter_uniforms(seed, np.asarray(request_ids), np.zeros(1, dtype=np.int64))
    return np.minimum((u * num_sequences).astype(np.int64), num_sequences - 1)


@dataclass(frozen=True)
class TraceChainAcceptance(AcceptanceModel):
    """τ per (request, step index) from per-sequence walks concatenated in `flat`."""

    depth: int   # = γ, the chain's length
    seed: int
    flat: np.ndarray     # all sequences' walk τ values, concatenated
    starts: np.ndarray   # (S,) offset of each sequence's walk in `flat`
    lengths: np.ndarray  # (S,) steps in each sequence's walk (≥ 1)
    proposed: np.ndarray | None = None  # draft tokens proposed at each walk step (n-gram drafter), like `flat`

    def sequence_of(self, request_ids: np.ndarray) -> np.ndarray:
        return assign_sequences(self.seed, request_ids, len(self.starts))

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        seq = self.sequence_of(request_ids)
        return self.flat[self.starts[seq] + step_index % self.lengths[seq]]

    def proposed_counts(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        """Draft tokens proposed at each request's `step_index`-th step (the walk step `tau` reads)."""
        seq = self.sequence_of(request_ids)
        return self.proposed[self.starts[seq] + step_index % self.lengths[seq]]

    def expected_accepted(self) -> float:
        """Mean τ when every sequence is equally likely and its walk is read in full."""
        return float(np.mean([self.flat[a:a + n].mean() for a, n in zip(self.starts, self.lengths)]))

    def full_accept_probability(self) -> float:
        return float(np.mean(self.flat == self.depth)) if self.depth else 1.0


def resolve_data_file(name_or_path: str, base_dir: Path, shipped_dir: Path, field: str, what: str) -> Path:
    """A parquet data file named in a scenario: a path relative to the scenario, an absolute path, or the
    name of one shipped in `shipped_dir` (with or without `.parquet`); else a ScenarioError on `field`
    naming `what` and the shipped ones."""
    for candidate in (base_dir / name_or_path, Path(name_or_path), shipped_dir / name_or_path,
                      shipped_dir / f"{name_or_path}.parquet"):
        if candidate.is_file():
            return candidate
    shipped = sorted(p.stem for p in shipped_dir.glob("*.parquet"))
    raise ScenarioError(field, f"no {what} {name_or_path!r} (relative to the scenario, "
                               f"absolute, or shipped: {', '.join(shipped) or 'none'})")


def resolve_trace_path(name_or_path: str, base_dir: Path) -> Path:
    """A path relative to the scenario, an absolute path, or the name of a shipped trace."""
    return resolve_data_file(name_or_path, base_dir, SHIPPED_TRACES, "acceptance.trace", "trace file")


def load_trace_acceptance(name_or_path: str, drafter: str, gamma: int, seed: int,
                          base_dir: Path) -> TraceChainAcceptance:
    from profiles.acceptance.trace import load_trace, walk_accepted, walk_proposed

    path = resolve_trace_path(name_or_path, base_dir)
    try:
        trace = load_trace(path)
        groups = [rows for _, rows in trace.groupby("seq", sort=False)]
        walks = [walk_accepted(rows, gamma, drafter) for rows in groups]
        proposed = np.concatenate([walk_proposed(rows, gamma) for rows in groups]) if drafter == "ngram" and groups \
            else None
    except ValueError as exc:
        raise ScenarioError("acceptance.trace", f"{path}: {exc}") from None
    if not walks:
        raise ScenarioError("acceptance.trace", f"{path}: the trace has no rows")
    lengths = np.array([len(w) for w in walks], dtype=np.int64)
    return TraceChainAcceptance(gamma, seed, np.concatenate(walks).astype(np.int64),
                                np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64), lengths, proposed)


@dataclass(frozen=True)
class TraceSampledAcceptance(AcceptanceModel):
    """Sampling-mode acceptance from a trace's per-position β = Σ min(p, q) at a temperature.

    A request walks its assigned sequence: at text position p (= tokens emitted since its first token),
    draft token j is accepted with probability β[p + j] given tokens before it were accepted (the
    per-token acceptance of speculative sampling at that context), so τ = the number of leading
    accepted drafts, and the walk moves to p + τ + 1. Approximations: the context is the target's greedy
    text of the trace rather than a sampled one (β is measured there); positions past the end of the
    sequence wrap around (the text is treated as cyclic, so end-of-text caps do not apply).
    """

    depth: int   # = γ, the chain's length
    seed: int
    beta: np.ndarray     # all sequences' per-position β, concatenated
    counter_based = False   # its draws walk the trace from the tokens emitted
    starts: np.ndarray   # (S,)
    lengths: np.ndarray  # (S,)

    def sequence_of(self, request_ids: np.ndarray) -> np.ndarray:
        return assign_sequences(self.seed, request_ids, len(self.starts))

    def full_accept_probability(self) -> float:
        """Mean over positions of Π β over a whole draft window."""
        if self.depth == 0:
            return 1.0
        windows = np.lib.stride_tricks.sliding_window_view(self.beta, self.depth)
        return float(np.prod(windows, axis=1).mean())

    def predicted_rows(self, request_ids: np.ndarray, emitted: np.ndarray, length: int) -> np.ndarray:
        """The measured β at each request's next positions."""
        seq = self.sequence_of(request_ids)
        idx = self.starts[seq][:, None] + (emitted[:, None] - 1 + np.arange(length)) % self.lengths[seq][:, None]
        return self.beta[idx]

    def draw(self, request_ids: np.ndarray, step_index: np.ndarray, emitted: np.ndarray) -> np.ndarray:
        return self.draws(request_ids, step_index, emitted, 1)[0]

    def draws(self, request_ids: np.ndarray, step_index: np.ndarray, emitted: np.ndarray,
              steps: int) -> np.ndarray:
        """τ of `steps` consecutive speculative steps of each request, shape (steps, B), starting at
        step `step_index` with `emitted` tokens emitted."""
        seq = self.sequence_of(request_ids)
        start, length = self.starts[seq], self.lengths[seq]
        pos = emitted - 1
        j = np.arange(self.depth)
        out = np.empty((steps, len(request_ids)), dtype=np.int64)
        for k in range(steps):
            rows = start[:, None] + (pos[:, None] + j) % length[:, None]
            u = counter_uniforms(self.seed, request_ids[:, None], (step_index[:, None] + k) * self.depth + j)
            accepted = u < self.beta[rows]
            tau = np.where(accepted.all(axis=1), self.depth, accepted.argmin(axis=1))
            out[k] = tau
            pos = pos + tau + 1
        return out


def load_trace_sampled_acceptance(name_or_path: str, drafter: str, temperature: float, gamma: int,
                                  seed: int, base_dir: Path) -> TraceSampledAcceptance:
    from profiles.acceptance.trace import TEMPERATURES, beta, load_trace

    if temperature not in TEMPERATURES:   # (before reading the trace: the field, not the file, is at fault)
        raise ScenarioError("acceptance.temperature", f"must be one of {', '.join(map(str, TEMPERATURES))} (the "
                            f"temperatures traces measure β at), got {temperature}")
    path = resolve_trace_path(name_or_path, base_dir)
    try:
        trace = load_trace(path)
        values = beta(trace, drafter, temperature)
    except ValueError as exc:
        raise ScenarioError("acceptance", f"{path}: {exc}") from None
    seq = trace["seq"].to_numpy()
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])
    lengths = np.diff(np.r_[starts, len(seq)])
    return TraceSampledAcceptance(gamma, seed, np.asarray(values, dtype=np.float64), starts, lengths)
