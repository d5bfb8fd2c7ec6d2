"""From results to scaling series: one series is one workload measured at several GPU counts.

A study file is one series per combination of its swept values. Run files that differ only in their
rank count form a series too (e.g. mnist-np1.h5, mnist-np2.h5, ...), and a reference file (PyTorch) is
one more. Per-run figures use the steady epochs: the first `settle_epochs` are left out, but never the
last epoch, as `scale` does (a study file records its own settle_epochs). Throughput and epoch time are
medians over the steady epochs of all repeats of a configuration, with their spread (spread.py); speedup
and efficiency are the medians' ratios to the series' smallest GPU count, their spread that of the point
over the baseline's median. These are the figures of `scale`'s table (src/train/study/study_medians.h).
"""
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from scalebench_results import PHASE_COLUMNS
from measurement_checks import efficiency_flagged, series_problems
from scaling_fits import fit_amdahl, karp_flatt
from spread import Spread, median_spread, over_repeats

# Config keys that do not change what is measured, so runs differing only in them share a series.
# "patience" is the improvement rule of files written before "stop_after_no_improvement".
IGNORED_CONFIG_KEYS = {"out", "log_interval", "sample_steps", "epochs", "patience", "target_patience",
                       "stop_after_no_improvement", "target_accuracy", "seed"}


@dataclass
class RunSummary:
    """Steady-state figures of one run."""
    throughput: Spread           # images/s of the steady epochs
    epoch_time: Spread           # wall time (max over ranks) of the steady epochs
    exposed_comm_fraction: float
    energy_per_image_j: float    # NaN where energy was not measured
    phases_s: dict               # phase -> mean seconds per steady epoch; "comm" is the exposed part
    epochs_used: int
    sm_clock_min_mhz: float = math.nan  # the slowest rank's SM clock, time-weighted over the steady epochs
    steady_rates: tuple = ()     # images/s of each steady epoch, for the medians over repeats
    steady_times: tuple = ()     # their wall times


@dataclass
class ScalingPoint:
    gpus: int
    images_per_s: float
    speedup: float
    efficiency: float
    epoch_time_s: float = math.nan
    exposed_comm_fraction: float = math.nan
    energy_per_image_j: float = math.nan
    time_to_accuracy_s: float = math.nan
    wall_to_accuracy_s: float = math.nan  # from process start; NaN in files written before the column
    sm_clock_min_mhz: float = math.nan    # the slowest rank's SM clock; NaN where not measured
    karp_flatt: float = math.nan
    batch_per_gpu: float = None
    phases_s: dict = None
    run: object = None           # the Run behind the point (the first, for repeats), where there is one
    throughput: Spread = None    # images_per_s is its median; None where only one number is known
    speedup_spread: Spread = None
    efficiency_spread: Spread = None


@dataclass
class Series:
    label: str
    kind: str                    # "study", "runs" or "reference"
    mode: str                    # "weak" or "strong"
    baseline_gpus: int
    points: list
    sources: list = field(default_factory=list)
    fit: object = None           # AmdahlFit or None
    swept: dict = field(default_factory=dict)  # a study series' swept values: {column: value}
    unit: str = "GPUs"           # what the counts count: "ranks" on the CPU backend
    problems: list = field(default_factory=list)  # measurement_checks.Problem: figures that are no result
    settle_epochs: int = None    # the epochs per configuration left out (runs and studies)
    settle_recorded: bool = True  # False: a study file that does not record them, so settle_epochs is assumed


def count_unit(attrs):
    """"ranks" for a file whose every rank ran on the CPU backend, else "GPUs"."""
    models = [str(m) for m in (attrs.get("gpu_models") or [])]
    return "ranks" if models and all(m == "cpu" for m in models) else "GPUs"


def count_text(n, unit):
    """"1 GPU", "2 GPUs", "1 rank", "2 ranks"."""
    return f"{n} {unit if n != 1 else unit[:-1]}"


def steady_epochs(epochs, settle_epochs):
    """The epochs that count: the settle epochs dropped, but never the last (as `scale` counts them)."""
    rows = epochs[np.isfinite(epochs["wall_time_max_s"]) & (epochs["wall_time_max_s"] > 0)]
    return rows[min(settle_epochs, max(len(rows) - 1, 0)):]


