"""What a scaling series' figures cannot say, and the likely cause: the same rules as `scale`'s closing
lines (src/train/study/study_problems.cpp).

- A baseline of one steady epoch: every speedup and efficiency divides by a single timing, so none of
  them is a result.
- An efficiency above 100% beyond its measured range (the low end of the range is above 100%): more
  GPUs cannot do more than their share of the work, so the timing is wrong, most often because the runs
  are too short to time steadily or the baseline ran below its steady speed.
- A Karp-Flatt e outside [0, 1]: no serial fraction (below 0 the speedup is above linear, above 1 it is
  below 1).
A flagged figure is marked in the tables and its problem stated below them instead of being read as a
result; plots draw no line through it.
"""
import math
from dataclasses import dataclass

# Epochs shorter than this are too short to time steadily: start-up and the timer's own cost weigh in.
SHORT_EPOCH_S = 1.0
MARK = "*"


@dataclass(frozen=True)
class Problem:
    gpus: object   # the point's GPU count; None: every point of the series but its baseline
    what: str      # "efficiency" (its speedup and Karp-Flatt e too) or "karp_flatt"
    text: str


def _finite(value):
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def _percent(fraction):
    return f"{100.0 * fraction:.1f}%"


def _counted(n, unit):
    return f"{n} {unit if n != 1 else unit[:-1]}"


def series_problems(series):
    """The series' measurement problems, in the order `scale` prints them: the baseline's, then each
    point's efficiency, then each point's Karp-Flatt e."""
    problems = []
    unit = getattr(series, "unit", "GPUs")
    base = next((p for p in series.points if p.gpus == series.baseline_gpus), None)
    others = [p for p in series.points if p.gpus != series.baseline_gpus]
    if base is not None and others and base.throughput is not None and base.throughput.count == 1:
        problems.append(Problem(None, "efficiency",
                                f"the {series.baseline_gpus}-{unit[:-1]} baseline has one steady epoch, so no speedup "
                                "or efficiency against it is a result; give --epochs 3 or more"))
    for point in others:
        if _efficiency_problem(point.gpus, problems):
            continue
        spread = point.efficiency_spread
        has_range = spread is not None and spread.count > 0
        low = spread.low if has_range else point.efficiency
        if not _finite(low) or low <= 1.0:
            continue
        epoch = base.epoch_time_s if base is not None else math.nan
        if _finite(epoch) and epoch < SHORT_EPOCH_S:
            cause = f"the runs are too short for the timer (the baseline's epochs take {epoch:.3f} s); give more data or epochs"
        else:
            cause = "the baseline ran below its steady speed; give more --settle-epochs or --repeats"
        shown = f" (range {100.0 * spread.low:.1f}-{_percent(spread.high)})" if has_range else ""
        problems.append(Problem(point.gpus, "efficiency",
                                f"the efficiency at {_counted(point.gpus, unit)}, {_percent(point.efficiency)}{shown}, "
                                f"lies above 100% beyond its measured range: a measurement problem, not a result; {cause}"))
    for point in others:
        e = point.karp_flatt
        if _efficiency_problem(point.gpus, problems) or not _finite(e) or 0.0 <= e <= 1.0:
            continue
        why = "the speedup is above linear" if e < 0 else "the speedup is below 1 (slower than the baseline)"
        problems.append(Problem(point.gpus, "karp_flatt",
                                f"Karp-Flatt e at {_counted(point.gpus, unit)} is {e:.2f}, outside [0, 1]: {why}, so it "
                                "is no serial fraction"))
    return problems


def _efficiency_problem(gpus, problems):
    return any(p.what == "efficiency" and p.gpus in (None, gpus) for p in problems)


def efficiency_flagged(series, point):
    """Whether the point's speedup and efficiency are a measurement problem (never the baseline's own)."""
    return point.gpus != series.baseline_gpus and _efficiency_problem(point.gpus, series.problems)


def karp_flatt_flagged(series, point):
    return efficiency_flagged(series, point) or any(p.what == "karp_flatt" and p.gpus == point.gpus
                                                   for p in series.problems)
