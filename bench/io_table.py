#!/usr/bin/env python3
"""The input pipelines side by side: scalebench io's rows (DIR/sb-io-*.csv, `scalebench io --out`) and
PyTorch's (DIR/pt-io-*.csv or .json, `pytorch_reference.py --io`), one line per decoder and worker
count: the median img/s over the runs of each side with their range, the median busy cores, and the ratio
scalebench / PyTorch of the medians. bench/gpu_node.sh --parts io writes such a folder.

    bench/io_table.py results/h200-x1-2026-12-02/io
"""
import argparse
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import io_rows  # noqa: E402

SIDES = (("scalebench", "sb-io-*.csv"), ("PyTorch", "pt-io-*"))


def runs_of(folder, pattern):
    """The rows of every run file of one side; a .json beside a .csv of the same run counts once."""
    paths = sorted(glob.glob(os.path.join(folder, pattern)))
    stems = {os.path.splitext(p)[0] for p in paths if p.endswith(".csv")}
    chosen = [p for p in paths if p.endswith(".csv") or (p.endswith(".json") and os.path.splitext(p)[0] not in stems)]
    return [io_rows.read_rows(p) for p in chosen]


def by_configuration(runs):
    """{(decode, workers): [row of each run]}."""
    table = {}
    for rows in runs:
        for row in rows:
            table.setdefault((row["decode"], row["workers"]), []).append(row)
    return table


def summary(rows, column):
    """(median, min, max) of a column over the runs, or None where no run has it."""
    values = [r[column] for r in rows if r.get(column) is not None]
    return (statistics.median(values), min(values), max(values)) if values else None


def rate_cell(s):
    if s is None:
        return "-"
    median, low, high = s
    return f"{median:,.0f} ({low:,.0f}-{high:,.0f})" if low != high else f"{median:,.0f}"


def cores_cell(s):
    return "-" if s is None else f"{s[0]:.1f}"


def side_by_side(folder):
    """The table's lines; a ValueError names what is missing."""
    sides = [(name, by_configuration(runs_of(folder, pattern))) for name, pattern in SIDES]
    if not any(table for _, table in sides):
        raise ValueError(f"no sb-io-*.csv or pt-io-* files in '{folder}' (bench/gpu_node.sh --parts io writes them)")
    keys = sorted({key for _, table in sides for key in table})
    counts = ", ".join(f"{name} {max((len(v) for v in table.values()), default=0)} run(s)" for name, table in sides)
    lines = [f"input pipelines, median img/s over the runs (range); {counts}",
             f"{'decode':<7}{'workers':>8}  {'scalebench img/s':>24}{'cores':>7}  {'PyTorch img/s':>24}{'cores':>7}{'ratio':>8}"]
    for key in keys:
        sb, pt = (table.get(key, []) for _, table in sides)
        sb_rate, pt_rate = summary(sb, "images_per_s"), summary(pt, "images_per_s")
        ratio = f"{sb_rate[0] / pt_rate[0]:.2f}x" if sb_rate and pt_rate and pt_rate[0] > 0 else "n/a"
        lines.append(f"{key[0]:<7}{key[1]:>8}  {rate_cell(sb_rate):>24}{cores_cell(summary(sb, 'busy_cores')):>7}  "
                     f"{rate_cell(pt_rate):>24}{cores_cell(summary(pt, 'busy_cores')):>7}{ratio:>8}")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="the folder of sb-io-*.csv and pt-io-*.csv/.json files")
    args = p.parse_args(argv)
    try:
        print("\n".join(side_by_side(args.folder)))
    except (OSError, ValueError) as e:
        sys.exit(f"io_table.py: {e}")


if __name__ == "__main__":
    main()
