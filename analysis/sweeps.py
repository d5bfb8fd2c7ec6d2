"""Throughput against each swept option of a study (`scale --sweep-batch-size ...`): one line per GPU
count, and per value of the other swept options, built from the study's series (one per combination)."""
from dataclasses import dataclass, field

from scaling_series import swept_label


@dataclass
class SweepLine:
    gpus: int
    others: dict                                # the other swept options' values on this line
    points: list = field(default_factory=list)  # (value of the swept option, Spread of images/s)

    @property
    def label(self):
        gpus = f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
        return ", ".join(filter(None, [gpus, swept_label(self.others)]))


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


def sweep_views(series_list, swept, names=None):
    """One view per swept column of one study's series that took two or more values; none for a study
    without sweeps. Numbers sort by value, names by their order in names[column] (the study's
    `<column>_names` attribute, e.g. fp32, tf32, fp16, bf16), else alphabetically."""
    names = names or {}
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
        if len(values) < 2:
            continue  # one value shows no trend
        numeric = all(_as_number(v) is not None for v in values)
        order = [str(n) for n in names.get(column) or ()]

        def rank(value):
            if numeric:
                return _as_number(value)
            return (order.index(str(value)) if str(value) in order else len(order), str(value))

        for line in lines.values():
            line.points.sort(key=lambda item: rank(item[0]))
        first = series_list[0]
        views.append(SweepView(source=first.sources[0], label=first.label.split(":")[0], column=column, numeric=numeric,
                               lines=[lines[key] for key in sorted(lines, key=lambda k: (k[0], str(k[1])))]))
    return views


def value_names(result):
    """{column: names} of a study's named swept columns, from its `<column>_names` attributes."""
    return {column: result.study_attrs[f"{column}_names"] for column in result.swept
            if f"{column}_names" in result.study_attrs}
