"""Where a study's efficiency went: each configuration's loss of efficiency against its baseline, split into
exposed communication, the wait for later ranks (skew, by the later rank's compute, input wait and
optimizer), input starvation, per-GPU compute and the unexplained rest. Read from the study file's
/efficiency_split table as `scale` wrote it (docs/scaling_diagnosis.md, "The efficiency loss, split"),
never recomputed here: a file without the table has none."""
import math

from tables import NA, markdown_table

# The table's parts in the order they stack; a NaN skew is inside exposed comm (an engine that does not
# time its arrival).
PARTS = (("exposed_comm", "exposed comm"), ("skew_compute", "skew: compute"), ("skew_input", "skew: input"),
         ("skew_optimizer", "skew: optimizer"), ("input", "input"), ("compute", "compute"),
         ("unexplained", "unexplained"))
NOT_IN_FILE = "not in this file (a study file written before /efficiency_split)"


def _is_baseline(study, index):
    """The smallest count among the /study rows of the same swept values and repeat."""
    keys = [name for name in study.dtype.names if name not in ("gpus",) and study.dtype[name].kind == "i"]
    same = [r for r in study if all(r[k] == study[index][k] for k in keys)]
    return study[index]["gpus"] == min(r["gpus"] for r in same)


def _label(result, row, unit):
    from scaling_series import count_text, swept_label
    from sweeps import value_names
    names = value_names(result)
    swept = {}
    for column in result.swept:
        value = row[column]
        swept[column] = names[column][int(value)] if column in names and 0 <= int(value) < len(names[column]) else int(value)
    parts = [count_text(int(row["gpus"]), unit), swept_label(swept)]
    if int(result.study_attrs.get("repeats", 1)) > 1:
        parts.append(f"repeat {int(row['repeat'])}")
    return ", ".join(p for p in parts if p)


def split_entries(result, unit):
    """[(label, split row as a dict)] of a study's configurations above their baselines, in /study order;
    None where the file has no /efficiency_split table."""
    split = getattr(result, "efficiency_split", None)
    if split is None:
        return None
    entries = []
    for index, row in enumerate(split):
        if index < len(result.study) and _is_baseline(result.study, index):
            continue
        values = {name: row[name].item() for name in split.dtype.names}
        entries.append((_label(result, result.study[index], unit), values))
    return entries


def _points(fraction):
    return NA if fraction is None or math.isnan(fraction) else f"{100 * fraction:.1f}"


def _ms(seconds):
    return NA if seconds is None or math.isnan(seconds) else f"{seconds * 1e3:.1f}"


def split_markdown(entries):
    """One row per configuration: its loss and each part, in points of efficiency."""
    headers = ["configuration", "efficiency", "loss", "exposed comm", "skew", "skew: compute / input / optimizer",
               "input", "compute", "unexplained", "step (ms)", "ideal step (ms)", "median rank"]
    rows = []
    for label, r in entries:
        skew_causes = " / ".join(_points(r[k]) for k in ("skew_compute", "skew_input", "skew_optimizer"))
        skew = _points(r["skew"]) if not math.isnan(r["skew"]) else "in exposed comm"
        rows.append([label, f"{100 * (1 - r['efficiency_loss']):.1f}%", _points(r["efficiency_loss"]),
                     _points(r["exposed_comm"]), skew, skew_causes, _points(r["input"]), _points(r["compute"]),
                     _points(r["unexplained"]), _ms(r["step_s"]), _ms(r["ideal_step_s"]),
                     str(r["median_rank"]) if r["median_rank"] >= 0 else NA])
    return markdown_table(headers, rows, ["l"] + ["r"] * (len(headers) - 1))


def split_figure(entries, title):
    """One stacked bar per configuration, in points of efficiency: the parts above zero stack upwards, a
    negative one (an unexplained rest below the baseline's) downwards; a black tick marks the loss."""
    from plots import _figure
    fig = _figure(max(6.4, 1.2 * len(entries) + 3), 4.4)
    ax = fig.add_subplot()
    xs = list(range(len(entries)))
    above = [0.0] * len(entries)
    below = [0.0] * len(entries)
    for name, label in PARTS:
        heights = [100 * r[name] if not math.isnan(r[name]) else 0.0 for _, r in entries]
        bottoms = [a if h >= 0 else b for h, a, b in zip(heights, above, below)]
        ax.bar(xs, heights, bottom=bottoms, label=label)
        above = [a + max(h, 0.0) for a, h in zip(above, heights)]
        below = [b + min(h, 0.0) for b, h in zip(below, heights)]
    ax.plot(xs, [100 * r["efficiency_loss"] for _, r in entries], linestyle="none", marker="_", markersize=24,
            color="black", label="loss (1 - efficiency)")
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(xs, [label for label, _ in entries], fontsize="small")
    ax.set_ylabel("points of efficiency lost")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="x-small")
    return fig
