"""MoE routing and expert-parallel (EP) traffic: which experts a batch touches, and how many tokens each
EP rank sends to each other rank in one MoE layer.

* `ExpertPlacement`: expert → EP rank (contiguous blocks or round robin).
* Routing distributions, each with `sample(num_tokens, top_k, rng) -> (T, k) expert ids` and
  `inclusion_probabilities(top_k)` (π_e = P(expert e is among a token's top-k)):
  `UniformRouting`; `ZipfRouting` (hot experts: popularity ∝ rank^-s, top-k drawn without replacement in
  proportion to popularity, i.e. Plackett–Luce / Gumbel-top-k); `GroupLimitedRouting` (DeepSeek-V3:
  top groups by their best expert, then top-k inside them); `TraceRouting` (replays recorded choices).
* Tokens of one step are independent draws. Under that assumption the expected number of distinct
  experts touched by T tokens is exactly Σ_e 1 − (1 − π_e)^T (`expected_distinct_experts`), which is how
  verifying γ+1 (or tree-many) tokens per request touches more experts than decoding one.
  Approximation: real routers correlate consecutive tokens of one request (which touches fewer experts
  than independent tokens); not modelled.
* The send matrix M[i, j] = tokens rank i sends to rank j. With `dedup=True` a token goes once to every
  rank holding at least one of its experts (DeepEP, SGLang); with `dedup=False` once per (token, expert)
  pair (naive all-to-all). The diagonal stays local; the all-to-all volume is the off-diagonal mass
  × bytes per token. Dispatch and combine move the same token counts in opposite directions.
* Straggler: the rank with the most (token, expert) rows sets the expert-GEMM time of the layer.
* Capacity factor / token dropping: off by default (`capacity_factor=None`); when set, each expert keeps
  the first ceil(cf · T · k / E) of its rows (in token order) and the rest are dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from models.spec import ModelSpec, dtype_bytes
from models.step import Parallelism

MC_INCLUSION_SAMPLES = 40_000   # tokens sampled to estimate π for routings without a closed form
MC_SEED = 20250307              # fixed, so the estimates are deterministic
_CHUNK_ELEMENTS = 4_000_000     # tokens × experts per sampling chunk (bounded memory)


def _check_int(name: str, value, low: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


# ---- placement -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExpertPlacement:
    """rank_of_expert[e] = the EP rank hosting expert e (each expert whole on one rank)."""

    rank_of_expert: tuple[int, ...]
    num_ranks: int

    def __post_init__(self) -> None:
        _check_int("placement.num_ranks", self.num_ranks, 1)
        if not self.rank_of_expert or any(not 0 <= r < self.num_ranks for r in self.rank_of_expert):
            raise ValueError(f"placement.rank_of_expert must be non-empty with ranks in 0..{self.num_ranks - 1}")

    @classmethod
    def contiguous(cls, num_experts: int, num_ranks: int) -> "ExpertPlacement":
        """Experts 0..m−1 on rank 0, m..2m−1 on rank 1, … (m = E / ranks; vLLM's default layout)."""
        _check_int("num_experts", num_experts, 1)
        _check_int("num_ranks", num_ranks, 1)
        if num_experts % num_ranks:
            raise ValueError(f"num_ranks={num_ranks} must divide num_experts={num_experts}")
        m = num_experts // num_ranks
        return cls(tuple(e // m for e in range(num_experts)), num_ranks)

    @classmethod
    def round_robin(cls, num_experts: int, num_ranks: int) -> "ExpertPlacement":
        _check_int("num_experts", num_experts, 1)
        _check_int("num_ranks", num_ranks, 1)
        return cls(tuple(e % num_ranks for e in range(num_experts)), num_ranks)

    @property
    def num_experts(self) -> int:
        return len(self.rank_of_expert)

    def ranks(self) -> np.ndarray:
        return np.asarray(self.rank_of_expert, dtype=np.int64)

    def experts_per_rank(self) -> np.ndarray:
        return np.bincount(self.ranks(), minlength=self.num_ranks)


# ---- routing distributions --------------------------------------------------------------------------
def _top_k_of_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest keys per row (unordered)."""
    return np.argpartition(-keys, k - 1, axis=1)[:, :k]


class _Routing:
    num_experts: int

    def _sample_chunk(self, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _check_k(self, top_k: int) -> int:
        k = _check_int("top_k", top_k, 1)
        if k > self.num_experts:
            raise ValueError(f"top_k={k} exceeds num_experts={self.num_experts}")
        return k

    def sample(self, num_tokens: int, top_k: int, rng: np.random.Generator) -> np.ndarray:
        """(num_tokens, top_k) distinct expert ids per token."""
        n, k = _check_int("num_tokens", num_tokens, 0), self._check_k(top_k)
        if not isinstance(rng, np.random.Generator):
            raise ValueError("rng must be a numpy.random.Generator")
        chunk = max(1, _CHUNK_ELEMENTS // self.num_experts)
        parts = [self._sample_chunk(min(chunk, n - s), k, rng) for s in range(0, n, chunk)]
        return np.concatenate(parts) if parts else np.zeros((0, k), dtype=np.int64)

    def inclusion_probabilities(self, top_k: int) -> np.ndarray:
        """π_e = P(e in a token's top-k). Default: Monte Carlo over MC_INCLUSION_SAMPLES tokens with a
        fixed seed (standard error ≤ 0.5/√N ≈ 0.0025 per expert); Σ π_e = k exactly."""
        choices = _mc_choices(self, self._check_k(top_k))
        return np.bincount(choices.ravel(), minlength=self.num_experts) / MC_INCLUSION_SAMPLES


@lru_cache(maxsize=16)
def _mc_choices(routing: _Routing, top_k: int) -> np.ndarray:
    """The fixed-seed Monte-Carlo sample behind the estimates of routings without a closed form."""
    choices = routing.sample(MC_INCLUSION_SAMPLES, top_k, np.random.default_rng(MC_SEED))
    choices.setflags(write=False)
    return choices


@dataclass(frozen=True)
class UniformRouting(_Routing):
    """Every token picks k distinct experts uniformly at random."""

    num_experts: int

    def __post_init__(self) -> None:
        _check_int("num_experts", self.num_experts, 1)

    def _sample_chunk(self, n, k, rng):
        return _top_k_of_keys(rng.random((n, self.num_experts)), k)

    def inclusion_probabilities(self, top_k: int) -> np.ndarray:
        return np.full(self.num_experts, self._check_k(top_k) / self.num_experts)


@dataclass(frozen=True)
class ZipfRouting(_Routing):
    """Skewed routing with hot experts: popularity p_e ∝ (r_e + 1)^-exponent, r_e the popularity rank of
    expert e (expert 0 hottest unless `hot_order` lists the experts hottest first); a token's k experts
    are drawn without replacement in proportion to p (Plackett–Luce, sampled as Gumbel-top-k).
    exponent = 0 is uniform routing."""

    num_experts: int
    exponent: float = 1.0
    hot_order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_int("num_experts", self.num_experts, 1)
        if not (isinstance(self.exponent, (int, float)) and math.isfinite(self.exponent) and self.exponent >= 0):
            raise ValueError(f"zipf exponent must be a finite number >= 0, got {self.exponent!r}")
        if self.hot_order and sorted(self.hot_order) != list(range(self.num_experts)):
            raise ValueError("zipf hot_order must be a permutation of 0..num_experts-1")

    def popularity(self) -> np.ndarray:
        weights = (np.arange(self.num_experts) + 1.0) ** -float(self.exponent)
        p = np.empty(self.num_experts)
        order = np.asarray(self.hot_order) if self.hot_order else np.arange(self.num_experts)
        p[order] = weights / weights.sum()
        return p

    def _sample_chunk(self, n, k, rng):
        return _top_k_of_keys(np.log(self.popularity()) + rng.gumbel(size=(n, self.num_experts)), k)


@dataclass(frozen=True)
class GroupLimitedRouting(_Routing):
    """Group-limited routing with i.i.d. expert scores: experts form `num_groups` contiguous groups; a
    token keeps the `groups_per_token` groups with the highest best score and picks its top-k experts
    inside them. This is how DeepEP's benchmarks generate routing (groups = nodes); DeepSeek-V3 itself
    ranks groups by the sum of their two best scores."""

    num_experts: int
    num_groups: int
    groups_per_token: int

    def __post_init__(self) -> None:
        _check_int("num_experts", self.num_experts, 1)
        _check_int("num_groups", self.num_groups, 1)
        _check_int("groups_per_token", self.groups_per_token, 1)
        if self.num_experts % self.num_groups or self.groups_per_token > self.num_groups:
            raise ValueError(f"group-limited routing: num_groups={self.num_groups} must divide num_experts="
                             f"{self.num_experts} and be >= groups_per_token={self.groups_per_token}")

    def _sample_chunk(self, n, k, rng):
        if k > self.num_experts // self.num_groups * self.groups_per_token:
            raise ValueError(f"top_k={k} exceeds the experts of {self.groups_per_token} groups")
        scores = rng.random((n, self.num_experts))
        best = scores.reshape(n, self.num_groups, -1).max(axis=2)
        keep = np.zeros((n, self.num_groups), dtype=bool)
        np.put_along_axis(keep, _top_k_of_keys(best, self.groups_per_token), True, axis=1)
        masked = np.where(np.repeat(keep, self.num_experts // self.num_groups, axis=1), scores, -1.0)
        return _top_k_of_keys(masked, k)


MAX_ROUTING_TRACE_BYTES = 1024**3   # 16 million tokens of top-8 int64 ids: far more than a routing law needs


def load_routing_choices(path: Path) -> np.ndarray:
    """The expert ids of a routing trace file (a NumPy `.npy` of tokens × top_k integers), or a ValueError
    saying why not, read only after its header is checked: a FIFO or device is named as such (never read),
    a text or pickled file is no `.npy`, and a header whose shape the file does not hold (cut short, or
    claiming 2e9 tokens) or data beyond MAX_ROUTING_TRACE_BYTES is refused before anything is allocated (a
    128 GB sparse file was read into memory; np.load's own message for a text file suggested unpickling it).
    TraceRouting checks the ids themselves."""
    import os
    from numpy.lib import format as npy

    from models.files import file_kind_problem
    problem = file_kind_problem(path)
    if problem is not None:
        raise ValueError(f"{path}: {problem}")
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        try:
            version = npy.read_magic(fh)
            shape, _, dtype = (npy.read_array_header_1_0 if version == (1, 0) else
                                     npy.read_array_header_2_0)(fh)
        except ValueError:
            raise ValueError(f"{path}: not a NumPy .npy file (save the expert ids with numpy.save)") from None
        if len(shape) != 2 or not np.issubdtype(dtype, np.integer):
            raise ValueError(f"{path}: holds an array of {dtype} of shape {shape}; expected a 2-d integer array "
                             "(tokens × top_k expert ids)")
        data = math.prod(shape) * dtype.itemsize
        if data > MAX_ROUTING_TRACE_BYTES:
            raise ValueError(f"{path}: its {shape[0]:,} × {shape[1]:,} ids take {data / 1024**3:,.1f} GiB; at most "
                             f"{MAX_ROUTING_TRACE_BYTES / 1024**3:.0f} GiB (a sample of the tokens keeps the routing law)")
        if size - fh.tell() != data:
            raise ValueError(f"{path}: its header announces {shape[0]:,} × {shape[1]:,} ids ({data:,} bytes) but "
                             f"the file holds {size - fh.tell():,} bytes after it (cut short or damaged)")
        fh.seek(0)
        return npy.read_array(fh, allow_pickle=False)


def _first_repeat(choices: np.ndarray, rows_per_chunk: int = 1 << 20) -> int | None:
    """The first row of `choices` that lists an id twice, or None: every row is checked (each row sorted, then
    neighbours compared), a chunk of rows at a time so that the sorted copy stays small beside the trace."""
    for start in range(0, len(choices), rows_per_chunk):
        ordered = np.sort(choices[start:start + rows_per_chunk], axis=1)
        repeats = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if repeats.size:
            return start + int(repeats[0])
    return None


@dataclass(frozen=True, eq=False)
class TraceRouting(_Routing):
    """A recorded routing trace: `choices[i]` are the experts token i chose. `sample` draws recorded
    tokens uniformly with replacement; π is the trace's empirical frequency (exact for the trace)."""

    choices: np.ndarray
    num_experts: int

    def __post_init__(self) -> None:
        c = np.asarray(self.choices)
        _check_int("num_experts", self.num_experts, 1)
        if c.ndim != 2 or not c.size or not np.issubdtype(c.dtype, np.integer):   # (a (10, 0) array: no expert)
            raise ValueError(f"trace choices of shape {c.shape} are not allowed; expected a 2-d integer array of at "
                             "least one token and at least one expert per token (tokens × top_k)")
        if c.min() < 0 or c.max() >= self.num_experts:
            raise ValueError(f"trace choices must be expert ids in 0..{self.num_experts - 1}")
        row = _first_repeat(c)
        if row is not None:
            raise ValueError(f"trace choices: token {row:,} lists the same expert twice; expected top_k distinct "
                             "experts per token")

    @property
    def top_k(self) -> int:
        return int(np.asarray(self.choices).shape[1])

    def _check_k(self, top_k):
        if top_k != self.top_k:
            raise ValueError(f"top_k={top_k} does not match the trace's top_k={self.top_k}")
        return top_k

    def _sample_chunk(self, n, k, rng):
        c = np.asarray(self.choices)
        return c[rng.integers(0, len(c), size=n)]

    def inclusion_probabilities(self, top_k: int) -> np.ndarray:
        self._check_k(top_k)
        c = np.asarray(self.choices)
        return np.bincount(c.ravel(), minlength=self.num_experts) / len(c)


# ---- distinct experts ------------------------------------------------------------------------------
def expected_distinct_experts(inclusion: np.ndarray, num_tokens: float) -> float:
    """E[# distinct experts touched by `num_tokens` independent tokens] = Σ_e 1 − (1 − π_e)^T (exact for
    independent tokens; uniform routing gives E·(1 − (1 − k/E)^T))."""
    if num_tokens < 0:
        raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
    pi = np.asarray(inclusion, dtype=float)
    return float(np.sum(1.0 - (1.0 - pi) ** num_tokens))


def verification_distinct_experts(inclusion: np.ndarray, decode_seqs: int, query_tokens_per_seq: int) -> float:
    """Distinct experts one MoE layer touches when `decode_seqs` requests verify `query_tokens_per_seq`
    tokens each (1: plain decoding; γ+1: chain speculation; the node count: tree speculation)."""
    _check_int("decode_seqs", decode_seqs, 0)
    _check_int("query_tokens_per_seq", query_tokens_per_seq, 1)
    return expected_distinct_experts(inclusion, decode_seqs * query_tokens_per_seq)


# ---- uniform closed forms (used by the op graph) ----------------------------------------------------
def rank_hit_probability(num_experts: int, top_k: int, experts_on_rank: int) -> float:
    """P(a uniformly routed token has at least one of its k distinct experts among the rank's m):
    1 − C(E − m, k) / C(E, k)."""
    e, k, m = num_experts, top_k, experts_on_rank
    if not 0 <= m <= e or not 1 <= k <= e:
        raise ValueError(f"need 0 <= experts_on_rank <= num_experts and 1 <= top_k <= num_experts, "
                         f"got m={m}, E={e}, k={k}")
    miss = 1.0
    for i in range(k):
        miss *= max(0.0, (e - m - i) / (e - i))
    return 1.0 - miss


def uniform_remote_copies_per_token(num_experts: int, top_k: int, ranks: int, dedup: bool = True) -> float:
    """Expected copies of one token sent to other EP ranks under uniform routing and an even placement
    (E / ranks experts per rank): (ranks − 1)·P(rank hit) with dedup, k·(ranks − 1)/ranks without."""
    _check_int("ranks", ranks, 1)
    if num_experts % ranks:
        raise ValueError(f"ranks={ranks} must divide num_experts={num_experts}")
    if dedup:
        return (ranks - 1) * rank_hit_probability(num_experts, top_k, num_experts // ranks)
    return top_k * (ranks - 1) / ranks


# ---- send matrices and per-rank loads ---------------------------------------------------------------
def rank_hit_probabilities(routing: _Routing, placement: ExpertPlacement, top_k: int) -> np.ndarray:
    """h_r = P(a token has at least one expert on rank r): exact for uniform routing, otherwise Monte
    Carlo over MC_INCLUSION_SAMPLES tokens with a fixed seed (standard error ≤ 0.0025)."""
    _check_placement(routing, placement)
    counts = placement.experts_per_rank()
    if isinstance(routing, UniformRouting):
        return np.array([rank_hit_probability(routing.num_experts, top_k, int(m)) for m in counts])
    return _hit_matrix(_mc_choices(routing, top_k), placement).mean(axis=0)


def _check_placement(routing: _Routing, placement: ExpertPlacement) -> None:
    if placement.num_experts != routing.num_experts:
        raise ValueError(f"placement has {placement.num_experts} experts, routing {routing.num_experts}")


def _hit_matrix(choices: np.ndarray, placement: ExpertPlacement) -> np.ndarray:
    """(T, R) bool: token t has at least one (kept) expert on rank r. Dropped choices are −1."""
    t = len(choices)
    hit = np.zeros((t, placement.num_ranks), dtype=bool)
    valid = choices >= 0
    rows = np.broadcast_to(np.arange(t)[:, None], choices.shape)[valid]
    hit[rows, placement.ranks()[choices[valid]]] = True
    return hit


def send_matrix(choices: np.ndarray, token_ranks: np.ndarray, placement: ExpertPlacement,
                dedup: bool = True) -> np.ndarray:
    """(R, R) int matrix: M[i, j] = tokens that rank i sends to rank j (diagonal: kept local)."""
    choices, token_ranks = np.asarray(choices), np.asarray(token_ranks)
    r = placement.num_ranks
    if token_ranks.shape != (len(choices),) or (len(token_ranks) and not 0 <= token_ranks.min() <= token_ranks.max() < r):
        raise ValueError(f"token_ranks must give one source rank in 0..{r - 1} per token")
    source = np.zeros((len(choices), r), dtype=np.int64)
    source[np.arange(len(choices)), token_ranks] = 1
    if dedup:
        per_token = _hit_matrix(choices, placement).astype(np.int64)
    else:
        per_token = np.zeros((len(choices), r), dtype=np.int64)
        valid = choices >= 0
        rows = np.broadcast_to(np.arange(len(choices))[:, None], choices.shape)[valid]
        np.add.at(per_token, (rows, placement.ranks()[choices[valid]]), 1)
    return source.T @ per_token


@dataclass(frozen=True, eq=False)
class EpLoad:
    """One MoE layer's EP traffic and work. send_tokens[i, j]: tokens rank i sends to rank j (expected
    values are floats); rows_per_rank: (token, expert) rows each rank's routed experts process;
    experts_touched_per_rank: distinct local experts used; shared_rows_per_rank: rows of the shared
    experts (each rank runs them on its own tokens, no traffic); dropped_rows: rows over capacity."""

    send_tokens: np.ndarray
    rows_per_rank: np.ndarray
    experts_touched_per_rank: np.ndarray
    shared_rows_per_rank: np.ndarray
    dropped_rows: float = 0.0

    @property
    def num_ranks(self) -> int:
        return len(self.rows_per_rank)

    def remote_tokens(self) -> float:
        """Off-diagonal mass of the send matrix (tokens crossing between ranks, one direction)."""
        m = np.asarray(self.send_tokens, dtype=float)
        return float(m.sum() - np.trace(m))

    def alltoall_bytes(self, bytes_per_token: float) -> float:
        """Bytes one dispatch (or one combine) moves between ranks, all ranks together."""
        return self.remote_tokens() * bytes_per_token

    def send_bytes_per_rank(self, bytes_per_token: float) -> np.ndarray:
        m = np.asarray(self.send_tokens, dtype=float)
        return (m.sum(axis=1) - np.diag(m)) * bytes_per_token

    def recv_bytes_per_rank(self, bytes_per_token: float) -> np.ndarray:
        m = np.asarray(self.send_tokens, dtype=float)
        return (m.sum(axis=0) - np.diag(m)) * bytes_per_token

    @property
    def straggler_rank(self) -> int:
        """The rank with the most routed-expert rows: it sets the layer's expert-GEMM time."""
        return int(np.argmax(self.rows_per_rank))

    @property
    def imbalance(self) -> float:
        """max / mean routed rows per rank (1 = perfectly balanced)."""
        mean = float(np.mean(self.rows_per_rank))
        return float(np.max(self.rows_per_rank)) / mean if mean > 0 else 1.0


def _tokens_per_rank(tokens_per_rank, num_ranks: int) -> np.ndarray:
    n = np.broadcast_to(np.asarray(tokens_per_rank), (num_ranks,))
    if np.any(n < 0) or not np.all(np.equal(np.floor(n), n)):
        raise ValueError("tokens_per_rank must be integers >= 0 (one value or one per rank)")
    return n.astype(np.int64)


def sample_ep_load(routing: _Routing, placement: ExpertPlacement, tokens_per_rank, top_k: int,
                   rng: np.random.Generator, dedup: bool = True, num_shared_experts: int = 0,
                   capacity_factor: float | None = None) -> EpLoad:
    """One realized MoE layer: every rank's tokens are routed (independent draws) and counted."""
    _check_placement(routing, placement)
    n = _tokens_per_rank(tokens_per_rank, placement.num_ranks)
    choices = routing.sample(int(n.sum()), top_k, rng)
    token_ranks = np.repeat(np.arange(placement.num_ranks), n)
    dropped = 0
    if capacity_factor is not None:
        if not capacity_factor > 0:
            raise ValueError(f"capacity_factor must be > 0 or None, got {capacity_factor!r}")
        capacity = math.ceil(capacity_factor * len(choices) * top_k / routing.num_experts)
        flat = choices.ravel().copy()
        order = np.argsort(flat, kind="stable")  # token order within each expert
        sorted_e = flat[order]
        first = np.searchsorted(sorted_e, sorted_e, side="left")
        over = (np.arange(len(flat)) - first) >= capacity
        flat[order[over]] = -1
        dropped = int(over.sum())
        choices = flat.reshape(choices.shape)
    kept = choices[choices >= 0]
    rows = np.bincount(placement.ranks()[kept], minlength=placement.num_ranks)
    used = np.zeros(routing.num_experts, dtype=bool)
    used[kept] = True
    touched = np.bincount(placement.ranks()[used], minlength=placement.num_ranks)
    return EpLoad(send_matrix(choices, token_ranks, placement, dedup), rows, touched,
                  n * num_shared_experts, float(dropped))


def expected_ep_load(routing: _Routing, placement: ExpertPlacement, tokens_per_rank, top_k: int,
                     dedup: bool = True, num_shared_experts: int = 0) -> EpLoad:
    """Expected values of `sample_ep_load` without capacity limits: M[i, j] = n_i·h_j (dedup) or
    n_i·Σ_{e on j} π_e; rows_j = T·Σ_{e on j} π_e; touched_j = Σ_{e on j} 1 − (1 − π_e)^T."""
    _check_placement(routing, placement)
    n = _tokens_per_rank(tokens_per_rank, placement.num_ranks).astype(float)
    pi = routing.inclusion_probabilities(top_k)
    ranks = placement.ranks()
    per_rank_pi = np.bincount(ranks, weights=pi, minlength=placement.num_ranks)
    per_token = rank_hit_probabilities(routing, placement, top_k) if dedup else per_rank_pi
    total = n.sum()
    touched = np.bincount(ranks, weights=1.0 - (1.0 - pi) ** total, minlength=placement.num_ranks)
    return EpLoad(np.outer(n, per_token), total * per_rank_pi, touched, n * num_shared_experts)


def hierarchical_dispatch_counts(choices: np.ndarray, token_ranks: np.ndarray, placement: ExpertPlacement,
                                 gpus_per_node: int) -> dict[str, np.ndarray]:
    """Per-rank token counts of a two-level (DeepEP "normal" internode) dispatch: a token crosses the
    scale-out network once per remote node holding any of its experts, to the GPU with its own local
    index there, which forwards it over scale-up links to every hit rank of that node; inside its own
    node it goes directly. Returns per rank:
    scaleout_send / scaleout_recv: (token, remote node) pairs sent / received by that GPU's NIC;
    scaleout_logical: (token, node) pairs incl. the own node (what DeepEP's benchmark divides by time);
    scaleup_recv: (token, rank) pairs arriving over scale-up links (sender's local index ≠ receiver's);
    scaleup_send: the same pairs counted at the forwarding/sending GPU;
    recv_total: (token, rank) pairs received incl. from itself (DeepEP's NVLink count)."""
    g = _check_int("gpus_per_node", gpus_per_node, 1)
    r = placement.num_ranks
    if r % g:
        raise ValueError(f"gpus_per_node={g} must divide the EP ranks={r}")
    token_ranks = np.asarray(token_ranks)
    hit = _hit_matrix(np.asarray(choices), placement)                      # (T, R)
    nodes = r // g
    node_hit = hit.reshape(len(hit), nodes, g).any(axis=2)                  # (T, N)
    src_node, src_local = token_ranks // g, token_ranks % g
    remote = node_hit.copy()
    remote[np.arange(len(hit)), src_node] = False
    onehot = np.zeros((len(hit), r))
    onehot[np.arange(len(hit)), token_ranks] = 1.0
    scaleout_send = onehot.T @ remote.sum(axis=1)
    # The receiving NIC of node B is the GPU (B, src_local).
    recv_at = np.zeros((len(hit), r))
    rows, cols = np.nonzero(remote)
    recv_at[rows, cols * g + src_local[rows]] = 1.0
    scaleout_recv = recv_at.sum(axis=0)
    dest_local = np.arange(r) % g
    over_scaleup = hit & (dest_local[None, :] != src_local[:, None])        # (T, R)
    scaleup_recv = over_scaleup.sum(axis=0).astype(float)
    # Sender over scale-up: the entry GPU of the destination's node, (node(dest), src_local).
    d_rows, d_cols = np.nonzero(over_scaleup)
    scaleup_send = np.bincount((d_cols // g) * g + src_local[d_rows], minlength=r).astype(float)
    return {"scaleout_send": scaleout_send, "scaleout_recv": scaleout_recv,
            "scaleout_logical": onehot.T @ node_hit.sum(axis=1), "scaleup_recv": scaleup_recv,
            "scaleup_send": scaleup_send, "recv_total": hit.sum(axis=0).astype(float)}


# ---- memory ----------------------------------------------------------------------------------------


def weight_bytes_per_gpu(spec: ModelSpec, par: Parallelism, dtype: str = "bf16") -> float:
    """Weight bytes on each GPU. ep = 1: the model split evenly over tp·pp GPUs (replicated norms etc.
    ignored, as the simulator's memory check does). ep > 1: routed experts split over the ep ranks,
    everything else over the tp ranks of an attention group (replicated across the ep/tp groups), all
    divided by pp (approximation: equal stages)."""
    if par.ep == 1:
        return spec.weight_bytes(dtype) / par.gpus
    routed = spec.routed_expert_param_count() * dtype_bytes(dtype)   # the routed experts are in `dtype`
    return ((spec.weight_bytes(dtype) - routed) / par.tp + routed / par.ep) / par.pp
