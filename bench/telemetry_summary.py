#!/usr/bin/env python3
"""GPU clocks, power and throttle reasons per run of bench/gpu_node.sh.

Reads RUN_DIR/telemetry.csv (unix time, then nvidia-smi's query fields per GPU) and RUN_DIR/runs.txt
(name, start, end per command) and prints, for every run and every GPU that was busy in it, the median SM
clock, memory clock, power and temperature over the samples with the GPU busy (utilization >= 50%), and
the active clock-event reasons seen. Standard library only.

Usage: bench/telemetry_summary.py RUN_DIR
"""
import csv
import statistics
import sys
from pathlib import Path

# nvidia-smi's clock-event reason bits (nvmlClocksEventReasons): the ones that lower the clock under load.
REASONS = {0x1: "idle", 0x2: "app-clocks", 0x4: "sw-power-cap", 0x8: "hw-slowdown", 0x20: "sw-thermal",
           0x40: "hw-thermal", 0x80: "hw-power-brake", 0x100: "display-clocks"}


def number(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def read_samples(path):
    samples = []
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.reader(f, skipinitialspace=True)
        header = next(rows, None)
        if not header:
            return samples
        for row in rows:
            if len(row) != len(header):
                continue  # a sample cut off by the end of the invocation
            s = dict(zip(header, row))
            reasons_field = next((k for k in s if "reasons" in k), None)
            reasons = s.get(reasons_field, "0x0").strip()
            samples.append({
                "time": number(s["time"]), "gpu": s["index"].strip(), "sm": number(s["clocks.sm"]),
                "mem": number(s["clocks.mem"]), "power": number(s["power.draw"]),
                "temp": number(s["temperature.gpu"]), "util": number(s["utilization.gpu"]),
                "reasons": int(reasons, 16) if reasons.startswith("0x") else 0,
            })
    return samples


def reason_names(mask):
    names = [name for bit, name in REASONS.items() if mask & bit and name != "idle"]
    return ",".join(names) if names else "none"


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    run_dir = Path(argv[1])
    for name in ("telemetry.csv", "runs.txt"):
        if not (run_dir / name).is_file():
            sys.exit(f"telemetry_summary.py: no {name} in '{run_dir}'")
    samples = read_samples(run_dir / "telemetry.csv")
    print(f"{'run':<28} {'gpu':>3} {'samples':>7} {'SM MHz':>7} {'mem MHz':>7} {'power W':>8} {'temp C':>6}  clock-event reasons")
    for line in (run_dir / "runs.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        name, begin, end = parts[0], float(parts[1]), float(parts[2])
        busy = [s for s in samples if begin <= s["time"] <= end and s["util"] >= 50]
        for gpu in sorted({s["gpu"] for s in busy}, key=lambda g: int(g) if g.isdigit() else 0):
            mine = [s for s in busy if s["gpu"] == gpu]
            mask = 0
            for s in mine:
                mask |= s["reasons"]
            def median(key):
                return statistics.median(s[key] for s in mine)
            print(f"{name:<28} {gpu:>3} {len(mine):>7} {median('sm'):>7.0f} {median('mem'):>7.0f} "
                  f"{median('power'):>8.1f} {median('temp'):>6.0f}  {reason_names(mask)}")


if __name__ == "__main__":
    main(sys.argv)
