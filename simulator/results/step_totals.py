"""What the summary reads from the step log, accumulated while the run goes: exact sums per replica.

The step log may keep every step, a sample or per-interval aggregates (`outputs.steps`); the summary must
be the same whichever is kept, and whether steps were logged one by one or in bulks. So the sums it
needs are accumulated as the steps are logged, batch by batch, and exactly: `ExactSum` holds a float64
sum as an integer (every float64 is an integer multiple of 2**-1126), so the result does not depend on
the order or grouping of the additions, and `value()` is the correctly rounded sum. (numpy's pairwise
sums, used before, differ from it in the last bits; the summary's 12 significant digits hide that.)

Busy time of a step is clipped to the measured window [first arrival, end of the run]; no step ends
after the run's end or starts before the first arrival, so it is `min(end, inf) - max(start, first
arrival)`, computed the same way from a finished frame (`StepTotals.from_frame`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping

import numpy as np

_SCALE_BITS = 1126           # 2**-1126: the last bit of the smallest subnormal's frexp mantissa
_MANTISSA = float(2 ** 53)
_HALF = 26


def _exact_parts(values: np.ndarray, groups: np.ndarray | None, num_groups: int) -> list[int]:
    """Per group, the exact sum of `values` as an integer in units of 2**-1126 (groups: indices 0..n-1)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return [0] * num_groups
    scales = _split_scales(values)
    if scales is None:
        return _exact_parts_by_exponent(values, groups, num_groups)
    if scales == ():
        return [0] * num_groups
    # each value v = high + rest with high a multiple of 2**s (v rounded there by adding and taking away 1.5 *
    # 2**(s + 52), whose last bit is 2**s) and rest = v - high, a multiple of 2**u: all exact, and so is any sum
    # of them in any order (multiples of 2**s, resp. 2**u, below 2**53 of them: _split_scales)
    s, u = scales
    magic = math.ldexp(1.5, s + 52)
    high = values + magic
    high -= magic
    rest = values - high
    if groups is None:
        high_sums, rest_sums = [float(high.sum())], [float(rest.sum())]
    else:
        high_sums = np.bincount(groups, weights=high, minlength=num_groups).tolist()
        rest_sums = np.bincount(groups, weights=rest, minlength=num_groups).tolist()
    return [(int(math.ldexp(h, -s)) << (s + _SCALE_BITS)) + (int(math.ldexp(r, -u)) << (u + _SCALE_BITS))
            for h, r in zip(high_sums, rest_sums)]


def _split_scales(values: np.ndarray) -> tuple[int, int] | tuple[()] | None:
    """(s, u) such that every value splits exactly into a multiple of 2**s and a rest that is a multiple of
    2**u, with at most 2**53 units in any sum of either part over `values`; () when every value is zero; None
    when none exists (magnitudes over more than 54 - 2·log2(n) binades, about 20 for a flush of 65,536 steps;
    a value that is not finite; one near the float64 range's ends)."""
    least, most = float(values.min()), float(values.max())
    if least > 0:
        small, big = least, most
    else:
        magnitude = np.abs(values)
        big = float(magnitude.max())
        if big == 0:
            return ()
        if not math.isfinite(big):
            return None
        small = float(np.min(magnitude, where=magnitude > 0, initial=math.inf))
    if not math.isfinite(big):
        return None
    least_exp, most_exp = math.frexp(small)[1] - 1, math.frexp(big)[1] - 1   # 2**e <= |v| < 2**(e + 1)
    count_bits = max(2, (len(values) - 1).bit_length())   # n <= 2**count_bits
    # every nonzero value is a multiple of u = 2**(least_exp - 52); a rest (|rest| <= 2**(s - 1)) sums to at most
    # n * 2**(s - 1) <= 2**53 * 2**u with this s, and the highs (|high| < 2**(most_exp + 1) + 2**(s - 1)) to at most
    # 2**53 * 2**s when most_exp + 1 + count_bits <= s + 52 (which also keeps |v| <= 2**(s + 51), where adding
    # 1.5 * 2**(s + 52) rounds to a multiple of 2**s)
    s = least_exp + 2 - count_bits
    if most_exp + 1 + count_bits > s + 52 or not -1000 <= s <= 960:
        return None
    return s, least_exp - 52


