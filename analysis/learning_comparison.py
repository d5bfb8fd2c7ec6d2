"""The "Learning against the reference" section: the test accuracy per epoch of scalebench runs beside
that of learning references (learning_reference.py), and the final accuracy of each side.

Like with like only: a reference is compared with the run files (`train`) that trained the same model for
the same number of epochs (the learning-rate schedule, e.g. cosine to 0, depends on the epoch count); the
others are named as not compared. Recipe values that differ between the sides (batch, learning rate,
precision, ...) are named under the table, since they change the curve too.
"""
import math
from dataclasses import dataclass, field
from pathlib import Path

from learning_reference import SETTING_KEYS
from spread import median_spread
from tables import NA, fmt_percent, fmt_range, markdown_table

RUN_SIDE = "scalebench"
# A side with more runs than this shows mean and range only, to keep the table readable.
MAX_RUN_COLUMNS = 3


@dataclass
class Curve:
    """One run's test accuracy (and train loss) per epoch: a scalebench run or a reference."""
    label: str        # its column and legend name, e.g. "scalebench seed 1"
    source: str       # its file
    seed: int
    accuracy: dict    # epoch -> test accuracy
    train_loss: dict


@dataclass
class LearningGroup:
    """Runs and references of one model and epoch count."""
    model: str
    epochs: int
    runs: list                 # Curve of each scalebench run
    references: list           # LearningReference
    run_configs: list = field(default_factory=list)

    @property
    def reference_name(self):
        return " / ".join(dict.fromkeys(ref.name for ref in self.references))

    @property
    def reference_curves(self):
        return [Curve(ref.run_label, ref.path, ref.seed, ref.accuracy, ref.train_loss) for ref in self.references]


@dataclass
class LearningComparison:
    groups: list                   # LearningGroup with runs on both sides
    unmatched_references: list     # LearningReference without a run of its model and epoch count
    unmatched_runs: list           # (path, model, epochs) of runs without a reference
    run_keys: list = field(default_factory=list)  # the (model, epochs) of every run file

    @property
    def reference_curves(self):
        """The curves of every compared reference (the curves figure draws these, not the unmatched ones)."""
        return [curve for group in self.groups for curve in group.reference_curves]


def _run_curve(result):
    run = result.run
    accuracy = {int(row["epoch"]): float(row["test_accuracy"]) for row in run.epochs}
    train_loss = {int(row["epoch"]): float(row["train_loss"]) for row in run.epochs}
    seed = run.config.get("seed")
    label = f"{RUN_SIDE} seed {seed}" if seed is not None else f"{RUN_SIDE} {result.label}"
    return Curve(label, result.path, seed, accuracy, train_loss)


def _unique_labels(curves):
    """Two curves of one side with the same name (e.g. bf16 and fp16 runs of one seed) get their file's name."""
    names = [c.label for c in curves]
    for curve in curves:
        if names.count(curve.label) > 1:
            curve.label = f"{curve.label} ({Path(curve.source).stem})"
    return curves


def compare_learning(results, references):
    """The LearningComparison of the run files among results with the learning references."""
    runs = [r for r in results if not r.is_study and r.run is not None]
    key_of_run = {r.path: (r.run.config.get("model"), r.run.config.get("epochs")) for r in runs}
    keys = list(dict.fromkeys((ref.model, ref.epochs) for ref in references))
    groups, unmatched_references = [], []
    for model, epochs in keys:
        refs = [ref for ref in references if (ref.model, ref.epochs) == (model, epochs)]
        matching = [r for r in runs if key_of_run[r.path] == (model, epochs)]
        if matching:
            groups.append(LearningGroup(model, epochs, _unique_labels([_run_curve(r) for r in matching]), refs,
                                        [r.run.config for r in matching]))
        else:
            unmatched_references += refs
    unmatched_runs = [(r.path,) + key_of_run[r.path] for r in runs if key_of_run[r.path] not in keys]
    return LearningComparison(groups, unmatched_references, unmatched_runs, list(dict.fromkeys(key_of_run.values())))


# ------------------------------------------------------------------------------------------ the section

def _mean(values):
    return sum(values) / len(values) if values else math.nan


def _points(difference):
    return NA if math.isnan(difference) else f"{round(100.0 * difference, 2) or 0.0:+.2f}"  # never "-0.00"


def _accuracy_range(values):
    """"low-high" of the accuracies, in percent with two decimals; n/a for none."""
    return fmt_range(median_spread(values), lambda v: fmt_percent(v, 2))


def _side_headers(name, curves):
    headers = [c.label for c in curves] if len(curves) <= MAX_RUN_COLUMNS else []
    headers += [f"{name} mean"] if len(curves) > 1 else []
    headers += [f"{name} range"] if len(curves) > MAX_RUN_COLUMNS else []
    return headers