def summarise_run(run, settle_epochs):
    rows = steady_epochs(run.epochs, settle_epochs)
    if len(rows) == 0:
        return None
    time = rows["wall_time_max_s"]
    images = rows["images_per_s"] * time
    total_time, total_images = float(np.sum(time)), float(np.sum(images))
    # The phase columns are totals over ranks' maxima; "comm" of schema 1 and 2 may count overlapped
    # communication too, so the stack shows only the exposed part (where it was measured): the stacked
    # bar is then wall time. backward_overlap is NaN before schema 3 (backward holds it there).
    phases = {}
    for column in PHASE_COLUMNS:
        name = column[:-2]
        values = rows["exposed_comm_s"] if name == "comm" and np.all(np.isfinite(rows["exposed_comm_s"])) \
            else rows[column]
        phases[name] = float(np.mean(values))
    if all(math.isnan(v) for v in phases.values()):
        phases = None  # no phase timers in this run: no bar rather than an empty one
    energy = rows["energy_j"]
    return RunSummary(
        throughput=median_spread(rows["images_per_s"]),
        epoch_time=median_spread(time),
        exposed_comm_fraction=float(np.sum(rows["exposed_comm_s"]) / total_time) if total_time > 0 else math.nan,
        energy_per_image_j=float(np.sum(energy) / total_images)
        if total_images > 0 and np.all(np.isfinite(energy)) else math.nan,
        phases_s=phases,
        epochs_used=int(len(rows)),
        sm_clock_min_mhz=float(np.sum(rows["sm_clock_min_mhz"] * time) / total_time) if total_time > 0 else math.nan,
        steady_rates=tuple(float(v) for v in rows["images_per_s"]), steady_times=tuple(float(v) for v in time))


def _finish(series):
    """Karp-Flatt per point and the Amdahl fit, both relative to the series' baseline, and what of
    them is no result (measurement_checks.py)."""
    series.points.sort(key=lambda p: p.gpus)
    gpus = [p.gpus for p in series.points]
    for point, value in zip(series.points, karp_flatt(gpus, [p.speedup for p in series.points], series.baseline_gpus)):
        point.karp_flatt = float(value)
    series.problems = series_problems(series)
    results = [p for p in series.points if not efficiency_flagged(series, p)]  # no fit through a measurement problem
    series.fit = fit_amdahl([p.gpus for p in results], [p.speedup for p in results], series.baseline_gpus)
    return series


def _relative_to_baseline(points, baseline_gpus):
    """Speedup as a throughput ratio (weak scaling's definition; for strong scaling, same images per
    epoch make it equal to T(base)/T(n)) and efficiency = speedup / (n / base), with the point's spread
    over the baseline's median."""
    base = next((p for p in points if p.gpus == baseline_gpus), None)
    for point in points:
        if base is not None and base.images_per_s > 0 and math.isnan(point.speedup):
            point.speedup = point.images_per_s / base.images_per_s
            if point.throughput is not None:
                point.speedup_spread = point.throughput.scaled(1.0 / base.images_per_s)
        if math.isnan(point.efficiency) and not math.isnan(point.speedup):
            point.efficiency = point.speedup / (point.gpus / baseline_gpus)
            if point.speedup_spread is not None:
                point.efficiency_spread = point.speedup_spread.scaled(baseline_gpus / point.gpus)


def _median(values):
    return median_spread(values).median


def _mean_phases(summaries):
    """Seconds per epoch in each phase, averaged over repeats (a stack of phases must add up)."""
    phases = [s.phases_s for s in summaries if s.phases_s]
    if not phases:
        return None
    return {name: float(np.mean([p[name] for p in phases])) for name in phases[0]}


def _pooled(summaries, name, spread_name):
    """The spread of every steady epoch of the runs (each epoch counts once); a summary without its
    epochs' values contributes its own spread."""
    if all(getattr(s, name) for s in summaries):
        return median_spread([v for s in summaries for v in getattr(s, name)])
    return over_repeats([getattr(s, spread_name) for s in summaries])


def _point_from_runs(runs, summaries):
    """One point from the runs of one GPU count (repeats): medians over the steady epochs of all of them."""
    run = runs[0]
    throughput = _pooled(summaries, "steady_rates", "throughput")
    return ScalingPoint(gpus=run.gpus, images_per_s=throughput.median, speedup=math.nan, efficiency=math.nan,
                        epoch_time_s=_pooled(summaries, "steady_times", "epoch_time").median,
                        exposed_comm_fraction=_median([s.exposed_comm_fraction for s in summaries]),
                        energy_per_image_j=_median([s.energy_per_image_j for s in summaries]),
                        sm_clock_min_mhz=_median([s.sm_clock_min_mhz for s in summaries]),
                        batch_per_gpu=run.per_rank_batch(), phases_s=_mean_phases(summaries), run=run,
                        throughput=throughput)


