"""A plain join's rows come from one contiguous run of `_Ramps` (simulator.core.bulk), in the profile's step-major
layout: they must equal the join's formula (1, context, blocks_for(context + q), 0, 0) at every step, for any
context, length, q and block size, also after the table grew."""
import numpy as np

from simulator.core.bulk import _Ramps


def test_ramp_rows_equal_the_join_formula():
    rng = np.random.default_rng(7)
    for block, q in [(16, 1), (16, 5), (32, 1), (1, 3), (256, 8)]:
        ramps = _Ramps(block, q)
        for ctx0, length in [(0, 1), (1, 7), *zip(rng.integers(0, 20000, 40).tolist(),
                                                    rng.integers(1, 3000, 40).tolist())]:
            flat = ramps.rows(ctx0, length)
            assert flat.shape == (5 * length,)
            rows = flat.reshape(length, 5).T
            ctx = ctx0 + np.arange(length)
            assert (rows[0] == 1).all()
            assert (rows[1] == ctx).all()
            assert (rows[2] == -(-(ctx + q) // block)).all()
            assert not rows[3:].any()