def _exact_parts_by_exponent(values: np.ndarray, groups: np.ndarray | None, num_groups: int) -> list[int]:
    """`_exact_parts` for any values: the mantissas summed in bins of (group, binary exponent)."""
    mantissa, exponent = np.frexp(values)
    whole = (mantissa * _MANTISSA).astype(np.int64)       # exact: |m| < 1 has 53 significant bits
    low = exponent.min()
    span = int(exponent.max() - low) + 1
    key = exponent - low if groups is None else groups * span + (exponent - low)
    size = span * num_groups
    high_sums = np.bincount(key, weights=whole >> _HALF, minlength=size)   # exact: < 2**53
    low_sums = np.bincount(key, weights=whole & ((1 << _HALF) - 1), minlength=size)
    out = [0] * num_groups
    nonzero = np.flatnonzero((high_sums != 0) | (low_sums != 0)).tolist()
    highs, lows = high_sums[nonzero].tolist(), low_sums[nonzero].tolist()
    for index, hi, lo in zip(nonzero, highs, lows):
        group, e = divmod(index, span)
        shift = int(e + low) - 53 + _SCALE_BITS
        out[group] += ((int(hi) << _HALF) + int(lo)) << shift
    return out


def _ratio_where_positive(numerator: np.ndarray, denominator: np.ndarray, otherwise: float) -> np.ndarray:
    """numerator / denominator where the denominator is positive, else `otherwise` (per step); without np.where
    when every denominator is (the common case: a third of the instructions, the same values)."""
    positive = denominator > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        if positive.all():
            return numerator / denominator
        return np.where(positive, numerator / denominator, otherwise)


def exact_value(units: int) -> float:
    """The float64 nearest to an exact sum held in units of 2**-1126."""
    return units / (1 << _SCALE_BITS)


def exact_sum(values: np.ndarray) -> float:
    """The correctly rounded sum of float64 values (independent of their order)."""
    return exact_value(_exact_parts(values, None, 1)[0])


