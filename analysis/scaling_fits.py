"""Scaling models fitted to measured speedups: Amdahl's serial fraction and the Karp-Flatt metric.

Both are stated for a speedup relative to one GPU. A study whose baseline is b GPUs measures
S relative to b, so p = n / b plays the role of n (p = 1 at the baseline).
"""
import math
from dataclasses import dataclass

import numpy as np


def amdahl_speedup(p, serial_fraction):
    """Amdahl's law: S(p) = 1 / (s + (1 - s) / p)."""
    p = np.asarray(p, dtype=float)
    return 1.0 / (serial_fraction + (1.0 - serial_fraction) / p)


@dataclass
class AmdahlFit:
    serial_fraction: float   # s in [0, 1]; 0 when the speedups are linear or better
    rmse: float              # root mean square error of the fitted speedups over the points used
    points: int              # points with p > 1 that entered the fit


def _relative(gpus, speedup, baseline_gpus):
    p = np.asarray(gpus, dtype=float) / float(baseline_gpus)
    s = np.asarray(speedup, dtype=float)
    return p, s


# Amdahl's law has one parameter (s); a fit needs more points than that beyond the baseline, or it only
# passes through the one point it has and says nothing about how the speedup goes on.
AMDAHL_PARAMETERS = 1
AMDAHL_MIN_POINTS = AMDAHL_PARAMETERS + 1


def usable_points(p, measured):
    """The points beyond the baseline with a measured speedup (a boolean mask)."""
    return (p > 1) & np.isfinite(measured) & (measured > 0)


def amdahl_points(gpus, speedup, baseline_gpus=1):
    """How many points an Amdahl fit of these speedups could use."""
    return int(usable_points(*_relative(gpus, speedup, baseline_gpus)).sum())


def fit_amdahl(gpus, speedup, baseline_gpus=1):
    """Least-squares fit of S(p) = 1/(s + (1-s)/p) over s in [0, 1]; None with fewer than
    AMDAHL_MIN_POINTS usable points (p > 1, speedup measured).

    The residuals are in speedup itself (not 1/S), so large GPU counts weigh as they are measured. s is
    one parameter, so a fine grid followed by a golden-section search finds the global minimum without
    depending on scipy.
    """
    p, measured = _relative(gpus, speedup, baseline_gpus)
    use = usable_points(p, measured)
    if int(use.sum()) < AMDAHL_MIN_POINTS:
        return None
    p, measured = p[use], measured[use]

    def sse(s):
        return float(np.sum((amdahl_speedup(p, s) - measured) ** 2))

    grid = np.linspace(0.0, 1.0, 2001)
    errors = [sse(s) for s in grid]
    best = int(np.argmin(errors))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = sse(a), sse(b)
    while hi - lo > 1e-13:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = sse(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = sse(b)
    s = min(max((lo + hi) / 2.0, 0.0), 1.0)
    if errors[best] < sse(s):  # the grid point itself (e.g. exactly s = 0) can beat the bracket's middle
        s = float(grid[best])
    return AmdahlFit(serial_fraction=s, rmse=math.sqrt(sse(s) / len(p)), points=int(len(p)))


def karp_flatt(gpus, speedup, baseline_gpus=1):
    """The experimentally determined serial fraction e(p) = (1/S - 1/p) / (1 - 1/p), per point.

    NaN at p <= 1 (undefined there) and where the speedup was not measured. For data that follow
    Amdahl's law exactly, e(p) equals s at every p; an e that grows with p points at overhead that
    grows with the GPU count (communication), not at a fixed serial part. Outside [0, 1] it is no serial
    fraction: below 0 the speedup is above linear, above 1 it is below 1 (measurement_checks.py).
    """
    p, measured = _relative(gpus, speedup, baseline_gpus)
    result = np.full(p.shape, np.nan)
    use = usable_points(p, measured)
    result[use] = (1.0 / measured[use] - 1.0 / p[use]) / (1.0 - 1.0 / p[use])
    return result
