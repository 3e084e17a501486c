"""Acceptance-trace format, parquet I/O and the helpers that turn a trace into accepted lengths.

One row = one generated token position of one measured sequence (greedy target generation). Positions
are in tokens; probabilities are plain probabilities (not logs) of the model's softmax at the stated
temperature; all of a row's quantities are conditioned on the same context: the prompt plus the target's
own greedy tokens before this position.

Columns (per row):
  seq                int32   sequence index in the trace (0, 1, …), rows of a sequence are contiguous
  prompt_id, kind    string  prompt identifier; "code" or "text"
  pos                int32   index of this token in the generated text (0 = first generated token)
  context_tokens     int32   tokens before this position (prompt tokens + pos)
  target_token       int32   the target's greedy token here
  target_top1_prob   float32 target probability of that token at T = 1
  target_entropy_nats float32 entropy of the target distribution at T = 1, in nats
  max_accept         int32   most draft tokens a step starting here can accept: tokens left − 1 when the
                             sequence was cut at max_new_tokens, tokens left when it ended with a stop
                             token (an accepted stop token ends the request; no bonus token follows)
For each model drafter D in MODEL_DRAFTERS ("draft": the small draft model; "skip": the target with a
subset of layers skipped, with its own KV cache):
  D_top_tokens       list<int32>[K]  the drafter's K most probable tokens at T = 1, descending
  D_top_probs        list<float32>[K] their drafter probabilities q at T = 1
  D_target_probs     list<float32>[K] the target probabilities p of the same tokens at T = 1
  D_rank             int32   rank of target_token in the drafter's distribution (0 = drafter's argmax;
                             number of tokens with strictly larger drafter logit)
  D_q_target         float32 drafter probability of target_token at T = 1
  D_beta_tXXX        float32 β = Σ_v min(p_T(v), q_T(v)) with both models at temperature T = XXX/100
For the prompt-lookup drafter ("ngram"):
  ngram_proposal_len int32   tokens it proposes here (0 = no n-gram match)
  ngram_match_len    int32   leading proposed tokens equal to the target's next tokens

Trace-level metadata (models, sha256s, settings, prompt texts) is stored as JSON under the parquet
schema key b"draftsim_trace" and comes back as `trace.attrs["meta"]`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from models.errors import UnknownNameError
from profiles.acceptance.parquet_meta import read_with_meta, write_with_meta

MODEL_DRAFTERS = ("draft", "skip")
DRAFTERS = MODEL_DRAFTERS + ("ngram",)
TEMPERATURES = (0.25, 0.5, 0.75, 1.0, 1.5)
META_KEY = b"draftsim_trace"
BASE_COLUMNS = ("seq", "prompt_id", "kind", "pos", "context_tokens", "target_token", "target_top1_prob",
                "target_entropy_nats", "max_accept")


def beta_column(drafter: str, temperature: float) -> str:
    return f"{drafter}_beta_t{int(round(temperature * 100)):03d}"


def drafter_columns(drafter: str) -> tuple[str, ...]:
    if drafter == "ngram":
        return ("ngram_proposal_len", "ngram_match_len")
    return (f"{drafter}_top_tokens", f"{drafter}_top_probs", f"{drafter}_target_probs", f"{drafter}_rank",
            f"{drafter}_q_target") + tuple(beta_column(drafter, t) for t in TEMPERATURES)


def _check_drafter(trace: pd.DataFrame, drafter: str) -> None:
    if drafter not in DRAFTERS:
        raise UnknownNameError("drafter", drafter, DRAFTERS)
    missing = [c for c in drafter_columns(drafter) if c not in trace.columns]
    if missing:
        raise ValueError(f"trace has no columns for drafter {drafter!r} (missing {missing[:3]})")


def validate(trace: pd.DataFrame) -> None:
    """Raise ValueError unless `trace` has the base columns and contiguous, 0-based positions per seq."""
    missing = [c for c in BASE_COLUMNS if c not in trace.columns]
    if missing:
        raise ValueError(f"trace lacks columns {missing}")
    seq = trace["seq"].to_numpy()
    pos = trace["pos"].to_numpy()
    starts = np.r_[True, seq[1:] != seq[:-1]]
    expected = np.arange(len(pos)) - np.maximum.accumulate(np.where(starts, np.arange(len(pos)), 0))
    if len(pos) and (not np.array_equal(pos, expected) or len(np.unique(seq[starts])) != starts.sum()):
        raise ValueError("trace rows must be grouped by seq with pos = 0, 1, 2, … inside each sequence")
    _check_values(trace)


# column -> (low, high) of its values (None: unbounded); β and probabilities in [0, 1], counts and ranks >= 0.
# A negative max_accept walked a sequence backwards (an IndexError, or for -1 a walk that never ends), a
# negative rank accepted every draft and a β of 2 or NaN was an acceptance probability, silently.
_VALUE_RANGES = {"max_accept": (0, None), "context_tokens": (0, None), "ngram_proposal_len": (0, None),
                 "ngram_match_len": (0, None),
                 **{f"{d}_rank": (0, None) for d in MODEL_DRAFTERS},
                 **{f"{d}_q_target": (0.0, 1.0) for d in MODEL_DRAFTERS},
                 **{beta_column(d, t): (0.0, 1.0) for d in MODEL_DRAFTERS for t in TEMPERATURES}}


_FLOAT32_ROUNDING = 1e-5   # a measured β of float32 sums reads 1.0000001 where it is 1


def _check_values(trace: pd.DataFrame) -> None:
    """ValueError naming the first column not of numbers (of integers where the range's low end is an int), or
    the column and row of the first value outside its range (`_VALUE_RANGES`). Parquet columns are typed: text
    numbers ('3') were compared as text ('3' > '10') or a TypeError where they were used."""
    for column, (low, high) in _VALUE_RANGES.items():
        if column not in trace.columns:
            continue
        dtype, integer = trace[column].dtype, isinstance(low, int)
        if pd.api.types.is_bool_dtype(dtype) or not (pd.api.types.is_integer_dtype(dtype) if integer
                                                     else pd.api.types.is_numeric_dtype(dtype)):
            raise ValueError(f"column {column!r} holds {dtype} values; it must be a column of "
                             f"{'integers' if integer else 'numbers'}")
        values = trace[column].to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(values) | (values < low) | ((values > high + _FLOAT32_ROUNDING) if high is not None else False)
        if bad.any():
            i = int(np.argmax(bad))
            allowed = f"in [{low:g}, {high:g}]" if high is not None else f">= {low}"
            raise ValueError(f"column {column!r}, row {i}: {values[i]:g} is not allowed; expected a finite number "
                             f"{allowed}")
    if "ngram_match_len" in trace.columns and "ngram_proposal_len" in trace.columns:
        over = trace["ngram_match_len"].to_numpy() > trace["ngram_proposal_len"].to_numpy()
        if over.any():
            i = int(np.argmax(over))
            raise ValueError(f"column 'ngram_match_len', row {i}: {trace['ngram_match_len'].iloc[i]} matched tokens "
                             f"of {trace['ngram_proposal_len'].iloc[i]} proposed; expected at most the proposal")


def write_trace(trace: pd.DataFrame, path: str | Path, meta: dict) -> None:
    """Write `trace` as parquet with `meta` (JSON-serializable) in the schema metadata (atomic rename)."""
    validate(trace)
    write_with_meta(trace, path, META_KEY, meta)


def load_trace(path: str | Path) -> pd.DataFrame:
    """Read a trace written by `write_trace`; metadata in `.attrs["meta"]`."""
    trace = read_with_meta(path, META_KEY, "trace path")
    validate(trace)
    if trace.empty:   # (a sampled walk's window over no β was a NumPy ValueError traceback)
        raise ValueError("the trace has no rows")
    return trace


def hits(trace: pd.DataFrame, drafter: str, width: int = 1) -> np.ndarray:
    """Per row: would the drafter's proposal at this position contain the target token? For model
    drafters: rank < width (width 1 = greedy chain). Not defined for the n-gram drafter (its proposals
    depend on where a chain starts; see `accepted_lengths`)."""
    _check_drafter(trace, drafter)
    if drafter == "ngram":
        raise ValueError("hits are per-position for model drafters only; use accepted_lengths for 'ngram'")
    return trace[f"{drafter}_rank"].to_numpy() < width


def _run_lengths(ok: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """run[i] = number of consecutive True values from row i on, within row i's sequence."""
    run = np.zeros(len(ok), dtype=np.int64)
    for i in range(len(ok) - 1, -1, -1):
        after = run[i + 1] if i + 1 < len(ok) and seq[i + 1] == seq[i] else 0
        run[i] = after + 1 if ok[i] else 0
    return run


def accepted_lengths(trace: pd.DataFrame, gamma: int, drafter: str = "draft") -> np.ndarray:
    """Per row: accepted draft tokens τ (bonus token excluded) of a greedy γ-chain that starts at this
    position: min(γ, max_accept, consecutive drafter hits from here) for model drafters, and
    min(γ, max_accept, ngram_match_len) for the n-gram drafter."""
    if int(gamma) != gamma or gamma < 0:
        raise ValueError(f"gamma must be an integer >= 0, got {gamma}")
    _check_drafter(trace, drafter)
    cap = np.minimum(trace["max_accept"].to_numpy(), gamma)
    if drafter == "ngram":
        return np.minimum(trace["ngram_match_len"].to_numpy(), cap)
    return np.minimum(_run_lengths(hits(trace, drafter), trace["seq"].to_numpy()), cap)


def tree_accepted_lengths(trace: pd.DataFrame, widths: Sequence[int], drafter: str = "draft") -> np.ndarray:
    """Per row: accepted depth of a full tree whose nodes at depth d (1-based) have the drafter's top
    widths[d-1] tokens as children, under greedy verification. Exact for such trees, because the accepted
    path is the target's own text, where the trace holds the drafter's ranks."""
    widths = [int(w) for w in widths]
    if not widths or min(widths) < 1:
        raise ValueError(f"widths must be a non-empty list of integers >= 1, got {widths}")
    _check_drafter(trace, drafter)
    if drafter == "ngram":
        raise ValueError("tree acceptance needs drafter ranks; the 'ngram' drafter has none")
    rank, seq = trace[f"{drafter}_rank"].to_numpy(), trace["seq"].to_numpy()
    cap = np.minimum(trace["max_accept"].to_numpy(), len(widths))
    n = len(rank)
    depth = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    for d, width in enumerate(widths):
        j = np.arange(n) + d
        inside = j < n
        ok = np.zeros(n, dtype=bool)
        ok[inside] = (seq[j[inside]] == seq[inside]) & (rank[j[inside]] < width)
        alive &= ok & (d < cap)
        depth += alive
    return depth


def walk_rows(trace: pd.DataFrame, gamma: int, drafter: str = "draft") -> np.ndarray:
    """Row index of each step a greedy speculative decoder takes through each sequence: start at pos 0,
    accept τ = accepted_lengths[pos], move to pos + τ + 1; all sequences' steps concatenated."""
    tau = accepted_lengths(trace, gamma, drafter)
    seq = trace["seq"].to_numpy()
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])
    ends = np.r_[starts[1:], len(seq)]
    rows = []
    for start, end in zip(starts, ends):
        i = start
        while i < end:
            rows.append(i)
            i += tau[i] + 1
    return np.asarray(rows, dtype=np.int64)


