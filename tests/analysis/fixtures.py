"""Hand-made scalebench results files, written with h5py the way docs/results_schema.md lays them out
(the same layout src/metrics/results_file.cpp writes): root attributes, /epochs and
/epoch_times_per_rank, optional /steps; for a study, /study and /configs/gpus_<n>/."""
import json
import math
import os
import sys

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

ANALYSIS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis")
REPORT = os.path.abspath(os.path.join(ANALYSIS_DIR, "report.py"))
sys.path.insert(0, os.path.abspath(ANALYSIS_DIR))

NAN = math.nan
EPOCH_FIELDS = [("epoch", "<i8"), ("wall_time_max_s", "<f8"), ("wall_time_mean_s", "<f8"), ("wall_time_min_s", "<f8"),
                ("images_per_s", "<f8"), ("train_loss", "<f8"), ("test_loss", "<f8"), ("test_accuracy", "<f8"),
                ("learning_rate", "<f8"), ("exposed_comm_s", "<f8"), ("energy_j", "<f8"), ("peak_memory_bytes", "<i8"),
                ("data_s", "<f8"), ("forward_s", "<f8"), ("backward_s", "<f8"), ("comm_s", "<f8"), ("optimizer_s", "<f8")]
EPOCH_UNITS = ["1", "s", "s", "s", "images/s", "1", "1", "1", "1", "s", "J", "bytes", "s", "s", "s", "s", "s"]
STUDY_FIELDS = [("gpus", "<i8"), ("images_per_s", "<f8"), ("epoch_time_s", "<f8"), ("speedup", "<f8"),
                ("efficiency", "<f8"), ("exposed_comm_fraction", "<f8"), ("time_to_accuracy_s", "<f8")]
STUDY_UNITS = ["1", "images/s", "s", "1", "1", "1", "s"]
PHASES = ["data", "forward", "backward", "comm", "optimizer"]  # of schema 1 and 2
# Schema 3 splits backward: the part beside an all-reduce is backward_overlap.
EPOCH_FIELDS_V3 = EPOCH_FIELDS[:15] + [("backward_overlap_s", "<f8")] + EPOCH_FIELDS[15:]
EPOCH_UNITS_V3 = EPOCH_UNITS[:15] + ["s"] + EPOCH_UNITS[15:]
# The GPU clock columns, added to schema 3 later (after steps_resumed, which these fixtures leave out).
CLOCK_FIELDS = [("sm_clock_min_mhz", "<f8"), ("sm_clock_max_mhz", "<f8"), ("temperature_min_c", "<f8"),
                ("temperature_max_c", "<f8"), ("power_limited_fraction", "<f8"), ("thermal_limited_fraction", "<f8")]
CLOCK_UNITS = ["MHz", "MHz", "C", "C", "1", "1"]
# The input pipeline's columns of a run on image files, added after the clock columns.
INPUT_FIELDS = [("input_read_s", "<f8"), ("input_decode_s", "<f8"), ("input_augment_s", "<f8"), ("input_copy_s", "<f8"),
                ("input_bytes_per_s", "<f8"), ("input_images_per_worker_s", "<f8"), ("images_skipped", "<i8"),
                ("gpu_decode_cpu_fallbacks", "<i8")]
INPUT_UNITS = ["s", "s", "s", "s", "bytes/s", "images/s", "1", "1"]

STRING = h5py.string_dtype("utf-8")


def config(**overrides):
    """A config_json like TrainConfig::to_json's (the keys the report reads, and a few more)."""
    base = {"model": "mlp", "data": "synthetic:1x8x8:4:256:64", "epochs": 3, "batch_size": 64, "scaling": "weak",
            "optimizer": "sgd", "lr": 0.01, "seed": 1, "device": "cpu", "precision": "fp32", "layout": "nhwc",
            "sample_steps": 64, "out": "x.h5"}
    base.update(overrides)
    return base


def epoch(n, time, images_per_s, exposed_comm=0.1, energy=NAN, train_loss=None, test_accuracy=None):
    """One /epochs row; phases split the time 10/30/40/10 (comm: exposed)/10 %."""
    return {"epoch": n, "wall_time_max_s": time, "wall_time_mean_s": time * 0.95, "wall_time_min_s": time * 0.9,
            "images_per_s": images_per_s, "train_loss": 2.0 / n if train_loss is None else train_loss,
            "test_loss": 2.2 / n, "test_accuracy": 0.5 + 0.1 * n if test_accuracy is None else test_accuracy,
            "learning_rate": 0.01, "exposed_comm_s": exposed_comm, "energy_j": energy, "peak_memory_bytes": -1,
            "data_s": 0.1 * time, "forward_s": 0.3 * time, "backward_s": 0.4 * time, "comm_s": exposed_comm * 1.5,
            "optimizer_s": 0.1 * time}


