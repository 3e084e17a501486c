"""Self-speculation with a sparse KV cache at long context (MagicDec, Chen et al. 2024; TriForce).

In the memory-bound regime a decode pass over B requests of context L reads the weights once and every
request's KV: T(B, L) = (W + B·L·k) / BW (W weight bytes, k KV bytes per token, BW memory bandwidth); a
verify pass of γ+1 tokens per request reads the same bytes. A self-draft that attends to at most b cached
tokens per request costs T(B, min(L, b)). One speculative step then takes γ·T(B, min(L, b)) + T(B, L) and
yields E[tokens](α, γ) (theory.chain.expected_tokens), so against plain decoding

    speedup(B) = E[tokens] · T(B, L) / (γ · T(B, min(L, b)) + T(B, L)).

MagicDec's point, as a closed form: d speedup / dB has the sign of γ·W·k·(L − b) (expand the quotient's
derivative), so when the context exceeds the draft's KV budget the speedup *grows* with the batch — the
opposite of speculative decoding with a small draft model at short context — and tends to
E[tokens] / (1 + γ·b/L) as B → ∞. :func:`speedup_batch_slope_sign` returns that sign; the tests check it
against finite differences and the limits.
"""
from __future__ import annotations

from theory import _checks
from theory.chain import expected_tokens


def pass_seconds(weight_bytes: float, kv_bytes_per_token: float, batch: int, context: float,
                 bandwidth_bytes_per_s: float) -> float:
    """Memory-bound decode pass: weights once plus every request's KV."""
    return (weight_bytes + batch * context * kv_bytes_per_token) / bandwidth_bytes_per_s


def self_spec_speedup(alpha: float, gamma: int, weight_bytes: float, kv_bytes_per_token: float, batch: int,
                      context: float, kv_budget: float, bandwidth_bytes_per_s: float = 1.0) -> float:
    """Speedup of sparse-KV self-speculation over plain decoding (module docstring)."""
    _checks.probability(alpha, "alpha")
    gamma = _checks.non_negative_int(gamma, "gamma")
    for name, value in (("weight_bytes", weight_bytes), ("kv_bytes_per_token", kv_bytes_per_token),
                        ("context", context), ("kv_budget", kv_budget)):
        _checks.non_negative_float(value, name)
    _checks.positive_int(batch, "batch")
    _checks.positive_float(bandwidth_bytes_per_s, "bandwidth_bytes_per_s")
    full = pass_seconds(weight_bytes, kv_bytes_per_token, batch, context, bandwidth_bytes_per_s)
    if full <= 0.0:   # (0/0 raised ZeroDivisionError)
        raise ValueError("weight_bytes and context * kv_bytes_per_token are both 0: a pass reads nothing")
    draft = pass_seconds(weight_bytes, kv_bytes_per_token, batch, min(context, kv_budget), bandwidth_bytes_per_s)
    return float(expected_tokens(alpha, gamma) * full / (gamma * draft + full))


def speedup_batch_slope_sign(gamma: int, weight_bytes: float, kv_bytes_per_token: float, context: float,
                             kv_budget: float) -> int:
    """Sign of d speedup / dB: sign(γ·W·k·(L − min(L, b))) — +1 when the context exceeds the budget."""
    value = gamma * weight_bytes * kv_bytes_per_token * (context - min(context, kv_budget))
    return (value > 0) - (value < 0)


def large_batch_limit(alpha: float, gamma: int, context: float, kv_budget: float) -> float:
    """lim_{B→∞} speedup = E[tokens] / (1 + γ·min(L, b)/L); the context must be > 0 (the limit divides by it)."""
    context = _checks.positive_float(context, "context")
    kv_budget = _checks.non_negative_float(kv_budget, "kv_budget")
    return float(expected_tokens(alpha, gamma) / (1.0 + gamma * min(context, kv_budget) / context))
