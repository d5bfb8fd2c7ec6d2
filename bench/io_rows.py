"""The rows of an input-pipeline measurement, as `scalebench io --out FILE.csv` writes them and
`pytorch_reference.py --io --csv/--json` writes its own: reading, writing and printing them, and the
process tree's CPU time that gives busy cores. Needs no PyTorch."""
import csv
import json
import os

COLUMNS = ("decode", "workers", "images_per_s", "mb_per_s", "busy_cores", "images_per_s_per_worker")
NUMERIC = {"workers": int, "images_per_s": float, "mb_per_s": float, "busy_cores": float,
           "images_per_s_per_worker": float}


def _typed(row, path):
    missing = [c for c in ("decode", "workers", "images_per_s") if row.get(c) in (None, "")]
    if missing:
        raise ValueError(f"{path}: a row lacks {', '.join(missing)} (columns: {', '.join(COLUMNS)})")
    out = {"decode": str(row["decode"])}
    for column, kind in NUMERIC.items():
        value = row.get(column)
        try:
            out[column] = None if value in (None, "") else kind(value)
        except ValueError:
            raise ValueError(f"{path}: {column} '{value}' is not a number") from None
    return out


def read_rows(path):
    """The rows of a CSV file (scalebench io --out, pytorch_reference.py --io --csv) or of a JSON file whose
    "rows" hold them (pytorch_reference.py --io --json), typed; a missing column reads as None."""
    with open(path, encoding="utf-8", newline="") as f:
        if path.endswith(".json"):
            rows = json.load(f).get("rows")
            if not isinstance(rows, list):
                raise ValueError(f"{path}: no \"rows\" list (expected pytorch_reference.py --io --json's file)")
        else:
            rows = list(csv.DictReader(f))
    return [_typed(row, path) for row in rows]


def write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _cell(value, digits):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def format_rows(rows):
    """The rows as the console table: decode, workers, img/s, MB/s, busy cores, img/s per worker."""
    lines = [f"{'decode':<7}{'workers':>8}{'img/s':>11}{'MB/s':>9}{'busy cores':>12}{'img/s/worker':>14}"]
    for r in rows:
        lines.append(f"{r['decode']:<7}{r['workers']:>8}{_cell(r['images_per_s'], 0):>11}{_cell(r.get('mb_per_s'), 1):>9}"
                     f"{_cell(r.get('busy_cores'), 2):>12}{_cell(r.get('images_per_s_per_worker'), 0):>14}")
    return "\n".join(lines)


def warmup_and_timed_batches(workers, requested):
    """(warm-up, timed) batch counts for `workers` DataLoader workers. Each worker builds whole batches and
    they start together, so batches arrive in rounds of `workers`: one round warms up, and the timed
    batches are whole rounds (requested, rounded up), so that the clock runs from one round's end to
    another's."""
    rounds = max(workers, 1)
    return max(rounds, 2), -(-requested // rounds) * rounds


def _children(pid):
    """The child processes of pid: from /proc/PID/task/*/children, or where the kernel lacks those files,
    from every process's parent in /proc/*/stat."""
    found, listed = [], False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                found += [int(p) for p in f.read().split()]
            listed = True
        except OSError:
            continue
    if listed:
        return found
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:  # the parent, field 4 of proc(5)
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _stat_seconds(pid, tick):
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15 of proc(5))


def process_tree_cpu_seconds():
    """User + system CPU seconds of this process (all its threads) and of its living descendants, such as
    DataLoader workers; None where /proc cannot tell (not Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        total = _stat_seconds(os.getpid(), tick)
        pending = _children(os.getpid())
        while pending:
            pid = pending.pop()
            try:
                total += _stat_seconds(pid, tick)
            except OSError:
                continue  # it ended meanwhile
            pending += _children(pid)
    except (OSError, ValueError, IndexError):
        return None
    return total