class StepTotals:
    """Exact sums over the logged steps, per replica where the summary needs it (module docstring)."""

    PER_REPLICA = ("busy_s",)
    GLOBAL = ("duration_s", "flops", "bytes", "draft_s", "engine_s", "alltoall_s", "kv_io_s", "kv_weighted_s",
              "kv_duration_s", "in_system_busy_s", "energy_above_idle_j")

    def __init__(self, num_replicas: int, window_start_s: float, power=None):
        self.num_replicas = num_replicas
        self.window_start_s = window_start_s
        self.power = power      # simulator.results.energy.RunPower: steps' energy above idle (None: not counted)
        self.steps = 0
        self.kv_max = math.nan
        self._busy = [0] * num_replicas
        self._sums = dict.fromkeys(self.GLOBAL, 0)
        self.has_alltoall = False

    def add(self, cols: Mapping[str, np.ndarray], window_end_s: float = math.inf) -> None:
        """Add a batch of steps (columns as in simulator.results.metrics.STEP_COLUMNS; `alltoall_s`
        optional)."""
        start = np.asarray(cols["start_s"], dtype=np.float64)
        if not len(start):
            return
        duration = np.asarray(cols["duration_s"], dtype=np.float64)
        busy = np.clip(np.minimum(start + duration, window_end_s) - np.maximum(start, self.window_start_s), 0.0, None)
        replica = np.asarray(cols["replica"], dtype=np.int64)
        if replica.min() < 0 or replica.max() >= self.num_replicas:
            raise ValueError(f"summarize: step replica ids must lie in 0..{self.num_replicas - 1}")
        for i, part in enumerate(_exact_parts(busy, replica, self.num_replicas)):
            self._busy[i] += part
        kv = _ratio_where_positive(np.asarray(cols["kv_blocks_used"], dtype=np.float64),
                                   np.asarray(cols["kv_blocks_total"], dtype=np.float64), np.nan)
        has_kv = np.isfinite(kv)
        every_kv = bool(has_kv.all())   # (the common case: no copies of the steps with KV)
        kv_known, duration_known = (kv, duration) if every_kv else (kv[has_kv], duration[has_kv])
        in_system = np.asarray(cols["queued_requests"], dtype=np.float64) + np.asarray(cols["running_requests"],
                                                                                      dtype=np.float64)
        parts = {"duration_s": duration, "flops": cols["flops"], "bytes": cols["bytes"], "draft_s": cols["draft_s"],
                 "engine_s": cols["engine_s"], "kv_weighted_s": kv_known * duration_known,
                 "kv_duration_s": duration_known, "in_system_busy_s": in_system * busy}
        if "alltoall_s" in cols:
            parts["alltoall_s"] = cols["alltoall_s"]
            self.has_alltoall = True
        if "kv_io_s" in cols:
            parts["kv_io_s"] = cols["kv_io_s"]
        if self.power is not None:
            inside = _ratio_where_positive(busy, duration, 0.0)
            device = np.asarray(cols["draft_s"], dtype=np.float64) + np.asarray(cols["verify_s"], dtype=np.float64)
            parts["energy_above_idle_j"] = self.power.above_idle_j(
                replica, device, np.asarray(cols["flops"], dtype=np.float64), np.asarray(cols["bytes"], dtype=np.float64),
                inside)
        sums_of = {}   # exact sums by array (kv_duration_s is duration itself when every step's KV is known)
        for name, values in parts.items():
            if id(values) not in sums_of:
                sums_of[id(values)] = _exact_parts(values, None, 1)[0]
            self._sums[name] += sums_of[id(values)]
        if every_kv or has_kv.any():
            top = float(kv_known.max())
            self.kv_max = top if math.isnan(self.kv_max) else max(self.kv_max, top)
        self.steps += len(start)

    def merge(self, other: "StepTotals") -> None:
        """Add the totals of steps logged apart (another process's replicas): the sums are exact."""
        self._busy = [a + b for a, b in zip(self._busy, other._busy)]
        for name, value in other._sums.items():
            self._sums[name] += value
        if not math.isnan(other.kv_max):
            self.kv_max = other.kv_max if math.isnan(self.kv_max) else max(self.kv_max, other.kv_max)
        self.steps += other.steps
        self.has_alltoall = self.has_alltoall or other.has_alltoall

    @staticmethod
    def from_frame(steps, num_replicas: int, window_start_s: float, window_end_s: float, power=None) -> "StepTotals":
        """The totals of a finished step frame (every step of a run)."""
        totals = StepTotals(num_replicas, window_start_s, power)
        cols = {name: steps[name].to_numpy() for name in steps.columns}
        totals.add(cols, window_end_s)
        return totals

    def sum(self, name: str) -> float:
        return exact_value(self._sums[name])

    def busy_per_replica(self) -> np.ndarray:
        return np.array([exact_value(b) for b in self._busy])

    def busy_weighted(self, weights: np.ndarray) -> float:
        """Σ over replicas of weight × busy time, exactly (weights: float64 per replica)."""
        units = sum((Fraction(b) * Fraction(w) for b, w in zip(self._busy, np.asarray(weights, dtype=np.float64).tolist())),
                    Fraction(0))
        return float(units / (1 << _SCALE_BITS))


def replica_time_order(replica: np.ndarray, start_s: np.ndarray) -> np.ndarray:
    """The steps sorted by replica, then start (ties in append order): np.lexsort((start_s, replica)), as a
    stable sort by replica (numpy does it as a radix sort on int16 keys) and then, replica by replica, a stable
    sort by start; all sorts stable, it is the same permutation. A replica's steps come in a few runs already in
    time order (its bulks of decode steps, then its single steps), which the sort by start (a timsort) merges
    in about a pass: a tenth fewer instructions than sorting all steps by start first (a flush of 65,536)."""
    if not len(replica) or replica.min() < 0 or replica.max() > np.iinfo(np.int16).max:
        return np.lexsort((start_s, replica))
    by_replica = np.argsort(replica.astype(np.int16), kind="stable")
    starts = gather(start_s, by_replica)
    order = np.empty_like(by_replica)
    first = 0
    for end in np.cumsum(np.bincount(replica)).tolist():   # each replica's steps: by_replica[first:end]
        if end > first:
            order[first:end] = gather(by_replica[first:end], np.argsort(starts[first:end], kind="stable"))
        first = end
    return order


