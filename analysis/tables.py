"""Tables in Markdown (for people) and CSV (for programs) from runs and scaling series.

Markdown shows rounded numbers and percentages; CSV keeps full precision and fractions. A value that
was not measured (NaN) is "n/a" in both (pandas reads "n/a" as missing by default).
"""
import csv
import io
import math

from measurement_checks import MARK, efficiency_flagged, karp_flatt_flagged
from scalebench_results import EPOCH_COLUMNS
from scaling_fits import AMDAHL_MIN_POINTS, amdahl_points
from spread import MISSING

NA = "n/a"


# ------------------------------------------------------------------------------------------ formatting

def _missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_count(value):
    """Throughput-like numbers: thousands separators, no decimals (1 decimal below 100)."""
    if _missing(value):
        return NA
    return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"


def fmt_fixed(value, digits=2):
    return NA if _missing(value) else f"{value:.{digits}f}"


def fmt_percent(fraction, digits=1):
    return NA if _missing(fraction) else f"{100.0 * fraction:.{digits}f}%"


def fmt_general(value, digits=4):
    return NA if _missing(value) else f"{value:.{digits}g}"


def csv_value(value):
    if _missing(value):
        return NA
    if isinstance(value, float):
        return repr(float(value))  # the shortest text that reads back as the same double
    return str(value)


def markdown_table(headers, rows, align=None):
    """A GitHub-flavoured Markdown table; `align` is one of "l"/"r" per column (default: first left)."""
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]

    def line(cells):
        padded = [str(c).ljust(w) if a == "l" else str(c).rjust(w) for c, w, a in zip(cells, widths, align)]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else (":" + "-" * (w + 1)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in rows]) + "\n"


def csv_text(headers, rows):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for row in rows:
        writer.writerow([csv_value(v) for v in row])
    return out.getvalue()


# ------------------------------------------------------------------------------------------ epoch table

EPOCH_HEADERS = ["epoch", "time max (s)", "time mean (s)", "time min (s)", "img/s", "train loss", "test loss",
                 "test acc", "lr"]
EPOCH_CSV_HEADERS = ["source", "gpus"] + list(EPOCH_COLUMNS)


def _f(row, name):
    return float(row[name])


def epoch_markdown(run):
    rows = [[int(r["epoch"]), fmt_fixed(_f(r, "wall_time_max_s"), 3), fmt_fixed(_f(r, "wall_time_mean_s"), 3),
             fmt_fixed(_f(r, "wall_time_min_s"), 3), fmt_count(_f(r, "images_per_s")), fmt_fixed(_f(r, "train_loss"), 4),
             fmt_fixed(_f(r, "test_loss"), 4), fmt_percent(_f(r, "test_accuracy"), 2), fmt_general(_f(r, "learning_rate"))]
            for r in run.epochs]
    return markdown_table(EPOCH_HEADERS, rows, ["r"] * len(EPOCH_HEADERS))


# The integer columns whose -1 means "not measured".
COUNT_COLUMNS = ("peak_memory_bytes", "images_skipped", "gpu_decode_cpu_fallbacks", "peak_allocated_bytes")

INPUT_HEADERS = ["epoch", "GPU waited (s)", "read (s)", "decode (s)", "augment (s)", "copy (s)", "MB/s read",
                 "img/s per busy worker", "skipped", "CPU fallbacks"]


def _count(row, name):
    """A count column: -1 (or NaN, in files without it) is "not measured"."""
    value = _f(row, name)
    return NA if _missing(value) or value < 0 else f"{int(value):,}"


def input_markdown(run):
    """The input pipeline of image files per epoch; empty for a run on data held in memory."""
    rows = [r for r in run.epochs if not _missing(_f(r, "input_decode_s"))]
    if not rows:
        return ""
    table = [[int(r["epoch"]), fmt_fixed(_f(r, "data_s"), 3), fmt_fixed(_f(r, "input_read_s"), 2),
              fmt_fixed(_f(r, "input_decode_s"), 2), fmt_fixed(_f(r, "input_augment_s"), 2),
              fmt_fixed(_f(r, "input_copy_s"), 2), fmt_fixed(_f(r, "input_bytes_per_s") / 1e6, 1),
              fmt_count(_f(r, "input_images_per_worker_s")), _count(r, "images_skipped"),
              _count(r, "gpu_decode_cpu_fallbacks")] for r in rows]
    return markdown_table(INPUT_HEADERS, table, ["r"] * len(INPUT_HEADERS))


def epoch_csv(labelled_runs):
    rows = []
    for label, run in labelled_runs:
        for r in run.epochs:
            values = []
            for name in EPOCH_CSV_HEADERS[2:]:
                value = r[name].item()
                if name in COUNT_COLUMNS and value < 0:  # -1 marks "not measured"
                    value = math.nan
                values.append(value)
            rows.append([label, run.gpus] + values)
    return csv_text(EPOCH_CSV_HEADERS, rows)