def walk_accepted(trace: pd.DataFrame, gamma: int, drafter: str = "draft") -> np.ndarray:
    """Accepted lengths of the steps of `walk_rows`."""
    return accepted_lengths(trace, gamma, drafter)[walk_rows(trace, gamma, drafter)].astype(np.int64)


def walk_proposed(trace: pd.DataFrame, gamma: int) -> np.ndarray:
    """Draft tokens the n-gram drafter proposes at each step of `walk_rows` (0: no match), at most γ."""
    rows = walk_rows(trace, gamma, "ngram")
    return np.minimum(trace["ngram_proposal_len"].to_numpy()[rows], gamma).astype(np.int64)


def empirical_mean_accepted(trace: pd.DataFrame, gamma: int, drafter: str = "draft") -> float:
    """Mean accepted length per step of a real greedy speculative decoder over the trace's texts
    (= mean of `walk_accepted`); tokens per step = this + 1."""
    steps = walk_accepted(trace, gamma, drafter)
    if not len(steps):
        raise ValueError("trace has no rows")
    return float(steps.mean())


def beta(trace: pd.DataFrame, drafter: str = "draft", temperature: float = 1.0) -> np.ndarray:
    """Per-position β = Σ min(p, q) at `temperature` (one of TEMPERATURES: the column name rounds the
    temperature to hundredths, so any other value was read as its neighbour, 0.995 as 1.0, silently)."""
    _check_drafter(trace, drafter)
    col = beta_column(drafter, temperature)
    if temperature not in TEMPERATURES or col not in trace.columns:
        raise ValueError(f"temperature must be one of {TEMPERATURES}, got {temperature}")
    return trace[col].to_numpy()


