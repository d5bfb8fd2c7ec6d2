"""Throughput against each swept option of a study (`scale --sweep-batch-size ...`): one line per GPU
count, and per value of the other swept options, built from the study's series (one per combination)."""
from dataclasses import dataclass, field


@dataclass
class SweepLine:
    gpus: int
    others: dict                                # the other swept options' values on this line
    points: list = field(default_factory=list)  # (value of the swept option, Spread of images/s)

    @property
    def label(self):
        parts = [f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"]
        return ", ".join(parts + [f"{column} {value}" for column, value in self.others.items()])


@dataclass
class SweepView:
    source: str    # the study file
    label: str     # the study's label
    column: str    # the swept option, by its /study column
    numeric: bool  # values are numbers (a log axis), else names (categories)
    lines: list


def _as_number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def sweep_views(series_list, swept):
    """One view per swept column of one study's series; none for a study without sweeps."""
    views = []
    for column in swept:
        lines = {}
        for series in series_list:
            others = {c: v for c, v in series.swept.items() if c != column}
            for point in series.points:
                if point.throughput is None:
                    continue
                key = (point.gpus, tuple(others.items()))
                lines.setdefault(key, SweepLine(point.gpus, others)).points.append(
                    (series.swept.get(column), point.throughput))
        if not lines:
            continue
        values = {value for line in lines.values() for value, _ in line.points}
        numeric = all(_as_number(v) is not None for v in values)
        for line in lines.values():
            line.points.sort(key=lambda item: _as_number(item[0]) if numeric else str(item[0]))
        first = series_list[0]
        views.append(SweepView(source=first.sources[0], label=first.label.split(":")[0], column=column, numeric=numeric,
                               lines=[lines[key] for key in sorted(lines, key=lambda k: (k[0], str(k[1])))]))
    return views