def _root_attrs(f, world_size, cfg, complete, schema_version):
    if schema_version is not None:
        f.attrs.create("schema_version", schema_version, dtype="<i8")
    strings = {"tool_version": "0.1.0", "git_sha": "abc123", "command_line": "scalebench train ...",
               "config_json": json.dumps(cfg), "cuda_version": "n/a", "cudnn_version": "n/a", "nccl_version": "n/a",
               "mpi_version": "Open MPI v4.1.4", "hdf5_version": "1.10.8", "start_time": "2026-11-26T10:00:00Z",
               "end_time": "2026-11-26T10:05:00Z" if complete else "", "slurm_job_id": "", "launcher": "openmpi",
               "node_list": ""}
    for name, value in strings.items():
        f.attrs.create(name, value, dtype=STRING)
    for name, value in {"world_size": world_size, "node_count": 1, "complete": int(complete),
                        "ranks_per_node": world_size}.items():
        f.attrs.create(name, value, dtype="<i8")
    f.attrs.create("hosts", ["node1"] * world_size, dtype=STRING)
    f.attrs.create("gpu_models", ["NVIDIA H200"] * world_size, dtype=STRING)


def _tables(group, ranks, epochs, with_steps):
    v3 = all("backward_overlap_s" in row for row in epochs)  # rows with the schema-3 column
    fields, units = (EPOCH_FIELDS_V3, EPOCH_UNITS_V3) if v3 else (EPOCH_FIELDS, EPOCH_UNITS)
    if all("sm_clock_min_mhz" in row for row in epochs):
        fields, units = fields + CLOCK_FIELDS, units + CLOCK_UNITS
        if all("input_decode_s" in row for row in epochs):
            fields, units = fields + INPUT_FIELDS, units + INPUT_UNITS
    rows = np.array([tuple(row[name] for name, _ in fields) for row in epochs], dtype=fields)
    table = group.create_dataset("epochs", data=rows, maxshape=(None,), chunks=(64,))
    table.attrs.create("units", units, dtype=STRING)
    times = np.array([[row["wall_time_max_s"] - 0.01 * r for r in range(ranks)] for row in epochs], dtype="<f8")
    per_rank = group.create_dataset("epoch_times_per_rank", data=times.reshape(len(epochs), ranks),
                                    maxshape=(None, ranks), chunks=(64, ranks))
    per_rank.attrs.create("units", "s", dtype=STRING)
    if with_steps:
        steps = group.create_dataset("steps", data=np.full((ranks, 4, 5), 1000, dtype="<i8"),
                                     maxshape=(ranks, None, 5), chunks=(1, 256, 5))
        steps.attrs.create("units", "ns", dtype=STRING)
        steps.attrs.create("phases", PHASES, dtype=STRING)
        group.create_dataset("step_numbers", data=np.arange(4, dtype="<i8"), maxshape=(None,), chunks=(256,))


def write_run(path, world_size, epochs, cfg=None, complete=True, schema_version=1, with_steps=True):
    """A `scalebench train` file."""
    with h5py.File(path, "w", libver=("earliest", "v108")) as f:
        _root_attrs(f, world_size, cfg if cfg is not None else config(), complete, schema_version)
        _tables(f, world_size, epochs, with_steps)
    return path


def write_study(path, mode, rows, configs, cfg=None, baseline_gpus=1, target_accuracy=NAN, config_diff=None):
    """A `scalebench scale` file: rows are /study rows (dicts), configs maps gpus -> list of epoch rows.
    config_diff(gpus) gives a configuration's own config_json (what differs in it); default: the full cfg."""
    gpus_max = max(configs) if configs else max(r["gpus"] for r in rows)
    cfg = cfg if cfg is not None else config(scaling=mode)
    with h5py.File(path, "w", libver=("earliest", "v108")) as f:
        _root_attrs(f, gpus_max, cfg, True, 1)
        group = f.create_group("configs")
        for gpus, epochs in sorted(configs.items()):
            sub = group.create_group(f"gpus_{gpus}")
            sub.attrs.create("gpus", gpus, dtype="<i8")
            sub.attrs.create("config_json", json.dumps(config_diff(gpus) if config_diff else cfg), dtype=STRING)
            _tables(sub, gpus, epochs, with_steps=False)
        # wall_to_accuracy_s only where the rows give it, as files written before that column lack it.
        wall = bool(rows) and "wall_to_accuracy_s" in rows[0]
        fields = STUDY_FIELDS + ([("wall_to_accuracy_s", "<f8")] if wall else [])
        table = np.array([tuple(row[name] for name, _ in fields) for row in rows], dtype=fields)
        study = f.create_dataset("study", data=table, maxshape=(None,), chunks=(16,))
        study.attrs.create("units", STUDY_UNITS + (["s"] if wall else []), dtype=STRING)
        study.attrs.create("mode", mode, dtype=STRING)
        study.attrs.create("baseline_gpus", baseline_gpus, dtype="<i8")
        study.attrs.create("target_accuracy", target_accuracy, dtype="<f8")
    return path


