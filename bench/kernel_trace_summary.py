#!/usr/bin/env python3
"""Time per kernel, and the GPU's idle time between kernels, from a bench/kernel_trace.cpp CSV.

  kernel_trace_summary.py TRACE.csv [--last-ms 200] [--skip-ms 0] [--steps N] [--top 30] [--groups]
                          [--window-csv OUT.csv]

The window is --last-ms milliseconds that end --skip-ms before the trace's last record: a steady stretch of
training, after start-up and before the last evaluation and the shutdown.
--steps divides the window's figures into per-step figures; without it the most common instance count of
a kernel in the window is taken as the number of steps (most kernels run once a step).
Columns: total GPU time of each kernel name, its instances, mean per instance, share of the kernel time.
The last lines: the window's wall time, the time at least one kernel ran (busy), the idle rest, and
the sum of kernel times (above busy where kernels ran side by side on several streams). Where the window
holds CUDA graphs' kernels (the training steps) beside others (input decoding, copies), the steps are counted
from the graphs' kernels, and a line says how long the graphs' kernels waited between one another, and how
much of that wait other work ran.
--groups adds, before those last lines, the time of each kind of work a step (convolutions, batch norm,
pooling, ...: bench/kernel_groups.py), over every kernel of the window, not only the --top listed.
--window-csv writes the window's records (a trace of a whole run is large; the window is what is read).
A trace taken with SCALEBENCH_KERNEL_TRACE_API=1 also lists the driver calls that allocate, free or wait.
"""
import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_groups import GROUP_ORDER, group_of  # noqa: E402


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"kernel_trace_summary.py: '{path}' holds no records; was the library loaded (CUDA_INJECTION64_PATH)?")
    return [(int(r["start_ns"]), int(r["end_ns"]), int(r["stream"]), r["kind"], r["name"], r["graph"]) for r in rows]


def window_of(records, last_ms, skip_ms):
    end = max(r[1] for r in records) - skip_ms * 1e6
    window = [r for r in records if end - last_ms * 1e6 <= r[0] and r[1] <= end]
    if not window:
        sys.exit("kernel_trace_summary.py: no record in the window; lower --skip-ms or raise --last-ms")
    return window


def write_window(window, path):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["start_ns", "end_ns", "stream", "graph", "kind", "name"])
        out.writerows((start, end, stream, graph, kind, name) for start, end, stream, kind, name, graph in window)


def busy_intervals(intervals):
    """The union of (start, end) intervals: disjoint, in order."""
    union = []
    for start, end in sorted(intervals):
        if union and start <= union[-1][1]:
            union[-1][1] = max(union[-1][1], end)
        else:
            union.append([start, end])
    return union


def busy_ns(intervals):
    return sum(end - start for start, end in busy_intervals(intervals))


def overlap_ns(a, b):
    """The time two unions of intervals (busy_intervals) share, in one pass over both."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def group_lines(by_name, steps, kernel_sum):
    """Each kind of work's time a step and share of the kernel time, largest first; empty groups left out."""
    totals = collections.Counter()
    for (kind, name), (t, _) in by_name.items():
        totals[group_of(kind, name)] += t
    lines = ["by kind of work, per step (us):", f"{'total':>9} {'share':>6}  group"]
    for group in sorted(totals, key=lambda g: (-totals[g], GROUP_ORDER.index(g))):
        lines.append(f"{totals[group] / steps / 1e3:9.2f} {100 * totals[group] / kernel_sum:5.1f}%  {group}")
    return lines


def api_lines(calls, steps):
    """The driver calls that allocate, free or wait (SCALEBENCH_KERNEL_TRACE_API=1), by name, with their threads."""
    by_name = collections.defaultdict(lambda: [0, 0, set()])
    for start, stop, thread, _, name, _ in calls:
        by_name[name][0] += stop - start
        by_name[name][1] += 1
        by_name[name][2].add(thread)
    lines = ["driver calls that allocate, free or wait, per step (us; threads: how many made them):",
             f"{'total':>9} {'count':>6} {'mean':>8} {'threads':>7}  name"]
    for name, (t, count, threads) in sorted(by_name.items(), key=lambda item: -item[1][0]):
        lines.append(f"{t / steps / 1e3:9.2f} {count / steps:6.2f} {t / count / 1e3:8.2f} {len(threads):7d}  {name}")
    return lines


