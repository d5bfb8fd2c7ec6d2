"""What limits each run (docs/scaling_diagnosis.md, "What limits one run"): its step_split_* attributes, the
median rank's step in parts, its accelerator utilisation (AU), the part that limits it and, for image files
decoded by CPU workers, the workers a rank would need for 90% AU. The limit is the one the run named and stored
(step_split_limited_by): this module reads it and never decides it. Read as `train` and `scale` wrote them
(the root of a train file, each /configs group of a study file; docs/results_schema.md, "The step split");
a file written before the attributes has none."""
import math

PREFIX = "step_split_"
# The attributes read (SB_STEP_SPLIT_ATTRIBUTES in src/train/study/step_split.h), without the prefix.
NAMES = ("step_s", "compute", "optimizer", "input", "comm", "skew", "rest", "accelerator_utilisation",
         "median_rank", "steps", "workers_for_bar", "limited_by", "late_rank")


def read_step_split(group):
    """{name: float} of an HDF5 run group's step_split_* attributes (NaN where not measured, and where a file
    written before one of them lacks it), or None where the group has none of them."""
    if PREFIX + "step_s" not in group.attrs:
        return None
    return {name: float(group.attrs.get(PREFIX + name, math.nan)) for name in NAMES}


# The limit the run named, by its step_split_limited_by code (docs/results_schema.md, "The step split"), in the
# words its step split line gives after "limited by".
LIMIT_WORDS = {1: "compute", 2: "input", 3: "communication", 5: "time outside the timed phases (the loop between steps)"}
SKEW = 4  # waiting for the late rank (step_split_late_rank), where the run named one


def limit_words(split):
    """What the run said limits it; "" (unknown) where its file was written before step_split_limited_by."""
    code, late_rank = split["limited_by"], split["late_rank"]
    if math.isnan(code):
        return ""
    if code == 0:
        return "not measured (no sampled steps)" if math.isnan(split["step_s"]) else "no limit named"
    if code == SKEW:
        return f"waiting for rank {int(late_rank)}" if math.isfinite(late_rank) else "waiting for other ranks"
    return LIMIT_WORDS.get(code, f"unknown (code {code:g})")  # a code of a newer writer


def step_split_markdown(entries):
    """entries: list of (run label, split dict from read_step_split). One table row per run."""
    from tables import NA, markdown_table  # here: tables imports scalebench_results, which imports this module

    def _percent(share):
        return NA if math.isnan(share) else f"{100 * share:.1f}"

    def _count(value):
        return str(int(value)) if math.isfinite(value) else NA

    headers = ["run", "step (ms)", "median rank", "sampled steps", "compute %", "input wait %", "optimizer %",
               "communication %", "skew %", "rest %", "AU %", "limited by", "workers for 90% AU"]
    rows = []
    for label, s in entries:
        measured = math.isfinite(s["step_s"])
        # A NaN skew of a measured step: the engine does not time its arrival, its skew lies in communication.
        skew = "in communication" if measured and math.isnan(s["skew"]) else _percent(s["skew"])
        rows.append([label, f"{s['step_s'] * 1e3:.1f}" if measured else NA, _count(s["median_rank"]),
                     _count(s["steps"]), _percent(s["compute"]), _percent(s["input"]), _percent(s["optimizer"]),
                     _percent(s["comm"]), skew, _percent(s["rest"]), _percent(s["accelerator_utilisation"]),
                     limit_words(s), _count(s["workers_for_bar"])])
    return markdown_table(headers, rows, ["l"] + ["r"] * 10 + ["l", "r"])
