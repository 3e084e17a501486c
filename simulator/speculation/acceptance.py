"""Acceptance models: how many of a step's draft tokens the target accepts, per request.

Every model is an `AcceptanceModel`: `depth` (the most draft tokens one step can accept: a chain's length
γ, a tree's depth), `draft_tokens` (tokens verified per request per step), `draw`/`draws` (τ of one step /
of consecutive steps),
`expected_accepted`, `full_accept_probability`, `survival_at` and `predicted_rows` (what a control
policy predicts). Models: ChainAcceptance (here), TreeAcceptance and TraceTreeAcceptance
(simulator.speculation.tree_acceptance), TraceChainAcceptance and TraceSampledAcceptance (simulator.speculation.trace_acceptance).

Draws are counter-based: the uniform for (request r, its k-th speculative step) is a pure hash of
(seed, r, k). So the accepted lengths of a request do not depend on how steps were batched, on other
requests, or on bulk vs. step-by-step advancing — and changing the scheduler does not reshuffle them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_STEP_MIX = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
with np.errstate(over="ignore"):
    _STEP_KEYS = np.arange(16384, dtype=np.uint64) * _STEP_MIX   # steps' terms of the splitmix64 inputs (`_step_keys`)


def counter_uniforms(seed: int, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1) from the splitmix64 finalizer of (seed, request id, step index).

    Vectorized; broadcasting between `request_ids` and `step_index` is allowed.
    """
    return _uniforms(_counter_bits(_counter_keys(seed, request_ids, step_index)))


