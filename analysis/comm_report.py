"""The comm section of report.py: `scalebench comm` sweeps as bus bandwidth against message size, per
collective and dtype, with the model's gradient size marked, compared across files.

Reads both layouts of the /comm table (docs/results_schema.md): version 2 has out-of-place and in-place
columns, algbw/busbw from the mean over ranks; version 1 (no `comm_version` attribute) has in-place
columns only, their busbw from the slowest rank. The figures shown are in-place busbw, present in both.
A `collective` column (code into the `collective_names` attribute) names each row's collective; files
without it hold all-reduces only.
"""
import math
import os
from dataclasses import dataclass, field

import h5py
import numpy as np


ALL_REDUCE = "all-reduce"
COLLECTIVE_NAMES = [ALL_REDUCE, "reduce-scatter", "all-gather", "broadcast"]  # by code, where a file names none


@dataclass
class SweepSeries:
    """One collective and dtype of one file."""
    label: str                 # file stem, the collective unless the all-reduce, and the dtype
    dtype: str
    sizes: np.ndarray          # bytes, ascending, the powers of two only
    busbw: np.ndarray          # in-place GB/s
    oop_busbw: np.ndarray      # out-of-place GB/s (NaN in version-1 files)
    model_bytes: float = math.nan
    model_busbw: float = math.nan
    collective: str = ALL_REDUCE


@dataclass
class Sweep:
    path: str
    label: str
    backend: str
    ranks: int
    version: int
    model: str
    series: list = field(default_factory=list)


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def load_sweep(path):
    """The sweep of one `scalebench comm` file."""
    with h5py.File(path, "r") as f:
        table = f["comm"]
        attrs = table.attrs
        rows = table[()]
        version = int(attrs.get("comm_version", 1))
        names = [_text(n) for n in attrs.get("dtype_names", ["fp32", "fp64", "bf16", "fp16"])]
        sweep = Sweep(path=path, label=os.path.splitext(os.path.basename(path))[0], backend=_text(attrs.get("backend", "?")),
                      ranks=int(attrs.get("ranks", 0)), version=version, model=_text(attrs.get("model", "")))
        collectives = [_text(n) for n in attrs.get("collective_names", COLLECTIVE_NAMES)]
    columns = rows.dtype.names
    codes = rows["collective"] if "collective" in columns else np.zeros(len(rows), dtype=int)
    for collective_code in dict.fromkeys(int(c) for c in codes):  # in run order
        collective = _name(collectives, collective_code)
        for code in dict.fromkeys(int(c) for c in rows["dtype"][codes == collective_code]):
            mine = rows[(codes == collective_code) & (rows["dtype"] == code)]
            sweep.series.append(_series(sweep, mine, collective, _name(names, code), columns))
    return sweep


def _name(names, code):
    return names[code] if 0 <= code < len(names) else str(code)


def _series(sweep, mine, collective, dtype, columns):
    """The rows of one collective and dtype: the powers of two, and the model's row apart."""
    sweep_rows = mine[mine["is_model_size"] == 0]
    model_rows = mine[mine["is_model_size"] == 1]
    oop = sweep_rows["oop_busbw_gbps"] if "oop_busbw_gbps" in columns else np.full(len(sweep_rows), math.nan)
    label = f"{sweep.label} {dtype}" if collective == ALL_REDUCE else f"{sweep.label} {collective} {dtype}"
    series = SweepSeries(label=label, dtype=dtype, sizes=sweep_rows["bytes"].astype(float),
                         busbw=sweep_rows["busbw_gbps"].astype(float), oop_busbw=np.asarray(oop, dtype=float),
                         collective=collective)
    if len(model_rows):
        series.model_bytes = float(model_rows["bytes"][0])
        series.model_busbw = float(model_rows["busbw_gbps"][0])
    return series


def _fmt(value, digits=2):
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def comm_markdown(sweeps):
    """The section: one row per file and dtype."""
    out = ["## All-reduce bandwidth (`scalebench comm`)\n",
           "Bus bandwidth (busbw, GB/s, in place; nccl-tests' definition: algbw x 2(n-1)/n for the all-reduce, "
           "x (n-1)/n for reduce-scatter and all-gather, x 1 for broadcast) of each sweep, the all-reduce unless "
           "named; the model row is the collective of the model's whole gradient.\n",
           "| sweep | backend | ranks | dtype | peak busbw | at size | busbw at model size | model size (MB) |",
           "|---|---|---|---|---|---|---|---|"]
    for sweep in sweeps:
        for s in sweep.series:
            peak = int(np.nanargmax(s.busbw)) if len(s.busbw) and np.any(np.isfinite(s.busbw)) else None
            note = "" if sweep.version >= 2 else " (v1: slowest rank)"
            if s.collective != ALL_REDUCE:
                note += f" ({s.collective})"
            out.append(f"| {sweep.label}{note} | {sweep.backend} | {sweep.ranks} | {s.dtype} | "
                       f"{_fmt(s.busbw[peak]) if peak is not None else 'n/a'} | "
                       f"{_human_bytes(s.sizes[peak]) if peak is not None else 'n/a'} | {_fmt(s.model_busbw)} "
                       f"({sweep.model}) | {_fmt(s.model_bytes / 1e6, 1)} |")
    return "\n".join(out) + "\n"


def comm_csv(sweeps):
    lines = ["sweep,dtype,bytes,busbw_gbps,oop_busbw_gbps,is_model_size,collective"]
    for sweep in sweeps:
        for s in sweep.series:
            for size, bw, oop in zip(s.sizes, s.busbw, s.oop_busbw):
                lines.append(f"{sweep.label},{s.dtype},{int(size)},{bw!r},{'' if math.isnan(oop) else repr(oop)},0,"
                             f"{s.collective}")
            if math.isfinite(s.model_bytes):
                lines.append(f"{sweep.label},{s.dtype},{int(s.model_bytes)},{s.model_busbw!r},,1,{s.collective}")
    return "\n".join(lines) + "\n"


def _human_bytes(n):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{int(n)}"


def busbw_figure(sweeps):
    """busbw against size (log2), a line per file and dtype, the model's point starred and labelled."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for sweep in sweeps:
        for s in sweep.series:
            (line,) = ax.plot(s.sizes, s.busbw, marker="o", markersize=3, label=s.label)
            if math.isfinite(s.model_bytes):
                ax.plot([s.model_bytes], [s.model_busbw], marker="*", markersize=12, color=line.get_color(),
                        linestyle="none")
                ax.annotate(sweep.model, (s.model_bytes, s.model_busbw), textcoords="offset points", xytext=(5, 5),
                            fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes, as nccl-tests counts them)")
    ax.set_ylabel("busbw (GB/s, in place)")
    ax.set_title("Collective bus bandwidth (★ model gradient size)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def report(paths, out_dir=None):
    """The section's Markdown; with out_dir also comm.csv and the busbw plot there. Returns (markdown, written)."""
    sweeps = [load_sweep(path) for path in paths]
    text = comm_markdown(sweeps)
    written = []
    if out_dir:
        import plots
        image, written = plots.save_section(out_dir, "comm.csv", comm_csv(sweeps), busbw_figure(sweeps), "comm_busbw",
                                            "busbw against size")
        text += image
    return text, written