def branch_ranks(trace: pd.DataFrame, drafter: str = "draft") -> np.ndarray:
    """Per-position rank of the target's token among the drafter's candidates (0 = the drafter's argmax)."""
    _check_drafter(trace, drafter)
    if drafter == "ngram":
        raise ValueError("the 'ngram' drafter has no ranks")
    return trace[f"{drafter}_rank"].to_numpy()


def agreement(trace: pd.DataFrame, drafter: str = "draft") -> float:
    """Per-token agreement: fraction of positions where the drafter's argmax is the target's token."""
    return float(hits(trace, drafter).mean())


def summary(trace: pd.DataFrame, gammas: Sequence[int] = tuple(range(1, 9))) -> dict:
    """Headline figures per drafter present: agreement, mean β at T = 1, mean accepted length per γ."""
    out = {"rows": int(len(trace)), "sequences": int(trace["seq"].nunique())}
    for drafter in DRAFTERS:
        if not all(c in trace.columns for c in drafter_columns(drafter)):
            continue
        entry = {"mean_accepted": {int(g): empirical_mean_accepted(trace, g, drafter) for g in gammas}}
        if drafter != "ngram":
            entry["agreement"] = agreement(trace, drafter)
            entry["mean_beta_t1"] = float(beta(trace, drafter, 1.0).mean())
        else:
            entry["proposal_rate"] = float((trace["ngram_proposal_len"].to_numpy() > 0).mean())
        out[drafter] = entry
    return out


