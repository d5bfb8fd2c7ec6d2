"""The predict section of report.py: `scalebench predict` files (docs/prediction.md) as predicted efficiency
and images/s against the GPU count, weak and strong, with the study's measured points on the same axes,
and a table of the prediction, its overlap calibration, the GPU counts where exposed communication passes 5%
and 20%, and the leave-one-out check when the file holds one. The layout of the file is in docs/results_schema.md.
"""
import json
import math
import os
from dataclasses import dataclass, field

import h5py
import numpy as np


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def is_prediction(path):
    """True for a `scalebench predict` file; False for anything else, unreadable files included (report.py
    then says what is wrong with them)."""
    try:
        with h5py.File(path, "r") as f:
            return "predict" in f and "study" not in f
    except (OSError, ValueError):
        return False


@dataclass
class Measured:
    """The study's points of one scaling, the median over repeats at each GPU count."""
    scaling: str
    gpus: np.ndarray
    images_per_s: np.ndarray
    efficiency: np.ndarray


@dataclass
class Prediction:
    path: str
    label: str
    scaling_names: list
    rows: np.ndarray                 # the /predict table
    attrs: dict
    batch_size: int
    check: np.ndarray = None         # the /check table, None without --check
    calibration_names: list = field(default_factory=list)  # the /check table's calibration parameter names
    measured: list = field(default_factory=list)
    note: str = ""                   # why no measured points are drawn


def _study_path(prediction_path, study):
    """The study as the prediction names it: as given, else beside the prediction file."""
    if os.path.exists(study):
        return study
    beside = os.path.join(os.path.dirname(prediction_path), os.path.basename(study))
    return beside if os.path.exists(beside) else None


def _measured_points(path, batch_size):
    """The study's rows at the prediction's batch, by GPU count: medians over the repeats."""
    with h5py.File(path, "r") as f:
        study = f["study"][()]
        mode = _text(f["study"].attrs.get("mode", "weak"))
    if "batch_size" in study.dtype.names:
        recorded = study["batch_size"]
        study = study[(recorded == batch_size) | (recorded < 0)]
    counts = sorted(set(int(g) for g in study["gpus"]))
    if not counts:
        return []
    speed = np.array([np.median(study[study["gpus"] == g]["images_per_s"]) for g in counts])
    base = speed[0] / counts[0]  # the smallest count's images/s per GPU
    efficiency = speed / (np.array(counts) * base)
    return [Measured(mode, np.array(counts), speed, efficiency)]


def load_prediction(path):
    with h5py.File(path, "r") as f:
        table = f["predict"]
        rows = table[()]
        attrs = {k: (_text(v) if isinstance(v, (bytes, str)) else v) for k, v in table.attrs.items()}
        names = [_text(n) for n in table.attrs["scaling_names"]]
        config = json.loads(_text(f.attrs.get("config_json", "{}")) or "{}")
        check = f["check"][()] if "check" in f else None
        calibration_names = _names(f["check"].attrs.get("calibration_parameter_names", [])) if "check" in f else []
    p = Prediction(path=path, label=os.path.splitext(os.path.basename(path))[0], scaling_names=names, rows=rows, attrs=attrs,
                   batch_size=int(config.get("batch_size", 0)), check=check, calibration_names=calibration_names)
    study = _study_path(path, attrs.get("study", ""))
    if study:
        p.measured = _measured_points(study, p.batch_size)
    else:
        p.note = f"the study {attrs.get('study', '')!s} is not at hand: no measured points are drawn"
    return p


def _fmt(value, digits=1, scale=1.0, suffix=""):
    return "n/a" if value is None or not math.isfinite(float(value)) else f"{float(value) * scale:.{digits}f}{suffix}"


def _at(value):
    return "at no count predicted" if int(value) < 0 else f"at {int(value)} GPUs"


def _names(values):
    return [_text(v) for v in values]


def _calibration(attrs):
    """The overlap calibration of the prediction's rows, in words (files before predict_version 2 have none)."""
    if "calibration_gpus" not in attrs:
        return "none recorded (a file written before the overlap calibration)"
    gpus = int(attrs["calibration_gpus"])
    if gpus == 0:
        return "none (the study measured no count of 2 or more GPUs at this batch)"
    name = _names(attrs["calibration_parameter_names"])[int(attrs["calibration_parameter"])]
    bound = ", the fit stopped at its bound" if int(attrs.get("calibration_at_bound", 0)) else ""
    return f"{name} {_parameter_value(name, attrs['calibration_value'], 4)}, fitted at the measured {gpus} GPUs{bound}"


def _parameter_value(name, value, digits):
    """The overlap parameter's value: the wait (predict_version 4) in ms, the ratios as they are."""
    if name == "wait":
        return f"{float(value) * 1e3:.{digits - 1}g} ms"
    return f"{float(value):.{digits}g}"