def _point_from_run(run, summary):
    return _point_from_runs([run], [summary])


def _study_value(result, row, column):
    """A /study row's value of a swept column, as config_json records it (a named option by its name)."""
    value = row[column].item()
    names = result.study_attrs.get(f"{column}_names")
    return names[value] if names and 0 <= value < len(names) else value


def _study_row_key(result, row):
    names = row.dtype.names
    repeat = int(row["repeat"]) if "repeat" in names else 1
    return int(row["gpus"]), repeat, tuple(str(_study_value(result, row, c)) for c in result.swept)


def _point_from_study_rows(rows):
    """A configuration known only from its /study rows (its epochs table is empty)."""
    throughput = median_spread([float(r["images_per_s"]) for r in rows])
    return ScalingPoint(gpus=int(rows[0]["gpus"]), images_per_s=throughput.median, speedup=math.nan,
                        efficiency=math.nan, epoch_time_s=_median([float(r["epoch_time_s"]) for r in rows]),
                        exposed_comm_fraction=_median([float(r["exposed_comm_fraction"]) for r in rows]),
                        throughput=throughput)


def swept_label(swept):
    """"batch_size 64, precision bf16": swept values as labels and headings show them."""
    return ", ".join(f"{column} {value}" for column, value in swept.items())


def study_settle_epochs(result):
    """The settle epochs a study file records (/study's settle_epochs), or None where it does not."""
    value = result.study_attrs.get("settle_epochs")
    return None if value is None else int(value)


def series_from_study(result, settle_epochs):
    """A study file's series, one per combination of its swept values: each configuration's median
    throughput over the steady epochs of its repeats from /configs, the time to accuracy from /study.
    The file's own settle_epochs wins over `settle_epochs`, which serves files that do not record it."""
    recorded = study_settle_epochs(result)
    settle_epochs = settle_epochs if recorded is None else recorded
    mode = str(result.study_attrs.get("mode", "weak"))
    rows_by_key = {}
    for row in result.study:
        rows_by_key.setdefault(_study_row_key(result, row), []).append(row)
    combos = {}  # swept values -> {gpus: [(run, summary)]}
    for run in result.configs.values():
        key = tuple(str(run.swept.get(c)) for c in result.swept)
        combos.setdefault(key, {}).setdefault(run.gpus, [])
        summary = summarise_run(run, settle_epochs)
        if summary is not None:
            combos[key][run.gpus].append((run, summary))
    for gpus, _, key in rows_by_key:  # a study row whose group is missing still counts
        combos.setdefault(key, {}).setdefault(gpus, [])
    series_list = []
    for key, by_gpus in combos.items():
        points = []
        for gpus, measured in sorted(by_gpus.items()):
            study_rows = [r for (g, _, k), rows in rows_by_key.items() if g == gpus and k == key for r in rows]
            if measured:
                measured.sort(key=lambda item: item[0].repeat)
                point = _point_from_runs([r for r, _ in measured], [s for _, s in measured])
            elif study_rows:
                point = _point_from_study_rows(study_rows)
            else:
                continue
            point.time_to_accuracy_s = _median([float(r["time_to_accuracy_s"]) for r in study_rows])
            point.wall_to_accuracy_s = _median([float(r["wall_to_accuracy_s"]) for r in study_rows
                                                if "wall_to_accuracy_s" in r.dtype.names])
            points.append(point)
        if not points:
            continue
        baseline = min(p.gpus for p in points)
        _relative_to_baseline(points, baseline)
        swept = dict(zip(result.swept, key))
        label = f"{result.label}: {swept_label(swept)}" if swept else result.label
        series_list.append(_finish(Series(label=label, kind="study", mode=mode, baseline_gpus=baseline, points=points,
                                          sources=[result.path], swept=swept, unit=count_unit(result.attrs),
                                          settle_epochs=settle_epochs, settle_recorded=recorded is not None)))
    return series_list


def _series_key(run):
    config = {k: v for k, v in run.config.items() if k not in IGNORED_CONFIG_KEYS}
    if not config:  # no config recorded: the file is a series of its own
        return (run.path,)
    return (os.path.dirname(os.path.abspath(run.path)), json.dumps(config, sort_keys=True))


