"""Plots of scaling series and runs, as matplotlib Figures (no pyplot: no global state, no display).

Each function returns a Figure so tests can inspect its axes; save_figure() writes PNG and SVG.
"""
import math
import os
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, also where a display exists
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter  # noqa: E402

from measurement_checks import efficiency_flagged  # noqa: E402
from scaling_fits import amdahl_speedup  # noqa: E402

# Reproducible SVGs: the same results give byte-identical files (they get committed under results/).
matplotlib.rcParams["svg.hashsalt"] = "scalebench"

PHASES = ("data", "forward", "backward", "backward_overlap", "comm", "optimizer")
PHASE_LABELS = {"backward_overlap": "backward beside comm", "comm": "comm (exposed)"}
IDEAL_LABEL = "ideal"


def _figure(width=6.4, height=4.4):
    return Figure(figsize=(width, height), layout="constrained")


def _unit(series_list):
    """The x axis' name: "ranks" when every series ran on the CPU backend, else "GPUs"."""
    units = {getattr(s, "unit", "GPUs") for s in series_list}
    return "ranks" if units == {"ranks"} else "GPUs"


def _gpu_axis(ax, gpus, unit="GPUs"):
    """GPU counts on a log2 axis when they span a factor of 4 or more (1, 2, 4, 8 equally spaced)."""
    gpus = sorted(set(gpus))
    if gpus and gpus[-1] / gpus[0] >= 4:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_locator(FixedLocator(gpus))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel(unit)


def _error_bars(spreads, medians):
    """matplotlib's yerr (below, above) from the points' spreads; 0 where a point has none."""
    below, above = [], []
    for spread, median in zip(spreads, medians):
        ok = spread is not None and spread.count > 0
        below.append(max(median - spread.low, 0.0) if ok else 0.0)
        above.append(max(spread.high - median, 0.0) if ok else 0.0)
    return [below, above]


def _line_with_range(ax, xs, ys, spreads, flagged=None, **style):
    """Medians with min-max error bars (unnamed, in the line's colour); returns the line. A line joins
    only the points that are results: a flagged one (a measurement problem, measurement_checks.py) is an
    open marker of its own, and a single result is a marker without a line."""
    flagged = flagged or [False] * len(xs)
    kept = [(x, y) for x, y, f in zip(xs, ys, flagged) if not f]
    (line,) = ax.plot([x for x, _ in kept], [y for _, y in kept], marker="o",
                      linestyle="-" if len(kept) >= 2 else "none", **style)
    doubtful = [(x, y) for x, y, f in zip(xs, ys, flagged) if f]
    if doubtful:
        ax.plot([x for x, _ in doubtful], [y for _, y in doubtful], marker="o", linestyle="none", markerfacecolor="none",
                color=line.get_color(), label="_measurement problem")
    ax.errorbar(xs, ys, yerr=_error_bars(spreads, ys), fmt="none", ecolor=line.get_color(), capsize=3)
    return line


def _flagged(series, points):
    return [efficiency_flagged(series, p) if hasattr(series, "problems") else False for p in points]