def _compute_factor(attrs):
    """The multi-GPU compute factor of the prediction's rows, in words (files before predict_version 3 have none)."""
    if "compute_factor" not in attrs:
        return "none recorded (a file written before the compute factor)"
    value = float(attrs["compute_factor"])
    if not math.isfinite(value):
        return "not measured (1)"
    bound = ", clamped to its bound" if int(attrs.get("compute_factor_at_bound", 0)) else ""
    if "backward_factor" not in attrs:  # predict_version 3: one factor on the whole compute
        return f"{value:.4g}{bound}"
    backward_bound = ", clamped to its bound" if int(attrs.get("backward_factor_at_bound", 0)) else ""
    return f"{value:.4g} outside backward{bound}, {float(attrs['backward_factor']):.4g} on backward{backward_bound}"


def _rank_spread(attrs):
    """The ranks' spread the prediction carries, in words (files before predict_version 5 have none)."""
    if "rank_spread" not in attrs:
        return "none recorded (a file written before the slowest-rank term)"
    value = float(attrs["rank_spread"])
    if not value > 0:
        return "not measured (no sampled steps at the calibration count): no wait for a slower rank"
    return f"{value * 100:.2f}% of the compute"


def _slowest(row):
    """The slowest rank's share of the step (predict_version 5), n/a before."""
    return _fmt(row["slowest_rank_fraction"], 1, 100, "%") if "slowest_rank_fraction" in row.dtype.names else "n/a"


def _check_compute_factor(row):
    if "compute_factor" not in row.dtype.names:
        return "n/a"
    value = float(row["compute_factor"])
    if not math.isfinite(value):
        return "none"
    bound = " (bound)" if int(row["compute_factor_at_bound"]) else ""
    carried = "" if int(row["compute_factor_applied"]) else ", not carried here"
    if "backward_factor" not in row.dtype.names:  # predict_version 3
        return f"{value:.4g}{bound}{carried}"
    backward_bound = " (bound)" if int(row["backward_factor_at_bound"]) else ""
    return f"{value:.4g}{bound} / {float(row['backward_factor']):.4g}{backward_bound}{carried}"


def _check_calibration(row, names):
    if "calibration_gpus" not in row.dtype.names:
        return "n/a"
    if int(row["calibration_gpus"]) == 0:
        return "none"
    bound = " (bound)" if int(row["calibration_at_bound"]) else ""
    carried = "" if int(row["calibration_applied"]) else ", not carried here"
    name = names[int(row["calibration_parameter"])]
    return (f"{name} {_parameter_value(name, row['calibration_value'], 3)} at "
            f"{int(row['calibration_gpus'])}{bound}{carried}")