def _counter_keys(seed: int, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
    """The splitmix64 inputs of (seed, request id, step index), broadcasting."""
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps: the sum's order does not matter
        return request_ids.astype(np.uint64) * _GOLDEN + (step_index.astype(np.uint64) * _STEP_MIX
                                                          + np.uint64(seed) * _M2)


def _run_keys(seed: int, request_ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`_counter_keys` of steps 0 .. counts[b] − 1 of each request b, concatenated (request b's run after
    request b − 1's): each request's term repeated plus each step's from a table, instead of the keys of
    every (request, step) pair computed from their columns (the same uint64 sums: wrapping addition is
    associative)."""
    with np.errstate(over="ignore"):
        keys = np.repeat(request_ids.astype(np.uint64) * _GOLDEN + np.uint64(seed) * _M2, counts)
        keys += np.concatenate([_step_keys(n) for n in counts.tolist()])
    return keys


def _step_keys(n: int) -> np.ndarray:
    """The step terms of steps 0 .. n − 1 (`_counter_keys`): a view of one shared table, new past its length."""
    if n <= len(_STEP_KEYS):
        return _STEP_KEYS[:n]
    with np.errstate(over="ignore"):
        return np.arange(n, dtype=np.uint64) * _STEP_MIX


def _counter_bits(keys: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer of `keys` (overwritten), its top 53 bits: integers in [0, 2^53), as int64."""
    z = keys
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
        z >>= np.uint64(11)
    return z.view(np.int64)   # (< 2^53: the same values)


def _uniforms(bits: np.ndarray) -> np.ndarray:
    """53-bit integers as uniforms in [0, 1): bits / 2^53 (exact)."""
    return bits.astype(np.float64) * (1.0 / 9007199254740992.0)


def run_steps(counts: np.ndarray) -> np.ndarray:
    """0 .. counts[b] − 1 for each b, concatenated: the step indices of runs of steps from each request's first."""
    ends = np.cumsum(counts)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - counts, counts)


class AcceptanceModel:
    """The acceptance-model protocol with the defaults shared by the counter-based models (`tau`)."""

    depth: int
    seed: int
    # True: `draws` is `tau` of (request, step index) alone, element by element — independent of the
    # tokens emitted and of which other requests are drawn with it — so draws of many requests may be
    # made together ahead of time (simulator.core.bulk draws the first decode steps of the requests
    # expected to join next in one call). A model whose draws read more than that sets it False.
    counter_based = True

    @property
    def draft_tokens(self) -> int:
        return self.depth

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def tau_runs(self, request_ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """τ of steps 0 .. counts[b] − 1 of each request b, concatenated (request b's run after request b − 1's):
        `tau` of each (request, step) pair."""
        return self.tau(np.repeat(request_ids, counts), run_steps(counts))

    def draw(self, request_ids: np.ndarray, step_index: np.ndarray, emitted: np.ndarray) -> np.ndarray:
        """τ of one speculative step of each request (= draws(..., 1)[0])."""
        return self.tau(request_ids, step_index)

    def draws(self, request_ids: np.ndarray, step_index: np.ndarray, emitted: np.ndarray, steps: int) -> np.ndarray:
        """τ of `steps` consecutive speculative steps of each request, shape (steps, B), from its
        `step_index`-th step with `emitted` tokens emitted (counter-based models ignore `emitted`)."""
        offsets = _STEP_ROWS[:steps] if steps <= len(_STEP_ROWS) else np.arange(steps)[:, None]
        return self.tau(request_ids, step_index + offsets)

    def expected_accepted(self) -> float:
        raise NotImplementedError

    def full_accept_probability(self) -> float:
        """P(τ = depth): the whole draft accepted (drives the rollback of overlapped drafting)."""
        raise NotImplementedError

    def survival_at(self, count: int) -> float | None:
        """P(τ ≥ count) for a chain, None where the model does not know it per length."""
        return None

    def predicted_rows(self, request_ids: np.ndarray, emitted: np.ndarray, length: int) -> np.ndarray:
        """Predicted conditional acceptance (B, length) of each request's next draft positions: the α whose
        i.i.d. chain gives the model's expected accepted length, the same for every request."""
        from theory.chain import alpha_from_expected_tokens
        alpha = alpha_from_expected_tokens(self.expected_accepted() + 1.0, self.depth) if self.depth else 0.0
        return np.broadcast_to(np.full(length, float(np.clip(alpha, 0.0, 1.0))), (len(request_ids), length))


_COMPARE_DEPTH = 8   # chains up to this length sample τ by comparisons (`ChainAcceptance.sample`)
_STEP_ROWS = np.arange(256)[:, None]  # step offsets as a column, shared by draws of up to 256 steps


@dataclass(frozen=True)
class ChainAcceptance(AcceptanceModel):
    """Accepted length τ ∈ {0..γ} of a γ-token chain draft from survival probabilities.

    survival[i] = P(τ ≥ i+1) = Π_{j≤i} alphas[j], non-increasing. τ = #{i : u < survival[i]} for one
    uniform u, so P(τ ≥ i) = survival[i-1] exactly.
    """

    depth: int            # = γ, the chain's length
    survival: np.ndarray  # shape (depth,)
    seed: int = 0

    @staticmethod
    def from_alphas(alphas: list[float], gamma: int, seed: int = 0) -> "ChainAcceptance":
        if gamma < 0:
            raise ValueError(f"gamma must be >= 0, got {gamma}")
        per_pos = np.array([alphas[min(i, len(alphas) - 1)] for i in range(gamma)], dtype=np.float64)
        return ChainAcceptance(gamma, np.cumprod(per_pos), seed)

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        """Accepted lengths of the `step_index`-th speculative step of each request (broadcasting)."""
        return self._sample_bits(_counter_bits(_counter_keys(self.seed, request_ids, step_index)))

    def tau_runs(self, request_ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return self._sample_bits(_counter_bits(_run_keys(self.seed, request_ids, counts)))

    def expected_accepted(self) -> float:
        """E[τ] = Σ_i P(τ ≥ i)."""
        return float(self.survival.sum())

    def full_accept_probability(self) -> float:
        return float(self.survival[-1]) if self.depth else 1.0

    def survival_at(self, count: int) -> float:
        return float(self.survival[count - 1])

    def predicted_rows(self, request_ids: np.ndarray, emitted: np.ndarray, length: int) -> np.ndarray:
        surv = np.r_[1.0, self.survival]
        rows = np.zeros(max(length, self.depth))  # positions past the depth are never accepted
        np.divide(surv[1:], surv[:-1], out=rows[:self.depth], where=surv[:-1] > 0)
        return np.broadcast_to(rows[:length], (len(request_ids), length))

    def __post_init__(self):
        if np.any(np.diff(self.survival) > 0):
            raise ValueError("survival probabilities must be non-increasing")
        object.__setattr__(self, "_ascending", np.ascontiguousarray(self.survival[::-1]))
        object.__setattr__(self, "_levels", self.survival.tolist())
        # u < level exactly when u's 53 bits (u = bits / 2^53) are below ceil(level · 2^53) (both sides of
        # u · 2^53 < level · 2^53 are exact, and bits is an integer): `_sample_bits` compares the bits
        exact = all(0.0 <= level <= 1.0 for level in self._levels)   # (NaN: False)
        object.__setattr__(self, "_bit_levels", [math.ceil(level * 9007199254740992.0) for level in self._levels]
                           if exact else None)

    def sample(self, uniforms: np.ndarray) -> np.ndarray:
        """Accepted lengths for an array of uniforms (any shape), as int64: #{i : u < survival[i]}. Short
        chains count the comparisons in uint8 (a few passes over the uniforms); long ones count
        γ − #{i : survival[i] ≤ u} by binary search in the ascending survival (the same count)."""
        if self.depth == 0:
            return np.zeros(np.shape(uniforms), dtype=np.int64)
        if self.depth > _COMPARE_DEPTH:
            return self.depth - self._ascending.searchsorted(uniforms, side="right").astype(np.int64)
        return self._count_below(uniforms, self._levels)

    def _sample_bits(self, bits: np.ndarray) -> np.ndarray:
        """`sample` of the uniforms bits / 2^53, from the bits (`_bit_levels`: no conversion to floats)."""
        if self.depth == 0 or self.depth > _COMPARE_DEPTH or self._bit_levels is None:
            return self.sample(_uniforms(bits))
        return self._count_below(bits, self._bit_levels)

    @staticmethod
    def _count_below(values: np.ndarray, levels: list) -> np.ndarray:
        """#{i : value < levels[i]} per value, counted in uint8, as int64."""
        count = np.less(values, levels[0]).view(np.uint8)
        for level in levels[1:]:
            count = count + np.less(values, level)
        return count.astype(np.int64)
