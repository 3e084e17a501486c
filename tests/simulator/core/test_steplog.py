"""The step log's columns of decode bulks (StepLog._decode_columns), checked step by step against the bulks as
simulator.core.bulk.apply_bulk hands them over: n + 1 boundaries, (5, n) per-step sums, the blocks other
requests hold, whether the replica speculates, and `queued` as a number or one value per step (arrivals
that joined behind a blocked head during the bulk)."""
from __future__ import annotations

import numpy as np

from simulator.core.bulk import ACC, BLK, CS, DS, EM
from simulator.core.steplog import StepLog


class _Cost:
    """A stand-in StepCostModel: step costs that are plain functions of (requests decoding, Σ context)."""
    flops_scales = (2.0, 3.0)

    def decode_steps(self, decode_seqs, context):
        seqs, ctx = np.asarray(decode_seqs, dtype=float), np.asarray(context, dtype=float)
        draft = np.stack([1e-4 * seqs + 1e-9 * ctx, 7.0 * ctx, 11.0 * seqs], axis=1)
        target = np.stack([3e-4 * seqs + 3e-9 * ctx + 1e-5, 13.0 * ctx, 17.0 * seqs, 1e-5 + 0.0 * seqs], axis=1)
        return draft, target


def _bulks(seed: int, folded: bool = True) -> list[tuple]:
    """Bulks as apply_bulk hands them over; with `folded`, some with prefill steps among their decode steps (before
    the first, between two, after the last, several in a row: simulator.core.bulk_arrivals), whose boundaries the
    bulk's list holds too."""
    rng = np.random.default_rng(seed)
    bulks, t = [], 0.0
    for i in range(40):
        n = int(rng.integers(0, 6)) if i % 7 else int(rng.integers(1, 30))   # some bulks of no step
        prefill_at = sorted(rng.integers(0, n + 1, int(rng.integers(1, 5))).tolist()) if folded and i % 3 == 1 and n \
            else None
        bounds = [t := t + float(rng.uniform(0.001, 0.01)) for _ in range(n + 1 + len(prefill_at or ()))]
        sums = rng.integers(1, 500, size=(5, n))
        queued = rng.integers(0, 9, n) if i % 5 == 3 else int(rng.integers(0, 9))
        bulks.append((int(rng.integers(0, 4)), int(rng.integers(1, 5)), 1000 + i, bounds, sums,
                      int(rng.integers(0, 50)) if i % 3 == 0 else 0, bool(i % 4), queued, prefill_at))
    return bulks


def _by_hand(cost, bulks) -> dict[str, list]:
    out: dict[str, list] = {}
    ds, ts = cost.flops_scales
    for replica, q, kv_total, bounds, sums, other, speculating, queued, prefill_at in bulks:
        for j in range(sums.shape[1]):
            draft, target = (a[0] for a in cost.decode_steps([sums[DS, j]], [sums[CS, j]]))
            b = j + sum(at <= j for at in prefill_at or ())   # its start: past the prefill steps before it
            row = {"replica": replica, "start_s": bounds[b], "duration_s": bounds[b + 1] - bounds[b],
                   "prefill_tokens": 0, "prefill_seqs": 0, "decode_seqs": sums[DS, j], "query_tokens_per_seq": q,
                   "decode_context_tokens": sums[CS, j], "draft_s": draft[0], "verify_s": target[0] - target[3],
                   "engine_s": target[3], "accepted_tokens": sums[ACC, j] if speculating else 0,
                   "emitted_tokens": sums[EM, j] if speculating else sums[DS, j],
                   "flops": ds * draft[1] + ts * target[1], "bytes": ds * draft[2] + ts * target[2],
                   "kv_blocks_used": sums[BLK, j] + other, "kv_blocks_total": kv_total,
                   "queued_requests": queued if isinstance(queued, int) else queued[j],
                   "running_requests": sums[DS, j]}
            for name, value in row.items():
                out.setdefault(name, []).append(value)
    return out


def _check(bulks):
    cost = _Cost()
    got = StepLog._decode_columns(cost, bulks)
    expected = _by_hand(cost, bulks)
    assert got.keys() == expected.keys()
    for name, values in expected.items():
        assert got[name].tolist() == [v.item() if isinstance(v, np.generic) else v for v in values], name


def test_decode_columns_step_by_step():
    bulks = _bulks(3)
    assert any(not isinstance(b[7], int) for b in bulks) and any(b[5] for b in bulks)   # the rarer cases are in
    assert any(b[6] for b in bulks) and not all(b[6] for b in bulks) and any(b[4].shape[1] == 0 for b in bulks)
    folded = [at for b in bulks if (at := b[8])]
    assert len(folded) > 5 and any(at[0] == 0 for at in folded) and any(len(set(at)) < len(at) for at in folded)
    assert any(at[-1] == b[4].shape[1] for b in bulks if (at := b[8]))
    _check(bulks)


def test_decode_columns_of_plain_bulks():
    """The common case: every bulk's `queued` a number, no other blocks, all speculating or none, no prefill step
    folded in; and the same with some folded in."""
    for speculating in (False, True):
        for folded in (False, True):
            _check([(r, q, kv, b, s, 0, speculating, 3, at) for r, q, kv, b, s, _, _, _, at in _bulks(5, folded)])