def predict_markdown(predictions):
    out = ["## Predicted scaling (`scalebench predict`)\n",
           "Predicted from the study's 1-GPU compute and the all-reduce sweep (docs/prediction.md); the measured "
           "points of the study are drawn beside the prediction.\n"]
    for p in predictions:
        a = p.attrs
        out.append(f"### {p.label}\n")
        inter = ("one flat ring" if not math.isfinite(float(a.get("inter_beta_bytes_per_s", math.nan)))
                 else f"nodes of {int(a['gpus_per_node'])} GPUs, between them alpha "
                      f"{_fmt(a['inter_alpha_s'], 2, 1e6)} us, beta {_fmt(a['inter_beta_bytes_per_s'], 2, 1e-9)} GB/s")
        out.append(f"All-reduce: ring alpha {_fmt(a.get('intra_alpha_s'), 2, 1e6)} us, beta "
                   f"{_fmt(a.get('intra_beta_bytes_per_s'), 2, 1e-9)} GB/s (worst fit error "
                   f"{_fmt(a.get('intra_fit_error'), 0, 100, '%')}); {inter}; bucket ready times from "
                   f"{a.get('ready_source', '?')}; compute factor: {_compute_factor(a)}; overlap calibration: {_calibration(a)}; "
                   f"ranks' spread: {_rank_spread(a)}.\n")
        out += ["| scaling | GPUs | nodes | batch/GPU | images/s | efficiency | exposed comm | slowest rank | best bucket (MiB) | "
                "images/s there |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in p.rows:
            out.append(f"| {p.scaling_names[int(r['scaling'])]} | {int(r['gpus'])} | {int(r['nodes'])} | "
                       f"{_fmt(r['per_gpu_batch'])} | {_fmt(r['images_per_s'])} | {_fmt(r['efficiency'], 1, 100, '%')} | "
                       f"{_fmt(r['exposed_comm_fraction'], 1, 100, '%')} | {_slowest(r)} | {r['best_bucket_mib']:g} | "
                       f"{_fmt(r['best_images_per_s'])} |")
        out.append("")
        for name in p.scaling_names:
            key5, key20 = f"{name}_exposed_5pct_gpus", f"{name}_exposed_20pct_gpus"
            if key5 in a:
                out.append(f"- {name} scaling: exposed communication passes 5% {_at(a[key5])}, 20% {_at(a[key20])}")
        if p.note:
            out.append(f"- {p.note}")
        if p.check is not None and len(p.check):
            out += ["", "Leave-one-out check (each count predicted without its own measurement, the compute factors and the "
                    "overlap calibrated at the largest measured count below it):\n",
                    "| GPUs | repeats | measured step (s) | spread | compute factor (outside / on backward) | calibration | "
                    "ranks' spread | predicted step (s) | error | "
                    "naive from | naive error |",
                    "|---|---|---|---|---|---|---|---|---|---|---|"]
            for c in p.check:
                ranks = (_fmt(c["rank_spread"], 2, 100, "%") if float(c["rank_spread"]) > 0 else "none") \
                    if "rank_spread" in c.dtype.names else "n/a"
                out.append(f"| {int(c['gpus'])} | {int(c['repeats'])} | {_fmt(c['measured_step_s'], 6)} | "
                           f"{_fmt(c['repeat_spread'], 1, 100, '%')} | {_check_compute_factor(c)} | "
                           f"{_check_calibration(c, p.calibration_names)} | {ranks} | "
                           f"{_fmt(c['predicted_step_s'], 6)} | "
                           f"{_fmt(c['predicted_error'], 1, 100, '%')} | {int(c['naive_from_gpus'])} | "
                           f"{_fmt(c['naive_error'], 1, 100, '%')} |")
        out.append("")
    return "\n".join(out) + "\n"


def predict_csv(predictions):
    lines = ["prediction,scaling,gpus,nodes,per_gpu_batch,images_per_s,efficiency,exposed_comm_fraction,slowest_rank_fraction,"
             "best_bucket_mib,best_images_per_s"]
    for p in predictions:
        for r in p.rows:
            slowest = float(r["slowest_rank_fraction"]) if "slowest_rank_fraction" in r.dtype.names else math.nan
            lines.append(",".join([p.label, p.scaling_names[int(r["scaling"])], str(int(r["gpus"])), str(int(r["nodes"])),
                                   repr(float(r["per_gpu_batch"])), repr(float(r["images_per_s"])),
                                   repr(float(r["efficiency"])), repr(float(r["exposed_comm_fraction"])), repr(slowest),
                                   f"{float(r['best_bucket_mib']):g}", repr(float(r["best_images_per_s"]))]))
    return "\n".join(lines) + "\n"


def predict_figure(predictions):
    """Efficiency and images/s against the GPU count (log2): a line per prediction and scaling, the study's
    measured points as markers of the same colour."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (eff_ax, speed_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    for p in predictions:
        for code, name in enumerate(p.scaling_names):
            mine = p.rows[p.rows["scaling"] == code]
            if not len(mine):
                continue
            label = f"{p.label} {name} (predicted)"
            (line,) = eff_ax.plot(mine["gpus"], mine["efficiency"], marker="o", markersize=3, label=label)
            speed_ax.plot(mine["gpus"], mine["images_per_s"], marker="o", markersize=3, color=line.get_color(), label=label)
            for m in p.measured:
                if m.scaling == name:
                    eff_ax.plot(m.gpus, m.efficiency, marker="s", markersize=8, linestyle="none", markerfacecolor="none",
                                color=line.get_color(), label=f"{p.label} {name} (measured)")
                    speed_ax.plot(m.gpus, m.images_per_s, marker="s", markersize=8, linestyle="none",
                                  markerfacecolor="none", color=line.get_color(), label=f"{p.label} {name} (measured)")
    for ax in (eff_ax, speed_ax):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.grid(True, which="both", alpha=0.3)
    speed_ax.set_yscale("log")
    eff_ax.set_ylabel("scaling efficiency")
    eff_ax.set_ylim(0, 1.05)
    speed_ax.set_ylabel("images/s")
    eff_ax.set_title("Predicted efficiency (□ measured)")
    speed_ax.set_title("Predicted throughput (□ measured)")
    eff_ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def report(paths, out_dir=None):
    """The section's Markdown; with out_dir also predict.csv and the plot there. Returns (markdown, written)."""
    predictions = [load_prediction(path) for path in paths]
    text = predict_markdown(predictions)
    written = []
    if out_dir:
        import plots
        image, written = plots.save_section(out_dir, "predict.csv", predict_csv(predictions), predict_figure(predictions),
                                            "predict_scaling", "predicted efficiency and throughput")
        text += image
    return text, written
