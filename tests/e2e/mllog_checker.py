"""A checker of `:::MLLOG` logs, written from the rules of MLPerf Training's compliance checker
(mlcommons/logging: mlperf_logging/compliance_checker/training_5.0.0/common.yaml and closed_common.yaml).
It checks what those rules check for the common set, less the list of MLPerf's own benchmark names:
each key's count (exactly one, at least one), the order of init_start, init_stop, run_start and run_stop,
run_stop's status, the epoch and evaluation metadata, and the non-empty sample counts; plus the line
format itself (the JSON members and event types the logging package writes) and, for scalebench, the
hyperparameters and the throughput.

    python3 mllog_checker.py FILE      prints SUCCESS or the problems, exit status 0 or 1
"""
import json
import sys

PREFIX = ":::MLLOG "
EVENT_TYPES = {"POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"}
EXACTLY_ONE = ["submission_benchmark", "submission_division", "submission_org", "submission_platform",
               "submission_status", "init_stop", "run_start", "run_stop", "train_samples", "eval_samples",
               "global_batch_size", "gradient_accumulation_steps", "opt_name", "opt_base_learning_rate"]
AT_LEAST_ONE = ["cache_clear", "init_start", "epoch_start", "epoch_stop", "eval_start", "eval_stop", "eval_accuracy",
                "tracked_stats"]
INTERVAL_STARTS = {"init_start", "run_start", "epoch_start", "eval_start", "block_start"}
INTERVAL_ENDS = {"init_stop", "run_stop", "epoch_stop", "eval_stop", "block_stop"}


def parse(lines):
    """The records of the log's :::MLLOG lines (other lines are ignored), or raises ValueError."""
    records = []
    for number, line in enumerate(lines, 1):
        if not line.startswith(PREFIX):
            continue
        try:
            record = json.loads(line[len(PREFIX):])
        except json.JSONDecodeError as error:
            raise ValueError(f"line {number}: not JSON after {PREFIX.strip()}: {error}")
        missing = {"namespace", "time_ms", "event_type", "key", "value", "metadata"} - set(record)
        if missing:
            raise ValueError(f"line {number}: lacks {sorted(missing)}")
        if not isinstance(record["metadata"], dict) or not {"file", "lineno"} <= set(record["metadata"]):
            raise ValueError(f"line {number}: metadata lacks file and lineno")
        record["line"] = number
        records.append(record)
    return records


def check(lines):
    """The problems of a log, as sentences; empty when it passes."""
    try:
        records = parse(lines)
    except ValueError as error:
        return [str(error)]
    problems = []
    counts = {}
    state = {"init_started": False, "init_stopped": False, "run_started": False, "run_stopped": False,
             "open_epoch": None, "open_eval": None}
    last_time = None
    for r in records:
        key, value, meta, where = r["key"], r["value"], r["metadata"], f"line {r['line']} ({r['key']})"
        counts[key] = counts.get(key, 0) + 1
        expected = "INTERVAL_START" if key in INTERVAL_STARTS else "INTERVAL_END" if key in INTERVAL_ENDS else "POINT_IN_TIME"
        if r["event_type"] not in EVENT_TYPES or r["event_type"] != expected:
            problems.append(f"{where}: event_type {r['event_type']}, expected {expected}")
        if not isinstance(r["time_ms"], int) or (last_time is not None and r["time_ms"] < last_time):
            problems.append(f"{where}: time_ms goes backwards or is not an integer")
        last_time = r["time_ms"] if isinstance(r["time_ms"], int) else last_time
        if state["run_stopped"]:
            problems.append(f"{where}: after run_stop")
        if key == "submission_division" and value not in ("closed", "open"):
            problems.append(f"{where}: must be closed or open")
        elif key in ("submission_benchmark", "submission_org", "submission_platform", "submission_status") and not value:
            problems.append(f"{where}: empty")
        elif key == "cache_clear" and "value" not in r:
            problems.append(f"{where}: no value")
        elif key == "init_start":
            if state["init_stopped"] or state["run_started"]:
                problems.append(f"{where}: after init_stop or run_start")
            state["init_started"] = True
        elif key == "init_stop":
            if not state["init_started"] or state["run_started"]:
                problems.append(f"{where}: must follow init_start and precede run_start")
            state["init_stopped"] = True
        elif key == "run_start":
            if not state["init_stopped"]:
                problems.append(f"{where}: before init_stop")
            state["run_started"] = True
        elif key == "run_stop":
            if not state["run_started"]:
                problems.append(f"{where}: before run_start")
            if meta.get("status") not in ("success", "aborted"):
                problems.append(f"{where}: metadata status must be success or aborted")
            state["run_stopped"] = True
        elif key in ("epoch_start", "epoch_stop", "eval_start", "eval_stop", "eval_accuracy"):
            if "epoch_num" not in meta:
                problems.append(f"{where}: metadata lacks epoch_num")
            if not state["run_started"]:
                problems.append(f"{where}: before run_start")
            slot = "open_epoch" if key.startswith("epoch") else "open_eval"
            if key.endswith("_start"):
                if state[slot] is not None:
                    problems.append(f"{where}: the previous one was not stopped")
                state[slot] = meta.get("epoch_num")
            elif key.endswith("_stop"):
                if state[slot] != meta.get("epoch_num"):
                    problems.append(f"{where}: stops epoch {meta.get('epoch_num')}, but {state[slot]} is open")
                state[slot] = None
            elif state["open_eval"] is None:
                problems.append(f"{where}: outside eval_start/eval_stop")
        elif key in ("train_samples", "eval_samples") and value in ("", None):
            problems.append(f"{where}: empty")
        elif key in ("global_batch_size", "gradient_accumulation_steps") and not (isinstance(value, int) and value > 0):
            problems.append(f"{where}: must be a positive integer")
        elif key == "opt_base_learning_rate" and not (isinstance(value, (int, float)) and value > 0):
            problems.append(f"{where}: must be a positive number")
        elif key == "tracked_stats" and not (isinstance(value, dict) and isinstance(value.get("throughput"), (int, float))
                                             and value["throughput"] > 0):
            problems.append(f"{where}: value must hold a positive throughput")
    for key in EXACTLY_ONE:
        if counts.get(key, 0) != 1:
            problems.append(f"{key}: {counts.get(key, 0)} lines, exactly one required")
    for key in AT_LEAST_ONE:
        if counts.get(key, 0) < 1:
            problems.append(f"{key}: missing, at least one required")
    if state["open_epoch"] is not None or state["open_eval"] is not None:
        problems.append("an epoch or evaluation was started and never stopped")
    return problems


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        found = check(f.read().splitlines())
    print("\n".join(found) if found else "SUCCESS")
    sys.exit(1 if found else 0)