def config_label(config, fallback):
    if not config.get("model"):
        return fallback
    data = str(config.get("data", "")).split(":")[0]
    parts = [str(config["model"]), data, f"{config.get('scaling', 'weak')} scaling",
             f"batch {config.get('batch_size', '?')}", str(config.get("precision", "")), str(config.get("device", ""))]
    return ", ".join(part for part in parts if part)


def series_from_runs(results, settle_epochs, warn):
    """Groups run files by configuration (and directory: two clusters' runs stay apart) into series."""
    groups = {}
    by_path = {result.run.path: result for result in results}
    for result in results:
        groups.setdefault(_series_key(result.run), []).append(result.run)
    series_list = []
    for runs in groups.values():
        measured = {}
        for run in runs:
            summary = summarise_run(run, settle_epochs)
            if summary is None:
                warn(f"{run.path} has no finished epoch; it is left out of the scaling tables.")
                continue
            measured.setdefault(run.gpus, []).append((run, summary))
        if not measured:
            continue
        # Repeats of one GPU count: the median of their medians, with the spread over them.
        points = [_point_from_runs([r for r, _ in m], [s for _, s in m]) for m in measured.values()]
        by_gpus = {p.gpus: p for p in points}
        baseline = min(by_gpus)
        _relative_to_baseline(points, baseline)
        first = runs[0]
        series_list.append(Series(label=config_label(first.config, os.path.splitext(os.path.basename(first.path))[0]),
                                  kind="runs", mode=first.scaling, baseline_gpus=baseline, points=points,
                                  sources=sorted({run.path for run in runs}),
                                  unit=count_unit(by_path[first.path].attrs), settle_epochs=settle_epochs))
    return [_finish(series) for series in series_list]


def disambiguate(series_list):
    """Equal labels (one workload from two directories, same-named files of two clusters, configs that
    differ elsewhere) get their first source file appended, so tables and legends tell them apart."""
    counts = {}
    for series in series_list:
        counts[series.label] = counts.get(series.label, 0) + 1
    for series in series_list:
        if counts[series.label] > 1:
            series.label = f"{series.label} [{series.sources[0]}]"
    return series_list


def series_from_reference(reference):
    points = [ScalingPoint(gpus=p.gpus, images_per_s=p.images_per_s, speedup=math.nan, efficiency=math.nan,
                           epoch_time_s=p.epoch_time_s, energy_per_image_j=p.energy_per_image_j,
                           batch_per_gpu=p.batch_size) for p in reference.points]
    baseline = min(p.gpus for p in points)
    _relative_to_baseline(points, baseline)
    return _finish(Series(label=reference.label, kind="reference", mode=reference.scaling, baseline_gpus=baseline,
                          points=points, sources=[reference.path]))


def all_runs(results):
    """Every run in the inputs: (display label, Run), study configurations included."""
    runs = []
    for result in results:
        if result.is_study:
            for name in sorted(result.configs, key=lambda n: (result.configs[n].gpus, n)):
                run = result.configs[name]
                gpus = count_text(run.gpus, count_unit(result.attrs))
                detail = ", ".join(filter(None, [swept_label(run.swept),
                                                 f"repeat {run.repeat}" if run.repeat > 1 else ""]))
                runs.append((f"{result.label}, {gpus}" + (f", {detail}" if detail else ""), run))
        else:
            runs.append((f"{result.label}, {count_text(result.run.gpus, count_unit(result.attrs))}", result.run))
    return runs


def throughput_by_batch(results, settle_epochs):
    """Runs grouped by everything but the batch size and output, per GPU count: {label: [(batch, Spread)]},
    the median over repeats of a batch. Only groups that hold two or more batch sizes are returned (a
    single point shows no trend); a study that sweeps the batch size has its own sweep plot instead."""
    groups = {}
    for result in results:
        if result.is_study and "batch_size" in result.swept:
            continue
        recorded = study_settle_epochs(result) if result.is_study else None
        for _, run in all_runs([result]):
            batch = run.per_rank_batch()
            summary = summarise_run(run, settle_epochs if recorded is None else recorded)
            if batch is None or summary is None:
                continue
            config = {k: v for k, v in run.config.items() if k not in IGNORED_CONFIG_KEYS | {"batch_size"}}
            label = config_label(config, "run").replace(", batch ?", "") + f", {run.gpus} GPU{'s' if run.gpus > 1 else ''}"
            groups.setdefault(label, {}).setdefault(batch, []).append(summary.throughput)
    return {label: sorted((batch, over_repeats(spreads)) for batch, spreads in points.items())
            for label, points in groups.items() if len(points) >= 2}