def in_graph(record):
    return record[5] not in ("", "0")


def graph_wait_line(window, steps):
    """How long the graphs' kernels left the GPU to other work between one another, a step; empty where the
    window holds no graph or nothing beside the graphs."""
    graph = busy_intervals([(r[0], r[1]) for r in window if in_graph(r)])
    other = busy_intervals([(r[0], r[1]) for r in window if not in_graph(r)])
    if not graph or not other:
        return []
    gaps = [(graph[i][1], graph[i + 1][0]) for i in range(len(graph) - 1)]
    waited = sum(b - a for a, b in gaps)
    beside = overlap_ns(gaps, other)
    busy = sum(b - a for a, b in graph)
    return [f"graphs: their kernels busy {busy / steps / 1e3:.2f} us a step; between them {waited / steps / 1e3:.2f} us, "
            f"{beside / steps / 1e3:.2f} of it while work outside the graphs ran"]


def summarise(window, steps, top, groups=False):
    calls = [r for r in window if r[3] == "api"]
    window = [r for r in window if r[3] != "api"]
    if not window:
        sys.exit("kernel_trace_summary.py: the window holds driver calls but no kernel; raise --last-ms")
    end = max(r[1] for r in window)
    wall = end - min(r[0] for r in window)
    by_name = collections.defaultdict(lambda: [0, 0])
    for start, stop, _, kind, name, _ in window:
        by_name[(kind, name)][0] += stop - start
        by_name[(kind, name)][1] += 1
    if steps is None:  # the graphs' kernels are the steps', where there are any
        counted = collections.Counter((r[3], r[4]) for r in window if in_graph(r)) or \
            collections.Counter({key: count for key, (_, count) in by_name.items()})
        steps = collections.Counter(counted.values()).most_common(1)[0][0]
    kernel_sum = sum(t for t, _ in by_name.values())
    busy = busy_ns([(r[0], r[1]) for r in window])
    lines = [f"window: last {wall / 1e6:.2f} ms, {len(window)} records, {steps} steps; per step (us):"]
    lines.append(f"{'total':>9} {'count':>6} {'mean':>8} {'share':>6}  name")
    for (kind, name), (t, count) in sorted(by_name.items(), key=lambda item: -item[1][0])[:top]:
        label = name if kind == "kernel" else f"[{kind}] {name}"
        lines.append(f"{t / steps / 1e3:9.2f} {count / steps:6.2f} {t / count / 1e3:8.2f} {100 * t / kernel_sum:5.1f}%  {label}")
    if groups:
        lines += group_lines(by_name, steps, kernel_sum)
    if calls:
        lines += api_lines(calls, steps)
    lines += graph_wait_line(window, steps)
    lines.append(f"wall {wall / steps / 1e3:.2f} us a step; GPU busy {busy / steps / 1e3:.2f} us ({100 * busy / wall:.1f}%), "
                 f"idle {(wall - busy) / steps / 1e3:.2f} us; kernel time summed {kernel_sum / steps / 1e3:.2f} us; "
                 f"{len(window) / steps:.1f} records a step; streams {sorted({r[2] for r in window})}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--last-ms", type=float, default=200.0, help="the window: the trace's last milliseconds [200]")
    parser.add_argument("--skip-ms", type=float, default=0.0, help="the window ends this long before the last record [0]")
    parser.add_argument("--steps", type=int, help="steps in the window [the most common instance count]")
    parser.add_argument("--top", type=int, default=30, help="kernel names listed [30]")
    parser.add_argument("--groups", action="store_true", help="also each kind of work's time a step")
    parser.add_argument("--window-csv", help="also write the window's records to this CSV file")
    args = parser.parse_args()
    if args.last_ms <= 0 or args.skip_ms < 0:
        parser.error(f"--last-ms must be positive and --skip-ms not negative, got {args.last_ms} and {args.skip_ms}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    window = window_of(read(args.trace), args.last_ms, args.skip_ms)
    if args.window_csv:
        write_window(window, args.window_csv)
    print(summarise(window, args.steps, args.top, args.groups))


if __name__ == "__main__":
    main()
