"""Reading and validating scalebench results: HDF5 run and study files, and reference results.

The HDF5 layout is docs/results_schema.md (written by src/metrics/results_file.cpp):
  - a run file (`scalebench train`) holds /epochs and /epoch_times_per_rank at the root;
  - a study file (`scalebench scale`) holds /study and one group /configs/gpus_<n>[...] per
    configuration (GPU count x swept values x repeat), each with its own epochs table.
Every problem with an input becomes a ResultError whose message is one sentence naming the file.
"""
import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# A run may still be appending to the file we read; HDF5 1.10 has no per-open switch for this.
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402  (must come after the environment variable)
from learning_reference import is_learning_document, learning_reference  # noqa: E402
from result_error import ResultError  # noqa: E402,F401  (its readers import it from here)
from step_split import read_step_split  # noqa: E402
from straggler import read_straggler  # noqa: E402

# The schema versions this reader understands (kResultsSchemaVersion in src/metrics/results_schema.h).
# Version 1 studies have one configuration per GPU count and no sweep columns; they read as unswept
# studies of one repeat. Version 3 adds the backward_overlap phase; older files read it as not measured.
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3)

# The per-phase columns of an epochs table, in the order of the /steps phases axis (of schema 3).
PHASE_COLUMNS = ("data_s", "forward_s", "backward_s", "backward_overlap_s", "comm_s", "optimizer_s")
# Columns a file of an older schema lacks: they read as NaN ("not measured"), never as 0.
# The GPU clock columns, added to schema 3 later.
CLOCK_COLUMNS = ("sm_clock_min_mhz", "sm_clock_max_mhz", "temperature_min_c", "temperature_max_c",
                 "power_limited_fraction", "thermal_limited_fraction")
# The input pipeline of image files (NaN, or -1 for the counts, for a data set held in memory), added later.
INPUT_COLUMNS = ("input_read_s", "input_decode_s", "input_augment_s", "input_copy_s", "input_bytes_per_s",
                 "input_images_per_worker_s", "images_skipped", "gpu_decode_cpu_fallbacks")
# Device memory held by scalebench's own allocations (-1 where not measured), added after them.
MEMORY_COLUMNS = ("peak_allocated_bytes",)
LATER_EPOCH_COLUMNS = ("backward_overlap_s",) + CLOCK_COLUMNS + INPUT_COLUMNS + MEMORY_COLUMNS

EPOCH_COLUMNS = (
    "epoch", "wall_time_max_s", "wall_time_mean_s", "wall_time_min_s", "images_per_s", "train_loss",
    "test_loss", "test_accuracy", "learning_rate", "exposed_comm_s", "energy_j", "peak_memory_bytes",
) + PHASE_COLUMNS + CLOCK_COLUMNS + INPUT_COLUMNS + MEMORY_COLUMNS

# The /study columns every schema has; version 2 adds "repeat" and the sweepable options' columns.
STUDY_COLUMNS = ("gpus", "images_per_s", "epoch_time_s", "speedup", "efficiency", "exposed_comm_fraction",
                 "time_to_accuracy_s")


@dataclass
class Run:
    """One training run: a `train` file, or one configuration of a `scale` study."""
    path: str
    group: str                 # "/" or "/configs/gpus_<n>[...]"
    gpus: int                  # ranks of this run
    config: dict               # the parsed config_json ({} when absent)
    epochs: np.ndarray         # structured array, one row per epoch, fields as EPOCH_COLUMNS
    complete: bool = True
    steps: np.ndarray = None   # sampled per-step phase times [rank, step, phase] in ns, when stored
    straggler: tuple = None    # (verdict rows, hosts) from /straggler and /arrivals, when stored (straggler.py)
    step_split: dict = None    # the step_split_* attributes, when stored (step_split.py)
    repeat: int = 1            # which run of its study configuration (from 1)
    swept: dict = field(default_factory=dict)  # a study configuration's swept values: {column: value}

    @property
    def batch_size(self):
        value = self.config.get("batch_size")
        return int(value) if isinstance(value, (int, float)) else None

    @property
    def scaling(self):
        return self.config.get("scaling", "weak")

    def per_rank_batch(self):
        """The batch one rank computes: --batch-size is per rank (weak) or global (strong)."""
        if self.batch_size is None:
            return None
        return self.batch_size if self.scaling == "weak" else self.batch_size / self.gpus