def _side_cells(curves, epoch):
    values = [c.accuracy[epoch] for c in curves if epoch in c.accuracy]
    cells = [fmt_percent(c.accuracy.get(epoch, math.nan), 2) for c in curves] if len(curves) <= MAX_RUN_COLUMNS else []
    cells += [fmt_percent(_mean(values), 2)] if len(curves) > 1 else []
    if len(curves) > MAX_RUN_COLUMNS:
        cells.append(_accuracy_range(values))
    return cells, _mean(values)


def epoch_table(group):
    """Markdown: per epoch each side's test accuracy (each run, or mean and range) and the means' difference."""
    reference_curves = group.reference_curves
    epochs = sorted({e for c in group.runs + reference_curves for e in c.accuracy})
    headers = (["epoch"] + _side_headers(RUN_SIDE, group.runs) + _side_headers(group.reference_name, reference_curves)
               + [f"{RUN_SIDE} - {group.reference_name} (points)"])
    rows = []
    for epoch in epochs:
        run_cells, run_mean = _side_cells(group.runs, epoch)
        reference_cells, reference_mean = _side_cells(reference_curves, epoch)
        rows.append([epoch] + run_cells + reference_cells + [_points(run_mean - reference_mean)])
    return markdown_table(headers, rows, ["r"] * len(headers))


def _final_side(name, curves, epoch):
    values = [c.accuracy[epoch] for c in curves if epoch in c.accuracy]
    if not values:
        return f"{name} n/a (no run reached it)", math.nan
    spread = f", {_accuracy_range(values)}" if len(values) > 1 else ""
    missing = len(curves) - len(values)
    short = f"; {missing} stopped before it" if missing else ""
    runs = "run" if len(values) == 1 else "runs"
    return f"{name} {fmt_percent(_mean(values), 2)} (mean of {len(values)} {runs}{spread}{short})", _mean(values)


def final_sentence(group):
    """The closing line: each side's mean test accuracy after the last epoch and their difference."""
    run_text, run_mean = _final_side(RUN_SIDE, group.runs, group.epochs)
    reference_text, reference_mean = _final_side(group.reference_name, group.reference_curves, group.epochs)
    difference = run_mean - reference_mean
    if math.isnan(difference):
        verdict = "no difference to give"
    else:
        verdict = f"{RUN_SIDE} - {group.reference_name} = {_points(difference)} points"
    return f"Final test accuracy (epoch {group.epochs}): {run_text}, {reference_text}; {verdict}.\n"


def _source_list(curves):
    return ", ".join(f"{c.source} (seed {c.seed})" if c.seed is not None else c.source for c in curves)


def _value_text(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def settings_sentence(group):
    """The recipe values the two sides do not share, or "" when every value both record is the same."""
    differences = []
    for key in SETTING_KEYS:
        reference_values = {_value_text(ref.settings[key]) for ref in group.references if key in ref.settings}
        run_values = {_value_text(config[key]) for config in group.run_configs if key in config}
        if reference_values and run_values and reference_values != run_values:
            differences.append(f"{key} {RUN_SIDE} {', '.join(sorted(run_values))}, {group.reference_name} "
                               f"{', '.join(sorted(reference_values))}")
    if not differences:
        return ""
    return f"Settings that differ, which change the curves too: {'; '.join(differences)}.\n"


def _data_text(values):
    values = [v for v in dict.fromkeys(values) if v]
    return f", on {', '.join(values)}" if values else ""


def learning_markdown(comparison):
    """The section's Markdown, heading included."""
    out = ["## Learning against the reference\n",
           "Test accuracy after each epoch of the scalebench run files and of the learning references "
           "(`--reference` JSON with \"mode\": \"learn\"). A reference is compared only with runs of the same model "
           "over the same number of epochs (the learning-rate schedule depends on the epoch count); others are "
           "named as not compared. The difference is the scalebench mean minus the reference mean, in "
           "percentage points.\n"]
    for group in comparison.groups:
        labels = "; ".join(dict.fromkeys(ref.label for ref in group.references))
        out.append(f"### {group.model}, {group.epochs} epochs\n")
        out.append(f"{RUN_SIDE}: {_source_list(group.runs)}{_data_text(c.get('data') for c in group.run_configs)}.\n")
        out.append(f"{group.reference_name} ({labels}): {_source_list(group.reference_curves)}"
                   f"{_data_text(ref.data for ref in group.references)}.\n")
        out.append(epoch_table(group))
        out.append(final_sentence(group))
        settings = settings_sentence(group)
        if settings:
            out.append(settings)
    trained = "; ".join(f"{model}, {epochs} epochs" for model, epochs in comparison.run_keys) or "none"
    for ref in comparison.unmatched_references:
        out.append(f"Not compared: {ref.path} ({ref.model}, {ref.epochs} epochs): no run file of the same model and "
                   f"epoch count among the inputs (the run files: {trained}).\n")
    for path, model, epochs in comparison.unmatched_runs:
        out.append(f"Not compared: {path} ({model}, {epochs} epochs): no learning reference of the same model and "
                   "epoch count.\n")
    return "\n".join(out)
