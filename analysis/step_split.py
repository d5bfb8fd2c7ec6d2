"""What limits each run (docs/scaling_diagnosis.md, "What limits one run"): its step_split_* attributes, the
median rank's step in parts, its accelerator utilisation (AU), the part that limits it and, for image files
decoded by CPU workers, the workers a rank would need for 90% AU. Read as `train` and `scale` wrote them
(the root of a train file, each /configs group of a study file; docs/results_schema.md, "The step split");
a file written before the attributes has none."""
import math

PREFIX = "step_split_"
# The attributes read (SB_STEP_SPLIT_ATTRIBUTES in src/train/study/step_split.h), without the prefix.
NAMES = ("step_s", "compute", "optimizer", "input", "comm", "skew", "rest", "accelerator_utilisation",
         "median_rank", "steps", "workers_for_bar")
# MLPerf Storage's AU bar (kUtilisationBar in src/data/gpu_emulation.h).
UTILISATION_BAR = 0.9


def read_step_split(group):
    """{name: float} of an HDF5 run group's step_split_* attributes (NaN where not measured), or None where the
    group lacks them (a file written before them)."""
    if PREFIX + "step_s" not in group.attrs:
        return None
    return {name: float(group.attrs.get(PREFIX + name, math.nan)) for name in NAMES}


def limit(split):
    """The limit's name. Mirrors split_step() and largest_wait() in src/train/study/step_split.cpp: "none"
    where the step is not measured; compute where AU reaches the bar; else the largest of input, comm, skew
    (NaN counts 0) and rest, the first of them on a tie."""
    if not (math.isfinite(split["step_s"]) and split["step_s"] > 0):
        return "none"
    if split["accelerator_utilisation"] >= UTILISATION_BAR:
        return "compute"
    skew = split["skew"] if math.isfinite(split["skew"]) else 0.0
    largest, name = -math.inf, "none"
    for value, part in ((split["input"], "input"), (split["comm"], "communication"), (skew, "skew"),
                        (split["rest"], "rest")):
        if value > largest:
            largest, name = value, part
    return name


# The limits in the words of the step split line (its late rank is not stored: "other ranks").
LIMIT_WORDS = {"compute": "compute", "input": "input", "communication": "communication",
               "skew": "waiting for other ranks", "rest": "time outside the timed phases"}


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
        words = LIMIT_WORDS.get(limit(s), "none named") if measured else "not measured (no sampled steps)"
        # A NaN skew of a measured step: the engine does not time its arrival, its skew lies in communication.
        skew = "in communication" if measured and math.isnan(s["skew"]) else _percent(s["skew"])
        rows.append([label, f"{s['step_s'] * 1e3:.1f}" if measured else NA, _count(s["median_rank"]),
                     _count(s["steps"]), _percent(s["compute"]), _percent(s["input"]), _percent(s["optimizer"]),
                     _percent(s["comm"]), skew, _percent(s["rest"]), _percent(s["accelerator_utilisation"]), words,
                     _count(s["workers_for_bar"])])
    return markdown_table(headers, rows, ["l"] + ["r"] * 10 + ["l", "r"])