@dataclass
class ResultFile:
    """What one HDF5 file holds: a run at the root, or a study (its table plus one run per configuration)."""
    path: str
    attrs: dict
    run: Run = None                               # `train` files
    study: np.ndarray = None                      # `scale` files: structured array of /study
    study_attrs: dict = field(default_factory=dict)
    configs: dict = field(default_factory=dict)   # group name ("gpus_2_batch_size_64") -> Run, `scale` files
    swept: tuple = ()                             # the study's swept columns, outermost first
    efficiency_split: np.ndarray = None           # `scale` files: /efficiency_split, where the file has it
    comm: bool = False                            # a `scalebench comm` all-reduce sweep (not reported yet)

    @property
    def is_study(self):
        return self.study is not None

    @property
    def label(self):
        return Path(self.path).stem


def _attr_value(value):
    """h5py hands back bytes, numpy scalars and object arrays; turn them into plain Python values."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_attr_value(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _attrs(obj):
    return {key: _attr_value(value) for key, value in obj.attrs.items()}


def _parse_config(text, path, where):
    if not text:
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultError(f"{path}: the config_json attribute of {where} is not valid JSON ({error.msg}).")
    return config if isinstance(config, dict) else {}


def _read_epochs(group, path):
    if "epochs" not in group:
        raise ResultError(f"{path}: the group {group.name} has no epochs table.")
    table = group["epochs"][()]
    missing = [name for name in EPOCH_COLUMNS if table.dtype.names is None or name not in table.dtype.names]
    later = [name for name in missing if name in LATER_EPOCH_COLUMNS]
    if len(later) < len(missing):
        lacking = [name for name in missing if name not in LATER_EPOCH_COLUMNS]
        raise ResultError(f"{path}: the epochs table of {group.name} lacks the columns {', '.join(lacking)}.")
    return _with_nan_columns(table, later)


def _with_nan_columns(table, names):
    """The table with float64 columns `names` added, all NaN."""
    if not names:
        return table
    dtype = np.dtype(table.dtype.descr + [(name, "<f8") for name in names])
    out = np.empty(table.shape, dtype=dtype)
    for name in table.dtype.names:
        out[name] = table[name]
    for name in names:
        out[name] = np.nan
    return out


def _read_run(group, path, gpus, config, complete):
    steps = group["steps"][()] if "steps" in group and isinstance(group["steps"], h5py.Dataset) else None
    return Run(path=path, group=group.name, gpus=int(gpus), config=config, epochs=_read_epochs(group, path),
               complete=complete, steps=steps, straggler=read_straggler(group),
               step_split=read_step_split(group))


def load_result(path):
    """Opens one scalebench HDF5 file; raises ResultError (one sentence naming the file) on any problem."""
    path = str(path)
    if not os.path.exists(path):
        raise ResultError(f"{path}: no such file.")
    if os.path.isdir(path):
        raise ResultError(f"{path}: is a directory, not a scalebench results file.")
    try:
        is_hdf5 = h5py.is_hdf5(path)
    except OSError as error:
        raise ResultError(f"{path}: cannot be read ({error.strerror or error}).")
    if not is_hdf5:
        raise ResultError(f"{path}: is not an HDF5 file, so not a scalebench result.")
    try:
        with h5py.File(path, "r") as f:
            return _load_open_file(f, path)
    except ResultError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as error:
        raise ResultError(f"{path}: cannot be read as a scalebench result ({error}).")


def _load_open_file(f, path):
    attrs = _attrs(f)
    if "schema_version" not in attrs:
        raise ResultError(f"{path}: is an HDF5 file but not a scalebench result (it has no schema_version attribute).")
    version = attrs["schema_version"]
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS)
        raise ResultError(f"{path}: has schema_version {version!r}, which this report.py does not know "
                          f"(it reads version {supported}); use the analysis/ of the scalebench that wrote it.")
    complete = bool(attrs.get("complete", 1))
    config = _parse_config(attrs.get("config_json", ""), path, "the root")
    result = ResultFile(path=path, attrs=attrs)
    if "study" in f:
        study = f["study"][()]
        missing = [name for name in STUDY_COLUMNS if study.dtype.names is None or name not in study.dtype.names]
        if missing:
            raise ResultError(f"{path}: the study table lacks the columns {', '.join(missing)}.")
        result.study = study
        result.study_attrs = _attrs(f["study"])
        result.swept = tuple(result.study_attrs.get("swept") or ())
        if "efficiency_split" in f:
            result.efficiency_split = f["efficiency_split"][()]
        for name, group in (f["configs"].items() if "configs" in f else []):
            if not isinstance(group, h5py.Group) or not name.startswith("gpus_"):
                continue
            group_attrs = _attrs(group)
            gpus = int(group_attrs.get("gpus", name[len("gpus_"):].split("_")[0]))
            # A configuration's config_json holds its own options (in older files only what differs,
            # e.g. its batch): it overrides the root's, which describes the whole job.
            group_config = dict(config, **_parse_config(group_attrs.get("config_json", ""), path, group.name))
            run = _read_run(group, path, gpus, group_config, complete)
            run.repeat = int(group_attrs.get("repeat", 1))
            run.swept = {column: group_config.get(column) for column in result.swept}
            result.configs[name] = run
    elif "epochs" in f:
        result.run = _read_run(f, path, attrs.get("world_size", 1), config, complete)
    elif "comm" in f:
        result.comm = True
    else:
        raise ResultError(f"{path}: is a scalebench file (schema {version}) but holds neither an epochs nor a study table.")
    return result


# ------------------------------------------------------------------------------------ reference results

@dataclass
class ReferencePoint:
    gpus: int
    images_per_s: float
    batch_size: float = None
    epoch_time_s: float = math.nan
    energy_per_image_j: float = math.nan


@dataclass
class Reference:
    """Throughput of another implementation (e.g. bench/pytorch_reference.py) at several GPU counts."""
    path: str
    label: str
    scaling: str
    points: list


def _number(value, path, what):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ResultError(f"{path}: {what} is {value!r}, not a number.")
    return number


def _reference_point(item, defaults, path, index):
    if not isinstance(item, dict) or "gpus" not in item or "images_per_s" not in item:
        raise ResultError(f"{path}: result {index + 1} needs the keys \"gpus\" and \"images_per_s\".")
    gpus = _number(item["gpus"], path, f"gpus of result {index + 1}")
    if gpus < 1 or gpus != int(gpus):
        raise ResultError(f"{path}: gpus of result {index + 1} must be a positive whole number, not {item['gpus']!r}.")
    def optional(key):
        raw = item.get(key)
        if raw in (None, ""):
            raw = defaults.get(key)
        return math.nan if raw in (None, "") else _number(raw, path, f"{key} of result {index + 1}")

    images_per_s = _number(item["images_per_s"], path, f"images_per_s of result {index + 1}")
    if not images_per_s > 0:
        raise ResultError(f"{path}: images_per_s of result {index + 1} must be positive, not {item['images_per_s']!r}.")
    batch = optional("batch_size")
    return ReferencePoint(gpus=int(gpus), images_per_s=images_per_s, batch_size=None if math.isnan(batch) else batch,
                          epoch_time_s=optional("epoch_time_s"), energy_per_image_j=optional("energy_per_image_j"))


def load_reference(path):
    """Reads reference results: JSON {"label", "scaling", "results": [{"gpus", "images_per_s", ...}]} or
    CSV with a header row naming the same keys (one row per GPU count), a Reference; or a learning JSON
    ({"mode": "learn", "history": [...]}), a LearningReference. analysis/README.md documents them."""
    path = str(path)
    if not os.path.isfile(path):
        raise ResultError(f"{path}: no such reference file.")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ResultError(f"{path}: cannot be read as a reference file ({error}).")
    stem = Path(path).stem
    if path.lower().endswith(".csv"):
        rows = list(csv.DictReader(text.splitlines()))
        if not rows:
            raise ResultError(f"{path}: the reference CSV has no rows.")
        label = rows[0].get("label") or stem
        scaling = rows[0].get("scaling") or "weak"
        items, defaults = rows, {}
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ResultError(f"{path}: is not valid JSON ({error.msg} at line {error.lineno}).")
        if is_learning_document(document):
            return learning_reference(document, path)
        if not isinstance(document, dict) or not isinstance(document.get("results"), list) or not document["results"]:
            raise ResultError(f"{path}: is neither a throughput reference (a non-empty \"results\" list) nor a "
                              "learning reference (\"mode\": \"learn\" with a \"history\" list).")
        label = str(document.get("label") or stem)
        scaling = str(document.get("scaling") or "weak")
        items = document["results"]
        defaults = {key: document[key] for key in ("batch_size",) if document.get(key) is not None}
    if scaling not in ("weak", "strong"):
        raise ResultError(f"{path}: scaling must be \"weak\" or \"strong\", not {scaling!r}.")
    points = [_reference_point(item, defaults, path, index) for index, item in enumerate(items)]
    return Reference(path=path, label=label, scaling=scaling, points=sorted(points, key=lambda p: p.gpus))