def speedup_figure(series_list, with_fits=True):
    fig = _figure()
    ax = fig.add_subplot()
    gpus = sorted({p.gpus for s in series_list for p in s.points})
    for baseline in sorted({s.baseline_gpus for s in series_list}):
        label = IDEAL_LABEL if len({s.baseline_gpus for s in series_list}) == 1 else f"{IDEAL_LABEL} (baseline {baseline})"
        xs = [n for n in gpus if n >= baseline] or [baseline]
        ax.plot(xs, [n / baseline for n in xs], color="0.5", linestyle="--", linewidth=1, label=label)
    for s in series_list:
        points = [p for p in s.points if not math.isnan(p.speedup)]
        xs = [p.gpus for p in points]
        line = _line_with_range(ax, xs, [p.speedup for p in points], [p.speedup_spread for p in points],
                                _flagged(s, points), label=s.label)
        # No fit line where the series has no fit (too few points for its parameter, scaling_fits.py).
        if with_fits and s.fit is not None and s.fit.serial_fraction > 0:
            fx = [x for x in gpus if x >= s.baseline_gpus]
            ax.plot(fx, amdahl_speedup([x / s.baseline_gpus for x in fx], s.fit.serial_fraction), color=line.get_color(),
                    linestyle=":", linewidth=1, label=f"{s.label}: Amdahl s={s.fit.serial_fraction:.3f}")
    _gpu_axis(ax, gpus, _unit(series_list))
    ax.set_ylabel("speedup")
    ax.set_title("Speedup (medians, min-max bars)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


ZOOM_NOTE = "axis starts at {:.2f}, not 0"


def _zoom_from_zero(ax, low, high):
    """Lets the y axis span [low, high] of the data (with a margin) rather than start at 0, and marks
    that it does not: a break sign on the axis and a note in the corner."""
    margin = 0.08 * max(high - low, 0.02)
    bottom = max(low - margin, 0.0)
    ax.set_ylim(bottom, high + margin)
    if bottom > 0:
        for dy in (-0.012, 0.012):  # two short slanted strokes across the bottom of the y axis
            ax.plot([-0.015, 0.015], [0.01 + dy, 0.03 + dy], transform=ax.transAxes, color="black", linewidth=1,
                    clip_on=False)
        ax.text(0.01, 0.02, ZOOM_NOTE.format(bottom), transform=ax.transAxes, fontsize="small", va="bottom",
                ha="left", style="italic", color="0.3")


def efficiency_figure(series_list):
    fig = _figure()
    ax = fig.add_subplot()
    gpus = sorted({p.gpus for s in series_list for p in s.points})
    ax.axhline(1.0, color="0.5", linestyle="--", linewidth=1, label=IDEAL_LABEL)
    low, high = 1.0, 1.0
    for s in series_list:
        points = [p for p in s.points if not math.isnan(p.efficiency)]
        spreads = [p.efficiency_spread for p in points]
        _line_with_range(ax, [p.gpus for p in points], [p.efficiency for p in points], spreads, _flagged(s, points),
                         label=s.label)
        ends = [p.efficiency for p in points] + [x for sp in spreads if sp is not None and sp.count for x in (sp.low, sp.high)]
        low, high = min([low] + ends), max([high] + ends)
    _gpu_axis(ax, gpus, _unit(series_list))
    _zoom_from_zero(ax, low, high)
    ax.set_ylabel("efficiency")
    ax.set_title("Parallel efficiency (medians, min-max bars)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def phase_figure(series_list):
    """Stacked bars of seconds per epoch in each phase, one bar per GPU count and one panel per series
    (series differ too much in scale to share an axis); a black tick marks the epoch time."""
    panels = [(s.label, [p for p in s.points if p.phases_s]) for s in series_list]
    panels = [(label, points) for label, points in panels if points]
    columns = min(len(panels), 3)
    rows = math.ceil(len(panels) / columns)
    fig = _figure(max(6.4, 4.6 * columns), 4.4 * rows)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, (label, points) in zip(axes, panels):
        xs = list(range(len(points)))
        bottom = [0.0] * len(points)
        for phase in PHASES:
            heights = [p.phases_s.get(phase, math.nan) for p in points]
            heights = [0.0 if h is None or math.isnan(h) else h for h in heights]
            ax.bar(xs, heights, bottom=bottom, label=PHASE_LABELS.get(phase, phase))
            bottom = [b + h for b, h in zip(bottom, heights)]
        ax.plot(xs, [p.epoch_time_s for p in points], linestyle="none", marker="_", markersize=20, color="black",
                label="epoch time")
        ax.set_xticks(xs, [str(p.gpus) for p in points])
        ax.set_xlabel(_unit(series_list))
        ax.set_ylabel("time per epoch (s)")
        ax.set_title(textwrap.fill(label, 40), fontsize="medium")
        ax.legend(fontsize="x-small")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Where the time goes (each phase: max over ranks)")
    return fig


def _value_axis(ax, values, numeric):
    """Swept values on x: numbers on a log2 axis when they span a factor of 4, names as categories."""
    if not numeric:
        return
    values = sorted(values)
    if values and values[-1] / values[0] >= 4:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(ScalarFormatter())


def throughput_batch_figure(groups):
    """groups: {label: [(batch per GPU, Spread of images/s), ...]}, as scaling_series.throughput_by_batch gives."""
    fig = _figure()
    ax = fig.add_subplot()
    for label, points in groups.items():
        _line_with_range(ax, [b for b, _ in points], [s.median for _, s in points], [s for _, s in points], label=label)
    _value_axis(ax, {b for points in groups.values() for b, _ in points}, True)
    ax.set_xlabel("batch size per GPU")
    ax.set_ylabel("images/s")
    ax.set_title("Throughput against batch size (medians, min-max bars)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def sweep_figure(view):
    """Median throughput against one swept option (sweeps.SweepView), one line per GPU count, with
    min-max error bars; named values (precisions) are categories in the order of the table."""
    fig = _figure()
    ax = fig.add_subplot()
    categories = []
    for line in view.lines:
        for value, _ in line.points:
            if str(value) not in categories:
                categories.append(str(value))
    for line in view.lines:
        xs = [float(v) for v, _ in line.points] if view.numeric else [categories.index(str(v)) for v, _ in line.points]
        _line_with_range(ax, xs, [s.median for _, s in line.points], [s for _, s in line.points], label=line.label)
    if view.numeric:
        _value_axis(ax, {float(v) for line in view.lines for v, _ in line.points}, True)
    else:
        ax.set_xticks(range(len(categories)), categories)
    ax.set_xlabel(view.column)
    ax.set_ylabel("images/s")
    ax.set_title(textwrap.fill(f"{view.label}: throughput against {view.column}", 60), fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def curves_figure(labelled_runs, reference_curves=()):
    """Loss (train solid, test dashed) and test accuracy against the epoch, one colour per run; the learning
    references' curves (learning_comparison.Curve: test accuracy, and train loss where they have it) dotted."""
    fig = _figure(11, 4.4)
    loss_ax, acc_ax = fig.subplots(1, 2)
    for index, (label, run) in enumerate(labelled_runs):
        color = f"C{index % 10}"
        epochs = run.epochs["epoch"]
        loss_ax.plot(epochs, run.epochs["train_loss"], color=color, marker="o", markersize=3, label=f"{label} train")
        loss_ax.plot(epochs, run.epochs["test_loss"], color=color, linestyle="--", marker="s", markersize=3,
                     label=f"{label} test")
        acc_ax.plot(epochs, run.epochs["test_accuracy"], color=color, marker="o", markersize=3, label=label)
    for index, curve in enumerate(reference_curves, start=len(labelled_runs)):
        style = {"color": f"C{index % 10}", "linestyle": ":", "marker": "x", "markersize": 4}
        if curve.train_loss:
            epochs = sorted(curve.train_loss)
            loss_ax.plot(epochs, [curve.train_loss[e] for e in epochs], label=f"{curve.label} train", **style)
        epochs = sorted(curve.accuracy)
        acc_ax.plot(epochs, [curve.accuracy[e] for e in epochs], label=curve.label, **style)
    for ax, ylabel, title in ((loss_ax, "loss", "Loss"), (acc_ax, "test accuracy", "Test accuracy")):
        ax.set_xlabel("epoch")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
        ax.xaxis.get_major_locator().set_params(integer=True)
    return fig


def save_figure(fig, out_dir, name):
    """Writes <name>.png and <name>.svg; returns their paths."""
    paths = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{name}.{ext}")
        fig.savefig(path, dpi=120, metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    return paths


def save_section(out_dir, csv_name, csv_text, fig, name, alt):
    """A report section's files in out_dir: its table as csv_name and its figure as <name>.png and .svg.
    Returns the Markdown line that shows the figure, and the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, csv_name)
    with open(csv_path, "w", encoding="utf-8") as handle:
        handle.write(csv_text)
    return f"\n![{alt}]({name}.svg)\n", [csv_path] + save_figure(fig, out_dir, name)
