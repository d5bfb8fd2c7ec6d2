"""Step-time skew across ranks, from a run's sampled per-step phase times (/steps, [rank, step, phase] in ns).

For each sampled step, the spread is the slowest rank's step time minus the fastest rank's: the time the
fast ranks wait at the next collective. Its median (p50) and 99th percentile (p99) expose stragglers."""
import numpy as np


def step_skew(steps_ns):
    """steps_ns: array [ranks, steps, phases] of nanoseconds. Returns a dict of milliseconds, or None when
    there is nothing to compare (fewer than 2 ranks or no steps)."""
    steps = np.asarray(steps_ns, dtype=np.float64)
    if steps.ndim != 3 or steps.shape[0] < 2 or steps.shape[1] == 0:
        return None
    per_rank_step = steps.sum(axis=2) / 1e6  # [ranks, steps] in ms
    spread = per_rank_step.max(axis=0) - per_rank_step.min(axis=0)
    return {
        "ranks": int(steps.shape[0]),
        "steps": int(steps.shape[1]),
        "step_ms_median": float(np.median(per_rank_step.max(axis=0))),
        "spread_ms_p50": float(np.percentile(spread, 50)),
        "spread_ms_p99": float(np.percentile(spread, 99)),
    }


def skew_markdown(rows):
    """rows: list of (label, skew dict)."""
    lines = ["| run | ranks | sampled steps | step time p50 (ms) | skew p50 (ms) | skew p99 (ms) |",
             "|:----|------:|--------------:|-------------------:|--------------:|--------------:|"]
    for label, s in rows:
        lines.append(f"| {label} | {s['ranks']} | {s['steps']} | {s['step_ms_median']:.3f} | "
                     f"{s['spread_ms_p50']:.3f} | {s['spread_ms_p99']:.3f} |")
    return "\n".join(lines) + "\n"