# ---------------------------------------------------------------------------------------- scaling table

SCALING_HEADERS = ["GPUs", "img/s", "img/s min-max", "speedup", "speedup min-max", "efficiency", "exposed comm",
                   "energy per image (J/img)", "epoch time (s)", "Karp-Flatt e"]
# images_per_s is a median; its spread follows the columns of version 1 of this table.
SCALING_CSV_HEADERS = ["series", "kind", "mode", "baseline_gpus", "gpus", "images_per_s", "speedup", "efficiency",
                       "exposed_comm_fraction", "energy_per_image_j", "epoch_time_s", "karp_flatt",
                       "time_to_accuracy_s", "images_per_s_min", "images_per_s_max", "images_per_s_q1",
                       "images_per_s_q3", "count", "speedup_min", "speedup_max", "efficiency_min", "efficiency_max",
                       "wall_to_accuracy_s", "sm_clock_min_mhz", "measurement_problem"]


def scaling_markdown(series):
    with_tta = any(not _missing(p.time_to_accuracy_s) for p in series.points)
    with_wall = any(not _missing(p.wall_to_accuracy_s) for p in series.points)
    with_clock = any(not _missing(p.sm_clock_min_mhz) for p in series.points)
    headers = [series.unit] + SCALING_HEADERS[1:] + (["time to accuracy (s)"] if with_tta else []) + (["from process start (s)"] if with_wall else []) \
        + (["slowest SM clock (MHz)"] if with_clock else [])
    rows = []
    for p in series.points:
        # A figure that is a measurement problem carries MARK; problems_markdown says why.
        mark = MARK if efficiency_flagged(series, p) else ""
        karp_flatt = "-" if _missing(p.karp_flatt) or karp_flatt_flagged(series, p) else f"{p.karp_flatt:.4f}"
        row = [p.gpus, fmt_count(p.images_per_s), fmt_range(p.throughput), fmt_fixed(p.speedup) + mark,
               fmt_range(p.speedup_spread, fmt_fixed), fmt_percent(p.efficiency) + mark,
               fmt_percent(p.exposed_comm_fraction), fmt_general(p.energy_per_image_j, 3), fmt_fixed(p.epoch_time_s, 3),
               karp_flatt + (MARK if karp_flatt_flagged(series, p) else "")]
        if with_tta:
            row.append(fmt_fixed(p.time_to_accuracy_s, 1))
        if with_wall:
            row.append(fmt_fixed(p.wall_to_accuracy_s, 1))
        if with_clock:
            row.append(fmt_count(p.sm_clock_min_mhz))
        rows.append(row)
    return markdown_table(headers, rows, ["r"] * len(headers))


# The timed phases, in step order, with their column names ("comm": only the part computation waited for).
PHASE_TABLE = (("data", "data"), ("forward", "forward"), ("backward", "backward"),
               ("backward_overlap", "backward beside comm"), ("comm", "exposed comm"), ("optimizer", "optimizer"))


def phase_markdown(series):
    """Seconds per steady epoch in each timed phase (each the maximum over ranks) and the epoch time less
    their sum, each with its share of the epoch. Empty where no point has phase times."""
    headers = [series.unit] + [label for _, label in PHASE_TABLE] + ["epoch - phases", "epoch (s)"]
    rows = []
    for p in series.points:
        if not p.phases_s or _missing(p.epoch_time_s) or p.epoch_time_s <= 0:
            continue
        timed = [p.phases_s.get(name, math.nan) for name, _ in PHASE_TABLE]

        def cell(seconds):
            return NA if _missing(seconds) else f"{seconds:.3f} ({100.0 * seconds / p.epoch_time_s:.1f}%)"

        outside = p.epoch_time_s - sum(v for v in timed if not _missing(v))
        rows.append([p.gpus] + [cell(v) for v in timed] + [cell(outside), fmt_fixed(p.epoch_time_s, 3)])
    return markdown_table(headers, rows, ["r"] * len(headers)) if rows else ""


def problems_markdown(series):
    """The series' measurement problems, one line each under the table whose figures they mark."""
    return "".join(f"{MARK} Measurement problem: {problem.text}.\n\n" for problem in series.problems)


def amdahl_sentence(series):
    base = f" relative to {series.baseline_gpus} {series.unit}" if series.baseline_gpus != 1 else ""
    if series.fit is None:
        results = [p for p in series.points if not efficiency_flagged(series, p)]
        have = amdahl_points([p.gpus for p in results], [p.speedup for p in results], series.baseline_gpus)
        unit = series.unit if series.baseline_gpus != 1 else series.unit[:-1]
        return (f"Amdahl fit: none; its one parameter needs {AMDAHL_MIN_POINTS} or more points beyond the baseline of "
                f"{series.baseline_gpus} {unit}, and this series has {have}.")
    return (f"Amdahl fit{base}: serial fraction s = {series.fit.serial_fraction:.4f} "
            f"(rms error {series.fit.rmse:.3f} in speedup over {series.fit.points} point(s); "
            f"at most {1.0 / series.fit.serial_fraction:,.1f}x speedup)." if series.fit.serial_fraction > 0 else
            f"Amdahl fit{base}: serial fraction s = 0 (linear or better scaling over {series.fit.points} point(s)).")


