"""The standard normal distribution's CDF (of a number) and quantile (of an array), which truncated
lognormal lengths draw with (simulator.core.lengths).

scipy.special has both (`ndtr`, `ndtri`), but importing it costs a run 0.2–0.3 s on the 2-vCPU development
VM (its array-API layer loads numpy.f2py and numpy.testing) — more than simulating 100 requests (issue 30:
`draftsim run` of 100 requests ≤ 1 s). Here instead:

- `normal_cdf(x)`: Cephes `ndtr`'s identity on erf/erfc (scipy's ndtr), with the C library's erf and erfc
  (`math.erf`, `math.erfc`), which keep relative precision in both tails.
- `normal_quantile(p)`: Wichura's algorithm AS241, PPND16 (M. J. Wichura, "The Percentage Points of the
  Normal Distribution", Applied Statistics 37(3):477–484, 1988): rational approximations in three regions
  of p, relative accuracy about 1e-16 — the algorithm CPython's `statistics.NormalDist.inv_cdf` uses,
  evaluated here on NumPy arrays. p = 0 and 1 give ∓inf, as ndtri.

Approximation, named: both agree with scipy.special to a few units in the last place, not bit for bit
(tests/simulator/core/test_normal.py bounds the difference over (0, 1) and its tails, and checks that the
lengths drawn through them are the integers scipy's functions give)."""
from __future__ import annotations

import math

import numpy as np

# AS241 PPND16 coefficients (Wichura 1988, Table 1), highest power first (numpy.polyval's order).
_CENTRAL_NUM = (2.5090809287301226727e+3, 3.3430575583588128105e+4, 6.7265770927008700853e+4,
                4.5921953931549871457e+4, 1.3731693765509461125e+4, 1.9715909503065514427e+3,
                1.3314166789178437745e+2, 3.3871328727963666080e+0)
_CENTRAL_DEN = (5.2264952788528545610e+3, 2.8729085735721942674e+4, 3.9307895800092710610e+4,
                2.1213794301586595867e+4, 5.3941960214247511077e+3, 6.8718700749205790830e+2,
                4.2313330701600911252e+1, 1.0)
_NEAR_NUM = (7.7454501427834140764e-4, 2.2723844989269184583e-2, 2.4178072517745061177e-1,
             1.2704582524523683826e+0, 3.6478483247632046050e+0, 5.7694972214606914055e+0,
             4.6303378461565452959e+0, 1.4234371107496835773e+0)
_NEAR_DEN = (1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.5198666563616457e-2,
             1.4810397642748007459e-1, 6.8976733498510000455e-1, 1.6763848301838038494e+0,
             2.0531916266377588219e+0, 1.0)
_FAR_NUM = (2.0103343992922881327e-7, 2.7115555687434875782e-5, 1.2426609473880784386e-3,
            2.6532189526576123093e-2, 2.9656057182850489123e-1, 1.7848265399172913358e+0,
            5.4637849111641143699e+0, 6.6579046435011037772e+0)
_FAR_DEN = (2.0442631033899397856e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5,
            7.8686913114561325910e-4, 1.4875361290850614852e-2, 1.3692988092273580531e-1,
            5.9983220655588793769e-1, 1.0)
_CENTRAL_HALF_WIDTH = 0.425   # |p − 1/2| up to this: the central approximation
_SQRT1_2 = math.sqrt(0.5)
_NEAR_TAIL_R = 5.0            # r = sqrt(−ln(min(p, 1 − p))) up to this: the near-tail one, beyond it the far tail


def normal_cdf(x: float) -> float:
    """Φ(x) = P(Z ≤ x) for a standard normal Z: 1/2 + erf(z)/2 near the centre, erfc(|z|)/2 in the tail the
    value is small in (z = x/√2; the case split of Cephes `ndtr`, which scipy.special.ndtr runs)."""
    z = x * _SQRT1_2
    if abs(z) < _SQRT1_2:
        return 0.5 + 0.5 * math.erf(z)
    tail = 0.5 * math.erfc(abs(z))
    return 1.0 - tail if z > 0 else tail


def normal_quantile(p: np.ndarray) -> np.ndarray:
    """Φ⁻¹(p) elementwise for probabilities p in [0, 1] (AS241)."""
    p = np.asarray(p, dtype=np.float64)
    q = p - 0.5
    out = np.empty_like(p)
    central = np.abs(q) <= _CENTRAL_HALF_WIDTH
    if central.any():
        qc = q[central]
        r = 0.180625 - qc * qc
        out[central] = qc * np.polyval(_CENTRAL_NUM, r) / np.polyval(_CENTRAL_DEN, r)
    tail = ~central
    if tail.any():
        qt = q[tail]
        with np.errstate(divide="ignore"):
            r = np.sqrt(-np.log(np.where(qt <= 0.0, p[tail], 1.0 - p[tail])))
        near = r <= _NEAR_TAIL_R
        x = np.empty_like(r)
        rn = r[near] - 1.6
        x[near] = np.polyval(_NEAR_NUM, rn) / np.polyval(_NEAR_DEN, rn)
        rf = r[~near] - _NEAR_TAIL_R
        with np.errstate(invalid="ignore"):
            x[~near] = np.polyval(_FAR_NUM, rf) / np.polyval(_FAR_DEN, rf)
        x[np.isinf(r)] = np.inf   # p = 0 or 1
        out[tail] = np.where(qt < 0.0, -x, x)
    return out