def amdahl_study(path, serial_fraction=0.05, gpus=(1, 2, 4, 8), base_images_per_s=1000.0, images=60000,
                 energy_per_image=0.01):
    """A strong-scaling study whose speedups follow Amdahl's law exactly; returns the expected speedups."""
    rows, configs, speedups = [], {}, {}
    for n in gpus:
        s = 1.0 / (serial_fraction + (1.0 - serial_fraction) / n)
        speedups[n] = s
        ips = base_images_per_s * s
        time = images / ips
        exposed = 0.02 * (n - 1) * time
        rows.append({"gpus": n, "images_per_s": ips, "epoch_time_s": time, "speedup": s, "efficiency": s / n,
                     "exposed_comm_fraction": exposed / time, "time_to_accuracy_s": NAN})
        # The warm-up epoch (1) is slower; epochs 2 and 3 are the steady ones the study row describes.
        configs[n] = [epoch(1, time * 2, ips / 2, exposed, energy_per_image * images * 3),
                      epoch(2, time, ips, exposed, energy_per_image * images),
                      epoch(3, time, ips, exposed, energy_per_image * images)]
    write_study(path, "strong", rows, configs)
    return speedups


def write_comm(path):
    """A `scalebench comm` all-reduce sweep: root attributes and a /comm table, no training tables."""
    with h5py.File(path, "w", libver=("earliest", "v108")) as f:
        _root_attrs(f, 2, {"command": "comm", "device": "cpu"}, True, 1)
        fields = [("bytes", "<i8"), ("count", "<i8"), ("dtype", "<i8"), ("time_us_mean", "<f8"),
                  ("time_us_min_rank", "<f8"), ("time_us_max_rank", "<f8"), ("algbw_gbps", "<f8"),
                  ("busbw_gbps", "<f8"), ("wrong", "<i8"), ("is_model_size", "<i8")]
        f.create_dataset("comm", data=np.array([(1024, 256, 0, 5.0, 4.0, 6.0, 0.17, 0.17, 0, 0)], dtype=fields),
                         maxshape=(None,), chunks=(16,))
    return path


STUDY_FIELDS_V2 = STUDY_FIELDS[:1] + [("repeat", "<i8"), ("batch_size", "<i8"), ("precision", "<i8"),
                                      ("workers", "<i8")] + STUDY_FIELDS[1:]
PRECISION_NAMES = ["fp32", "tf32", "fp16", "bf16"]


def write_sweep_study(path, mode, runs, swept, repeats=1, cfg=None):
    """A schema-2 `scalebench scale` file with sweeps: runs are dicts {gpus, repeat, values: {column:
    value}, epochs: [epoch rows]}; each gets its /configs group (named as the writer names it) and a
    /study row of its mean throughput."""
    cfg = cfg if cfg is not None else config(scaling=mode)
    gpus_max = max(run["gpus"] for run in runs)
    rows = []
    with h5py.File(path, "w", libver=("earliest", "v108")) as f:
        _root_attrs(f, gpus_max, cfg, True, 2)
        group = f.create_group("configs")
        for run in runs:
            values = run["values"]
            name = f"gpus_{run['gpus']}" + "".join(f"_{c}_{values[c]}" for c in swept)
            name += f"_repeat_{run['repeat']}" if repeats > 1 else ""
            sub = group.create_group(name)
            sub.attrs.create("gpus", run["gpus"], dtype="<i8")
            sub.attrs.create("repeat", run["repeat"], dtype="<i8")
            sub.attrs.create("config_json", json.dumps(dict(cfg, **values)), dtype=STRING)
            _tables(sub, run["gpus"], run["epochs"], with_steps=False)
            merged = dict(cfg, **values)
            steady = run["epochs"][1:] or run["epochs"]
            rows.append((run["gpus"], run["repeat"], int(merged["batch_size"]),
                         PRECISION_NAMES.index(merged["precision"]), -1,
                         float(np.mean([e["images_per_s"] for e in steady])),
                         float(np.mean([e["wall_time_max_s"] for e in steady])), NAN, NAN, 0.0, NAN))
        study = f.create_dataset("study", data=np.array(rows, dtype=STUDY_FIELDS_V2), maxshape=(None,), chunks=(16,))
        study.attrs.create("units", ["1"] * 5 + STUDY_UNITS[1:], dtype=STRING)
        study.attrs.create("mode", mode, dtype=STRING)
        study.attrs.create("baseline_gpus", min(run["gpus"] for run in runs), dtype="<i8")
        study.attrs.create("target_accuracy", NAN, dtype="<f8")
        study.attrs.create("swept", list(swept), dtype=STRING)
        study.attrs.create("repeats", repeats, dtype="<i8")
        study.attrs.create("precision_names", PRECISION_NAMES, dtype=STRING)
    return path