def scaling_csv(series_list):
    rows = []
    for s in series_list:
        for p in s.points:
            t, sp, ef = (x or MISSING for x in (p.throughput, p.speedup_spread, p.efficiency_spread))
            problems = "; ".join(q.text for q in s.problems
                                 if q.gpus == p.gpus or (q.gpus is None and p.gpus != s.baseline_gpus))
            rows.append([s.label, s.kind, s.mode, s.baseline_gpus, p.gpus, p.images_per_s, p.speedup, p.efficiency,
                         p.exposed_comm_fraction, p.energy_per_image_j, p.epoch_time_s, p.karp_flatt,
                         p.time_to_accuracy_s, t.low, t.high, t.q1, t.q3, t.count, sp.low, sp.high, ef.low, ef.high,
                         p.wall_to_accuracy_s, p.sm_clock_min_mhz, problems])
    return csv_text(SCALING_CSV_HEADERS, rows)


def fits_csv(series_list):
    rows = [[s.label, s.mode, s.baseline_gpus, s.fit.serial_fraction if s.fit else math.nan,
             s.fit.rmse if s.fit else math.nan, s.fit.points if s.fit else 0] for s in series_list]
    return csv_text(["series", "mode", "baseline_gpus", "amdahl_serial_fraction", "amdahl_rmse", "points"], rows)


# ------------------------------------------------------------------------------------- comparison table

def comparison_markdown(series_list):
    """Series side by side per GPU count; each later series also as a throughput ratio to the first."""
    gpus = sorted({p.gpus for s in series_list for p in s.points})
    first = series_list[0]
    headers = ["GPUs"]
    for index, s in enumerate(series_list):
        headers += [f"{s.label} img/s", f"{s.label} speedup", f"{s.label} efficiency"]
        if index > 0:
            headers.append(f"{s.label} / {first.label} img/s")
    rows = []
    for n in gpus:
        row = [n]
        base = next((p for p in first.points if p.gpus == n), None)
        for index, s in enumerate(series_list):
            p = next((p for p in s.points if p.gpus == n), None)
            row += [fmt_count(p.images_per_s), fmt_fixed(p.speedup), fmt_percent(p.efficiency)] if p else [NA] * 3
            if index > 0:
                ratio = p.images_per_s / base.images_per_s if p and base and base.images_per_s > 0 else math.nan
                row.append(fmt_fixed(ratio))
        rows.append(row)
    return markdown_table(headers, rows, ["r"] * len(headers))


def comparison_csv(series_list):
    """The same comparison, wide: one row per GPU count, three columns per series."""
    gpus = sorted({p.gpus for s in series_list for p in s.points})
    headers = ["gpus"]
    for s in series_list:
        headers += [f"{s.label}: images_per_s", f"{s.label}: speedup", f"{s.label}: efficiency"]
    rows = []
    for n in gpus:
        row = [n]
        for s in series_list:
            p = next((p for p in s.points if p.gpus == n), None)
            row += [p.images_per_s, p.speedup, p.efficiency] if p else [math.nan] * 3
        rows.append(row)
    return csv_text(headers, rows)


# ------------------------------------------------------------------------------------------ sweep table

def fmt_range(spread, formatter=None):
    """"low-high" of a Spread, in the formatter of its median."""
    formatter = formatter or fmt_count
    if spread is None or spread.count == 0:
        return NA
    return f"{formatter(spread.low)}-{formatter(spread.high)}"


def sweep_markdown(view):
    """One row per line and value: the median images/s, its range and IQR, and how many values it is of."""
    others = list(view.lines[0].others) if view.lines else []
    headers = others + ["GPUs", view.column, "img/s (median)", "min-max", "IQR", "n"]
    rows = []
    for line in view.lines:
        for value, spread in line.points:
            rows.append([line.others[c] for c in others] + [line.gpus, value, fmt_count(spread.median),
                                                            fmt_range(spread),
                                                            f"{fmt_count(spread.q1)}-{fmt_count(spread.q3)}",
                                                            spread.count])
    return markdown_table(headers, rows, ["r"] * len(headers))


SWEEP_CSV_HEADERS = ["study", "swept", "value", "gpus", "others", "images_per_s", "images_per_s_min",
                     "images_per_s_max", "images_per_s_q1", "images_per_s_q3", "count"]


def sweeps_csv(views):
    rows = []
    for view in views:
        for line in view.lines:
            others = "; ".join(f"{c}={v}" for c, v in line.others.items())
            for value, s in line.points:
                rows.append([view.label, view.column, value, line.gpus, others, s.median, s.low, s.high, s.q1, s.q3,
                             s.count])
    return csv_text(SWEEP_CSV_HEADERS, rows)
