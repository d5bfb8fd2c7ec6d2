"""From results to scaling series: one series is one workload measured at several GPU counts.

A study file is one series (its /study table is the authority for speedup and efficiency). Run files
that differ only in their rank count form a series too (e.g. mnist-np1.h5, mnist-np2.h5, ...), and a
reference file (PyTorch) is one more. Per-run figures use the steady-state epochs: the first
`warmup_epochs` are left out, but never the last epoch, as `scale` does.
"""
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from scalebench_results import PHASE_COLUMNS
from scaling_fits import fit_amdahl, karp_flatt

# Config keys that do not change what is measured, so runs differing only in them share a series.
# "patience" is the improvement rule of files written before "stop_after_no_improvement".
IGNORED_CONFIG_KEYS = {"out", "log_interval", "sample_steps", "epochs", "patience", "target_patience",
                       "stop_after_no_improvement", "target_accuracy", "seed"}


@dataclass
class RunSummary:
    """Steady-state figures of one run."""
    images_per_s: float          # all images / all wall time (max over ranks) of the steady epochs
    epoch_time_s: float          # mean wall time of a steady epoch
    exposed_comm_fraction: float
    energy_per_image_j: float    # NaN where energy was not measured
    phases_s: dict               # phase -> mean seconds per steady epoch; "comm" is the exposed part
    epochs_used: int


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
    karp_flatt: float = math.nan
    batch_per_gpu: float = None
    phases_s: dict = None
    run: object = None           # the Run behind the point, where there is one


@dataclass
class Series:
    label: str
    kind: str                    # "study", "runs" or "reference"
    mode: str                    # "weak" or "strong"
    baseline_gpus: int
    points: list
    sources: list = field(default_factory=list)
    fit: object = None           # AmdahlFit or None


def steady_epochs(epochs, warmup_epochs):
    """The epochs that count: the warm-up ones dropped, but never the last (as `scale` counts them)."""
    rows = epochs[np.isfinite(epochs["wall_time_max_s"]) & (epochs["wall_time_max_s"] > 0)]
    return rows[min(warmup_epochs, max(len(rows) - 1, 0)):]


def summarise_run(run, warmup_epochs):
    rows = steady_epochs(run.epochs, warmup_epochs)
    if len(rows) == 0:
        return None
    time = rows["wall_time_max_s"]
    images = rows["images_per_s"] * time
    total_time, total_images = float(np.sum(time)), float(np.sum(images))
    # The phase columns are totals over ranks' maxima; "comm" counts overlapped communication too, so
    # the stack shows only the exposed part (where it was measured): the stacked bar is then wall time.
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
        images_per_s=total_images / total_time if total_time > 0 else math.nan,
        epoch_time_s=float(np.mean(time)),
        exposed_comm_fraction=float(np.sum(rows["exposed_comm_s"]) / total_time) if total_time > 0 else math.nan,
        energy_per_image_j=float(np.sum(energy) / total_images)
        if total_images > 0 and np.all(np.isfinite(energy)) else math.nan,
        phases_s=phases,
        epochs_used=int(len(rows)))


def _finish(series):
    """Karp-Flatt per point and the Amdahl fit, both relative to the series' baseline."""
    series.points.sort(key=lambda p: p.gpus)
    gpus = [p.gpus for p in series.points]
    speedups = [p.speedup for p in series.points]
    for point, value in zip(series.points, karp_flatt(gpus, speedups, series.baseline_gpus)):
        point.karp_flatt = float(value)
    series.fit = fit_amdahl(gpus, speedups, series.baseline_gpus)
    return series


def _relative_to_baseline(points, baseline_gpus):
    """Speedup as a throughput ratio (weak scaling's definition; for strong scaling, same images per
    epoch make it equal to T(base)/T(n)) and efficiency = speedup / (n / base)."""
    base = next((p for p in points if p.gpus == baseline_gpus), None)
    for point in points:
        if base is not None and base.images_per_s > 0 and math.isnan(point.speedup):
            point.speedup = point.images_per_s / base.images_per_s
        if math.isnan(point.efficiency) and not math.isnan(point.speedup):
            point.efficiency = point.speedup / (point.gpus / baseline_gpus)


def _point_from_run(run, summary):
    return ScalingPoint(gpus=run.gpus, images_per_s=summary.images_per_s, speedup=math.nan, efficiency=math.nan,
                        epoch_time_s=summary.epoch_time_s, exposed_comm_fraction=summary.exposed_comm_fraction,
                        energy_per_image_j=summary.energy_per_image_j, batch_per_gpu=run.per_rank_batch(),
                        phases_s=summary.phases_s, run=run)


