"""Speculative-MoE pre-scheduling (Li et al. 2025, arXiv:2503.04398): how much expert-parallel
all-to-all traffic remains when tokens are moved ahead of time to the rank predicted to host their
experts (speculative token shuffling) and co-activated experts share a rank (speculative expert grouping).

Model (a rank-level abstraction of the paper's scheme; pure functions, no other draftsim package):

* R EP ranks, experts spread evenly, each token activates k experts.
* Every token has a *home* rank, the rank whose expert group it has affinity with. After expert
  grouping each activation falls in the home rank's experts with probability ρ (`affinity`), otherwise
  on a uniformly random rank (home included). Activations are independent given the home rank.
* The predictor names the home rank with probability p (`prediction_accuracy`), otherwise a uniformly
  random rank; the token is pre-scheduled to the predicted rank, and the move itself rides on the
  collective that precedes the MoE layer (the paper folds it into the attention's reduce-scatter /
  all-gather), so it costs nothing unless `shuffle_hidden=False`.
* Hit rate h = p·ρ: the probability that an activation lands on the token's pre-scheduled rank because
  the prediction was right. Without pre-scheduling (h = 0) a token sits on an arbitrary rank.

Consequences (exact under the model; tests check them against a Monte Carlo of the routing):
  local fraction f = h + (1 − h)/R;  remote activations per token k(1 − h)(R − 1)/R, i.e. the
  all-to-all volume without per-rank de-duplication scales exactly as (1 − h);  with de-duplication
  (a token goes once to each remote rank it needs) see `remote_ranks_per_token`.
"""
from __future__ import annotations


def _check(name: str, value: float, low: float, high: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def _check_ranks(ranks: int) -> int:
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ValueError(f"ranks must be an integer >= 1, got {ranks!r}")
    return ranks


def hit_rate(prediction_accuracy: float, affinity: float) -> float:
    """h = p·ρ: the predictor names the home rank (p) and the activation lies in its group (ρ)."""
    return _check("prediction_accuracy", prediction_accuracy, 0, 1) * _check("affinity", affinity, 0, 1)


def local_fraction(hit: float, ranks: int) -> float:
    """Fraction of token→expert activations served on the token's own (pre-scheduled) rank:
    h + (1 − h)/R (a miss lands on a uniformly random rank)."""
    h, r = _check("hit_rate", hit, 0, 1), _check_ranks(ranks)
    return h + (1.0 - h) / r


def remote_activations_per_token(hit: float, ranks: int, top_k: int) -> float:
    """Expected activations of one token served on another rank: k·(1 − f) = k(1 − h)(R − 1)/R."""
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    return top_k * (1.0 - local_fraction(hit, ranks))


def remote_ranks_per_token(prediction_accuracy: float, affinity: float, ranks: int, top_k: int) -> float:
    """Expected distinct other ranks one token is sent to when a token goes once per rank (dedup).

    Each activation lands on a given non-home rank with probability q = (1 − ρ)/R and on the home rank
    with 1 − (R − 1)q. If the token sits on its home rank (probability p + (1 − p)/R) every other rank is
    hit with probability 1 − (1 − q)^k; otherwise the home rank is hit with 1 − (1 − ρ − q)^k and the
    R − 2 ranks that are neither home nor the token's with 1 − (1 − q)^k each."""
    p, rho = _check("prediction_accuracy", prediction_accuracy, 0, 1), _check("affinity", affinity, 0, 1)
    r = _check_ranks(ranks)
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    if r == 1:
        return 0.0
    q = (1.0 - rho) / r
    other = 1.0 - (1.0 - q) ** top_k
    at_home = p + (1.0 - p) / r
    away = (1.0 - (1.0 - rho - q) ** top_k) + (r - 2) * other
    return at_home * (r - 1) * other + (1.0 - at_home) * away


def alltoall_volume_bytes(tokens: float, top_k: int, bytes_per_token: float, hit: float, ranks: int) -> float:
    """Bytes one dispatch moves between ranks (all ranks together) for `tokens` tokens, one copy per
    remote activation; the combine moves the same bytes back."""
    if not tokens >= 0 or not bytes_per_token >= 0:
        raise ValueError(f"tokens and bytes_per_token must be >= 0, got {tokens!r}, {bytes_per_token!r}")
    return tokens * remote_activations_per_token(hit, ranks, top_k) * bytes_per_token


def volume_ratio(hit: float, ranks: int) -> float:
    """All-to-all volume with pre-scheduling / without: (1 − f(h)) / (1 − f(0)) = 1 − h (R > 1)."""
    r = _check_ranks(ranks)
    return 1.0 if r == 1 else (1.0 - local_fraction(hit, r)) / (1.0 - 1.0 / r)


def moe_layer_alltoall_s(tokens_per_rank: float, top_k: int, bytes_per_token: float, hit: float, ranks: int,
                         bandwidth_bytes_per_s: float, latency_s: float = 0.0,
                         shuffle_hidden: bool = True) -> float:
    """Dispatch + combine seconds of one MoE layer: each is latency + the rank's remote bytes /
    bandwidth (balanced ranks; the rank's send port is the bottleneck). With shuffle_hidden=False the
    pre-scheduling move is an extra all-to-all in which a token leaves its rank with probability
    (R − 1)/R (the predicted rank is, on average, another one)."""
    if not bandwidth_bytes_per_s > 0 or not latency_s >= 0:
        raise ValueError(f"bandwidth must be > 0 and latency >= 0, got {bandwidth_bytes_per_s!r}, {latency_s!r}")
    r = _check_ranks(ranks)
    if r == 1:
        return 0.0
    send = alltoall_volume_bytes(tokens_per_rank, top_k, bytes_per_token, hit, r)
    seconds = 2.0 * (latency_s + send / bandwidth_bytes_per_s)
    if not shuffle_hidden and hit > 0:
        seconds += latency_s + tokens_per_rank * (r - 1) / r * bytes_per_token / bandwidth_bytes_per_s
    return seconds


def breakeven_hit_rate(top_k: int) -> float:
    """Smallest h at which pre-scheduling with a separate (not hidden) shuffle moves no more bytes per
    layer than no pre-scheduling: the shuffle costs (R−1)/R token copies, dispatch + combine save
    2·k·h·(R−1)/R, so h = 1/(2k), whatever R."""
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    return 1.0 / (2.0 * top_k)
