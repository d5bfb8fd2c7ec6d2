"""Medians and their spread: the figures the report shows for every measured quantity.

A run's figure is the median over its steady epochs; a configuration run several times (repeats) gets
the median of its runs' medians. The spread is that of the values the median was taken over: the
epochs of one run, or the runs of a repeated configuration. Quartiles interpolate linearly between
order statistics (numpy's and pandas' default).
"""
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Spread:
    median: float
    low: float     # minimum
    high: float    # maximum
    q1: float      # first quartile
    q3: float      # third quartile
    count: int     # how many values the median was taken over

    def scaled(self, factor):
        """The same spread of values multiplied by factor (>= 0), e.g. throughput to speedup."""
        return Spread(self.median * factor, self.low * factor, self.high * factor, self.q1 * factor, self.q3 * factor,
                      self.count)

    def error_bar(self):
        """(below, above) the median: the min-max range as matplotlib's yerr takes it."""
        return self.median - self.low, self.high - self.median


MISSING = Spread(math.nan, math.nan, math.nan, math.nan, math.nan, 0)


def median_spread(values):
    """Median, min, max and quartiles of the finite values; MISSING when there are none."""
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if finite.size == 0:
        return MISSING
    q1, median, q3 = np.percentile(finite, [25, 50, 75])
    return Spread(float(median), float(finite.min()), float(finite.max()), float(q1), float(q3), int(finite.size))


def over_repeats(spreads):
    """One figure from several runs of a configuration: the median of their medians, spread over those
    medians. A single run keeps its own spread (over its epochs)."""
    spreads = [s for s in spreads if s.count > 0]
    if len(spreads) == 1:
        return spreads[0]
    return median_spread([s.median for s in spreads])
