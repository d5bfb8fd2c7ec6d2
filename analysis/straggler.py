"""The straggler of each run's epochs, from its /straggler and /arrivals tables (docs/scaling_diagnosis.md):
the rank that arrived last at the gradient collective, how often and by how much after the median rank,
and its compute and input wait against the median rank's, or that none stands out."""
import numpy as np


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def read_straggler(group):
    """(verdict rows as dicts, hosts) of an HDF5 run group, or None where the run has no /straggler."""
    if "straggler" not in group or "arrivals" not in group:
        return None
    table = group["straggler"]
    columns = [_text(c) for c in table.attrs["columns"]]
    causes = [_text(c) for c in table.attrs["causes"]]
    rows = [dict(zip(columns, (float(v) for v in row))) for row in np.atleast_2d(table[()])]
    for row in rows:
        row["cause"] = causes[int(row["cause"])]
    hosts = [_text(h) for h in group["arrivals"].attrs["hosts"]]
    return rows, hosts


def _ms(seconds):
    return f"{seconds * 1e3:.1f}"


def straggler_markdown(entries):
    """entries: list of (run label, (rows, hosts)). One table row per run and epoch."""
    lines = ["| run | epoch | steps | straggler | host | last at (% of steps) | after the median rank (ms) | "
             "threshold (ms) | compute vs median (ms) | input wait vs median (ms) | cause |",
             "|:----|------:|------:|:----------|:-----|------:|------:|------:|:------|:------|:------|"]
    for label, (rows, hosts) in entries:
        for r in rows:
            candidate = int(r["candidate"])
            if candidate < 0:
                continue  # one rank, or too few steps: nothing to judge
            named = int(r["rank"]) >= 0
            who = f"rank {candidate}" if named else f"none (rank {candidate} last most often)"
            host = hosts[candidate] if candidate < len(hosts) else ""
            lines.append(f"| {label} | {int(r['epoch'])} | {int(r['steps'])} | {who} | {host} | "
                         f"{100 * r['last_share']:.0f} | {_ms(r['excess_s'])} | {_ms(r['threshold_s'])} | "
                         f"{_ms(r['compute_s'])} vs {_ms(r['median_compute_s'])} | "
                         f"{_ms(r['input_s'])} vs {_ms(r['median_input_s'])} | {r['cause'] if named else '-'} |")
    return "\n".join(lines) + "\n"