def series_from_study(result, warmup_epochs):
    """A study file's series: the /study rows, with energy and phases from each /configs/gpus_<n>."""
    baseline = int(result.study_attrs.get("baseline_gpus", 1))
    # The study's own warm-up count, where the file records it, is what its /study rows left out.
    warmup_epochs = int(result.study_attrs.get("warmup_epochs", warmup_epochs))
    mode = str(result.study_attrs.get("mode", "weak"))
    points = {}
    for row in result.study:
        gpus = int(row["gpus"])
        run = result.configs.get(gpus)
        summary = summarise_run(run, warmup_epochs) if run is not None else None
        points[gpus] = ScalingPoint(
            gpus=gpus, images_per_s=float(row["images_per_s"]), speedup=float(row["speedup"]),
            efficiency=float(row["efficiency"]), epoch_time_s=float(row["epoch_time_s"]),
            exposed_comm_fraction=float(row["exposed_comm_fraction"]),
            time_to_accuracy_s=float(row["time_to_accuracy_s"]),
            energy_per_image_j=summary.energy_per_image_j if summary else math.nan,
            batch_per_gpu=run.per_rank_batch() if run else None,
            phases_s=summary.phases_s if summary else None, run=run)
    # A configuration without a study row (the job ended before its row was written) still counts.
    for gpus, run in result.configs.items():
        summary = summarise_run(run, warmup_epochs)
        if gpus not in points and summary is not None:
            points[gpus] = _point_from_run(run, summary)
    points = list(points.values())
    _relative_to_baseline(points, baseline)
    return _finish(Series(label=result.label, kind="study", mode=mode, baseline_gpus=baseline, points=points,
                          sources=[result.path]))


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


def series_from_runs(results, warmup_epochs, warn):
    """Groups run files by configuration (and directory: two clusters' runs stay apart) into series."""
    groups = {}
    for result in results:
        groups.setdefault(_series_key(result.run), []).append(result.run)
    series_list = []
    for runs in groups.values():
        by_gpus = {}
        for run in runs:
            summary = summarise_run(run, warmup_epochs)
            if summary is None:
                warn(f"{run.path} has no finished epoch; it is left out of the scaling tables.")
                continue
            point = _point_from_run(run, summary)
            if point.gpus in by_gpus:
                # Repeats of one GPU count: a benchmark reports the best it measured.
                kept = max(point, by_gpus[point.gpus], key=lambda p: p.images_per_s)
                warn(f"several runs of {point.gpus} GPUs in one series; using the fastest, {kept.run.path}.")
                point = kept
            by_gpus[point.gpus] = point
        if not by_gpus:
            continue
        points = list(by_gpus.values())
        baseline = min(by_gpus)
        _relative_to_baseline(points, baseline)
        first = runs[0]
        series_list.append(Series(label=config_label(first.config, os.path.splitext(os.path.basename(first.path))[0]),
                                  kind="runs", mode=first.scaling, baseline_gpus=baseline, points=points,
                                  sources=sorted({run.path for run in runs})))
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
            for gpus in sorted(result.configs):
                runs.append((f"{result.label}, {gpus} GPU{'s' if gpus > 1 else ''}", result.configs[gpus]))
        else:
            runs.append((f"{result.label}, {result.run.gpus} GPU{'s' if result.run.gpus > 1 else ''}", result.run))
    return runs


def throughput_by_batch(results, warmup_epochs):
    """Runs grouped by everything but the batch size and output, per GPU count: {label: [(batch, img/s)]}.
    Only groups that hold two or more batch sizes are returned (a single point shows no trend)."""
    groups = {}
    for _, run in all_runs(results):
        batch = run.per_rank_batch()
        summary = summarise_run(run, warmup_epochs)
        if batch is None or summary is None:
            continue
        config = {k: v for k, v in run.config.items() if k not in IGNORED_CONFIG_KEYS | {"batch_size"}}
        label = config_label(config, "run").replace(", batch ?", "") + f", {run.gpus} GPU{'s' if run.gpus > 1 else ''}"
        groups.setdefault(label, {})[batch] = max(summary.images_per_s, groups.get(label, {}).get(batch, 0.0))
    return {label: sorted(points.items()) for label, points in groups.items() if len(points) >= 2}