def gather(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """values[order] for indices known to lie in range (a sort's permutation, or part of one): np.take in its
    clip mode, which checks no index (no bounds error to raise): about a sixth fewer instructions."""
    return values.take(order, mode="clip")


def interval_index(start_s: np.ndarray, origin_s: float, interval_s: float) -> np.ndarray:
    """The interval [origin + i·interval_s, ...) of each step start: i."""
    return np.floor((np.asarray(start_s, dtype=np.float64) - origin_s) / interval_s).astype(np.int64)


def aggregate_steps(cols: Mapping[str, np.ndarray], origin_s: float, interval_s: float,
                    order: np.ndarray | None = None, keys: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> dict[str, np.ndarray]:
    """Per (replica, interval) sums of steps taken in time order per replica (an interval: [origin +
    i·interval_s, ...), by step start). Float sums are sequential in that order within each bin (np.bincount),
    so the bins do not depend on how the steps were batched; integer sums and maxima are exact in any order.
    `order`: the indices of the steps to aggregate sorted by (replica, start), when the caller has them (the step
    log: replica_time_order, less the steps it carries); None: all steps, sorted here. `keys`: their replicas and
    interval indices (`interval_index`) in that order, when the caller has them too."""
    replica = np.asarray(cols["replica"], dtype=np.int64)
    if order is None:
        order = replica_time_order(replica, np.asarray(cols["start_s"], dtype=np.float64))
    in_place = len(order) == len(replica) and not (np.diff(order) < 0).any()   # sorted already: no copies

    def ordered(name: str, dtype) -> np.ndarray:
        values = np.asarray(cols[name], dtype=dtype)
        return values if in_place else gather(values, order)

    if keys is None:
        replica, interval = replica if in_place else replica[order], interval_index(ordered("start_s", np.float64),
                                                                                   origin_s, interval_s)
    else:
        replica, interval = keys
    new_bin = np.ones(len(replica), dtype=bool)
    new_bin[1:] = (replica[1:] != replica[:-1]) | (interval[1:] != interval[:-1])
    index = np.cumsum(new_bin) - 1
    first = np.flatnonzero(new_bin)
    n = len(first)
    duration = ordered("duration_s", np.float64)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values, minlength=n)

    def count(name: str) -> np.ndarray:   # (an integer sum: exact below 2**53, as np.bincount's float sums were)
        return np.add.reduceat(ordered(name, np.int64), first) if n else np.zeros(0, dtype=np.int64)

    def most(name: str) -> np.ndarray:   # (at least 0, as np.maximum.at into zeros was)
        return np.maximum(np.maximum.reduceat(ordered(name, np.int64), first), 0) if n else np.zeros(0, dtype=np.int64)

    out = {
        "replica": replica[first], "interval_start_s": origin_s + interval[first] * interval_s,
        "steps": np.diff(first, append=len(replica)).astype(np.int64), "busy_s": total(duration),
        "prefill_tokens": count("prefill_tokens"), "prefill_seqs": count("prefill_seqs"),
        "decode_seqs": count("decode_seqs"), "emitted_tokens": count("emitted_tokens"),
        "accepted_tokens": count("accepted_tokens"), "draft_s": total(ordered("draft_s", np.float64)),
        "verify_s": total(ordered("verify_s", np.float64)), "engine_s": total(ordered("engine_s", np.float64)),
        "flops": total(ordered("flops", np.float64)), "bytes": total(ordered("bytes", np.float64)),
        "kv_blocks_used_max": most("kv_blocks_used"), "kv_blocks_total": most("kv_blocks_total"),
        "queued_request_s": total(ordered("queued_requests", np.float64) * duration),
        "running_request_s": total(ordered("running_requests", np.float64) * duration),
    }
    for optional in ("alltoall_s", "kv_io_s"):
        if optional in cols:
            out[optional] = total(ordered(optional, np.float64))
    return out