def confidence_classes(trace: pd.DataFrame, drafter: str, edges: Sequence[float], max_rank: int = 8):
    """Context classes by the drafter's confidence (its top-1 probability at T = 1, EAGLE-2's reranking
    signal): positions with top-1 probability in [edges[i-1], edges[i]) form class i (edges ascending in
    (0, 1); the first class starts at 0, the last ends at 1). Returns (weights, rows): the share of
    positions in each class and, per class, the empirical P(the target's token has drafter rank k),
    k < max_rank. Empty classes are dropped."""
    if drafter not in MODEL_DRAFTERS:
        raise UnknownNameError("model drafter", drafter, MODEL_DRAFTERS)
    edges = np.asarray(edges, dtype=np.float64)
    if edges.ndim != 1 or np.any(np.diff(edges) <= 0) or np.any((edges <= 0) | (edges >= 1)):
        raise ValueError("edges must be ascending values in (0, 1)")
    top1 = np.array([float(v[0]) for v in trace[f"{drafter}_top_probs"]])
    rank = trace[f"{drafter}_rank"].to_numpy()
    cls = np.searchsorted(edges, top1, side="right")
    weights, rows = [], []
    for c in range(len(edges) + 1):
        inside = cls == c
        if inside.any():
            weights.append(float(inside.mean()))
            rows.append([float((rank[inside] == k).mean()) for k in range(max_rank)])
    return weights, rows
