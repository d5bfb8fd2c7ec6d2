#!/usr/bin/env python3
"""scalebench report: tables, plots and scaling fits from results files.

    report.py results/*.h5 --out report/           report.md, CSV tables, PNG and SVG plots
    report.py results/demo.h5 --table-only         the Markdown epoch/study tables on stdout
    report.py study-a.h5 study-b.h5 --reference pytorch.json --out cmp/    side by side

Inputs are `scalebench train` files (one run) and `scalebench scale` files (a study); `comm` sweeps and
`predict` files add sections of their own; --reference adds
results of another implementation: throughput, or test accuracy per epoch (a learning reference; format
in analysis/README.md). Exit codes: 0 done, 2 bad input or
arguments (the message names the file), 1 missing Python packages.
"""
import os
import sys

PROG = "report.py"


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import system_python  # noqa: E402

system_python.ensure_packages(PROG, __file__, ("h5py", "numpy", "matplotlib"),
                              ("python3-h5py", "python3-numpy", "python3-matplotlib"))

import argparse  # noqa: E402
import dataclasses  # noqa: E402

import comm_report  # noqa: E402
import efficiency_split  # noqa: E402
import learning_comparison  # noqa: E402
import predict_report  # noqa: E402
import step_skew  # noqa: E402
import step_split  # noqa: E402
import straggler  # noqa: E402
import tables  # noqa: E402
from learning_reference import LearningReference  # noqa: E402
from scalebench_results import ResultError, load_reference, load_result  # noqa: E402
from scaling_series import (all_runs, count_text, count_unit, disambiguate, series_from_reference, series_from_runs,  # noqa: E402
                            series_from_study, study_settle_epochs, swept_label, throughput_by_batch)
from sweeps import sweep_views, value_names  # noqa: E402


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description="Tables, plots and scaling fits from scalebench results.")
    parser.add_argument("inputs", nargs="+", metavar="FILE.h5", help="run files (train) and study files (scale)")
    parser.add_argument("--out", metavar="DIR", help="write report.md, CSV tables and PNG/SVG plots into DIR")
    parser.add_argument("--table-only", action="store_true",
                        help="print only the Markdown epoch tables (runs) and study tables to stdout; write nothing")
    parser.add_argument("--reference", action="append", default=[], metavar="FILE",
                        help="reference results (JSON or CSV, e.g. from bench/pytorch_reference.py): throughput, "
                             "or a --learn JSON's test accuracy per epoch; repeatable")
    parser.add_argument("--settle-epochs", type=int, default=1, metavar="N",
                        help="leading epochs left out of a run's throughput, energy and phases (never its last epoch; "
                             "a study file's own settle_epochs attribute wins) [1]")
    parser.add_argument("--warmup-epochs", dest="former_warmup_epochs", metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--title", default="scalebench report", help="the report's heading")
    args = parser.parse_args(argv)
    if args.former_warmup_epochs is not None:
        parser.error(f"--warmup-epochs is now --settle-epochs: give --settle-epochs {args.former_warmup_epochs}")
    if args.settle_epochs < 0:
        parser.error("--settle-epochs must not be negative")
    if args.table_only and args.out:
        parser.error("--table-only writes no files; leave out --out")
    return args


def warn(message):
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def whole_epochs(run):
    """The run with only its whole epochs. A partial one (`steps_resumed` > 0: resumed from a checkpoint
    taken inside it) is timed only after the resume, so it stays out of the steady-state figures."""
    if run is None or "steps_resumed" not in (run.epochs.dtype.names or ()):
        return run
    return dataclasses.replace(run, epochs=run.epochs[run.epochs["steps_resumed"] == 0])


def without_partial_epochs(result):
    return dataclasses.replace(result, run=whole_epochs(result.run),
                               configs={gpus: whole_epochs(run) for gpus, run in result.configs.items()})


class Report:
    """Everything the outputs are made from."""

    def __init__(self, results, references, settle_epochs, learning_references=()):
        self.results = results
        steady = [without_partial_epochs(r) for r in results]  # the epoch tables (self.runs) keep every row
        self.study_series = {r.path: series_from_study(r, settle_epochs) for r in steady if r.is_study}
        for r in steady:
            if r.is_study and study_settle_epochs(r) is None:
                warn(f"{r.path} does not record its settle epochs (a file written before /study's settle_epochs "
                     f"attribute); its figures leave out the first {settle_epochs} epoch(s) of each configuration "
                     "(--settle-epochs).")
        run_results = [r for r in steady if not r.is_study]
        self.series = [s for r in steady if r.is_study for s in self.study_series[r.path]]
        self.series += series_from_runs(run_results, settle_epochs, warn)
        self.series += [series_from_reference(ref) for ref in references]
        disambiguate(self.series)
        self.runs = all_runs(results)
        self.batch_groups = throughput_by_batch(steady, settle_epochs)
        self.sweeps = [view for r in steady if r.is_study
                       for view in sweep_views(self.study_series[r.path], r.swept, value_names(r))]
        self.learning_references = list(learning_references)
        self.learning = learning_comparison.compare_learning(results, learning_references) if learning_references \
            else None


def table_only_text(report):
    parts = []
    for result in report.results:
        if result.is_study:
            for series in report.study_series[result.path]:
                swept = swept_label(series.swept)
                name = f"{result.path}: {series.mode} scaling study" + (f", {swept}" if swept else "")
                parts.append(f"### {name}\n\n{tables.scaling_markdown(series)}")
                if series.problems:
                    parts.append(tables.problems_markdown(series))
                phases = tables.phase_markdown(series)
                if phases:
                    parts.append(f"Seconds per epoch by phase (share of the epoch):\n\n{phases}")
            for view in [v for v in report.sweeps if v.source == result.path]:
                parts.append(f"### {result.path}: throughput against {view.column}\n\n{tables.sweep_markdown(view)}")
        else:
            unit = count_unit(result.attrs)
            where = count_text(result.run.gpus, unit) + (" on the CPU" if unit == "ranks" else "")
            parts.append(f"### {result.path}: {where}\n\n{tables.epoch_markdown(result.run)}")
    return "\n".join(parts)


def _inputs_markdown(results, references, learning_references=()):
    rows = []
    for r in results:
        a = r.attrs
        kind = "study" if r.is_study else "run"
        gpus = ", ".join(str(n) for n in sorted({run.gpus for run in r.configs.values()})) if r.is_study \
            else str(r.run.gpus)
        devices = ", ".join(sorted(set(a.get("gpu_models") or []))) or tables.NA
        rows.append([r.path, kind, gpus, a.get("node_count", tables.NA), devices, a.get("tool_version", ""),
                     a.get("git_sha", ""), a.get("start_time", ""), "yes" if a.get("complete", 1) else "no (stopped early)"])
    for ref in references:
        rows.append([ref.path, "reference", ", ".join(str(p.gpus) for p in ref.points)] + [""] * 6)
    for ref in learning_references:
        rows.append([ref.path, "learning reference", "", "", ref.device, ref.version, "", "", ""])
    return tables.markdown_table(["file", "kind", "GPUs", "nodes", "devices", "tool", "git", "start", "complete"], rows,
                                 ["l", "l", "r", "r", "l", "l", "l", "l", "l"])


def _settle_sentence(series):
    """Which epochs are steady: " Steady epochs: all after the first 1 of each configuration.", and
    whether the file said so."""
    if series.settle_epochs is None:
        return ""
    assumed = "" if series.settle_recorded else " (--settle-epochs: the file does not record its own)"
    if series.settle_epochs == 0:
        return f" Steady epochs: every epoch of each run{assumed}."
    return f" Steady epochs: all but the first {series.settle_epochs} of each run{assumed}, and at least its last."


def _split_studies(report):
    """(study result, its split entries or None where the file has no /efficiency_split) of each study."""
    return [(r, efficiency_split.split_entries(r, count_unit(r.attrs))) for r in report.results if r.is_study]


def make_figures(report):
    """(name, figure, caption) of every plot the inputs support."""
    import plots  # matplotlib takes a while to import; --table-only (make run) needs none of it
    figures = []
    scaling = [s for s in report.series if len(s.points) >= 2]
    if scaling:
        figures.append(("speedup", plots.speedup_figure(scaling), "Speedup against GPUs, with the ideal line"))
        figures.append(("efficiency", plots.efficiency_figure(scaling), "Parallel efficiency against GPUs"))
    studies = [(r, entries) for r, entries in _split_studies(report) if entries]
    for index, (result, entries) in enumerate(studies):
        name = "efficiency_split" + (f"_{index + 1}" if len(studies) > 1 else "")
        figures.append((name, efficiency_split.split_figure(entries, result.label),
                        f"Where the efficiency went, {result.label}: the loss split into its causes"))
    if any(p.phases_s for s in report.series for p in s.points):
        figures.append(("phases", plots.phase_figure(report.series), "Phase breakdown per GPU count"))
    if report.batch_groups:
        figures.append(("throughput_vs_batch", plots.throughput_batch_figure(report.batch_groups),
                        "Throughput against batch size"))
    for index, view in enumerate(report.sweeps):
        figures.append((f"sweep_{index + 1}_{view.column}", plots.sweep_figure(view),
                        f"Throughput against {view.column} ({view.label}), one line per GPU count"))
    if report.runs:
        compared = report.learning.reference_curves if report.learning else []
        caption = "Loss and accuracy per epoch" + (", the learning references dotted" if compared else "")
        figures.append(("curves", plots.curves_figure(report.runs, compared), caption))
    return figures


def _skew_rows(report):
    rows = []
    for label, run in _runs_of(report):
        skew = step_skew.step_skew(run.steps) if run is not None and run.steps is not None else None
        if skew:
            rows.append((label, skew))
    return rows


def _straggler_rows(report):
    return [(label, run.straggler) for label, run in _runs_of(report) if run is not None and run.straggler]


def _step_split_rows(report):
    """(label, step split) of each run whose file has the step_split_* attributes; older files have none."""
    return [(label, run.step_split) for label, run in _runs_of(report) if run is not None and run.step_split]


def _runs_of(report):
    runs = []
    for result in report.results:
        runs += [(result.label, result.run)] if result.run is not None else all_runs([result])
    return runs


def report_markdown(report, references, title, figure_names=()):
    out = [f"# {title}\n", "## Inputs\n", _inputs_markdown(report.results, references, report.learning_references)]
    if report.series:
        out.append("## Scaling\n")
        out.append("Throughput and epoch time are medians over the steady epochs (and over the repeats of a "
                   "configuration, where there are several), with the range (min-max) of the values the median "
                   "was taken over. Speedup and efficiency are the medians' ratios to each series' smallest GPU "
                   "count (a study's baseline); their range is the point's range over the baseline's median: the figures "
                   "`scale` prints. A figure marked * is a measurement problem, not a result; the line below its "
                   "table says why. "
                   "Exposed comm is the share of the epoch time that computation waited for communication; "
                   "Karp-Flatt e is the serial fraction measured at each point.\n")
        for s in report.series:
            out.append(f"### {s.label}\n")
            out.append(f"{s.mode.capitalize()} scaling, baseline {count_text(s.baseline_gpus, s.unit)}, from "
                       f"{', '.join(s.sources)}.{_settle_sentence(s)}\n")
            out.append(tables.scaling_markdown(s))
            if s.problems:
                out.append(tables.problems_markdown(s))
            out.append(tables.amdahl_sentence(s) + "\n")
            phases = tables.phase_markdown(s)
            if phases:
                out.append("Where the time goes: seconds per epoch in each timed phase (each the maximum over "
                           "ranks) and its share of the epoch. \"backward beside comm\" is the backward that ran while a "
                           "gradient all-reduce was on the link (n/a in files before schema 3, where backward "
                           "holds it). \"epoch - phases\" is the epoch time the phases do "
                           "not cover (host work between steps, launches, the epoch's start and end); it turns "
                           "negative when the ranks differ, because a rank that waits for a slower one counts the "
                           "wait as exposed comm while the slower one sets the compute maxima.\n")
                out.append(phases)
    split_studies = _split_studies(report)
    if split_studies:
        out.append("## Efficiency loss, split\n")
        out.append("From each study file's /efficiency_split, as `scale` wrote it: each configuration's loss of "
                   "efficiency against its baseline (1 - efficiency), in points, split into exposed communication, "
                   "the median rank's wait for later ranks (skew, by the later rank's compute, input wait and "
                   "optimizer), input starvation, per-GPU compute and optimizer, and the unexplained rest; the parts "
                   "add up to the loss. Step is the step time at the measured throughput, ideal the baseline's scaled "
                   "to the same work per GPU (docs/scaling_diagnosis.md).\n")
        for result, entries in split_studies:
            out.append(f"### {result.label}\n")
            if entries is None:
                out.append(f"The efficiency loss, split: {efficiency_split.NOT_IN_FILE}.\n")
            elif not entries:
                out.append("One GPU count per series: nothing to split.\n")
            else:
                out.append(efficiency_split.split_markdown(entries))
    if report.sweeps:
        out.append("## Sweeps\n")
        out.append("Median throughput against each swept option, one line per GPU count (and per value of the "
                   "other swept options), with the range and interquartile range of the values behind each median.\n")
        for view in report.sweeps:
            out.append(f"### {view.label}: throughput against {view.column}\n")
            out.append(tables.sweep_markdown(view))
    if len(report.series) >= 2:
        out += ["## Comparison\n", tables.comparison_markdown(report.series)]
    skew_rows = _skew_rows(report)
    if skew_rows:
        out.append("## Step-time skew across ranks\n")
        out.append("From the sampled per-step phase times (/steps): per step, the slowest rank's time minus the "
                   "fastest's, the wait that stragglers impose at every all-reduce.\n")
        out.append(step_skew.skew_markdown(skew_rows))
    straggler_rows = _straggler_rows(report)
    if straggler_rows:
        out.append("## Straggler\n")
        out.append("From /arrivals and /straggler: per epoch, the rank that arrived last at the gradient all-reduce "
                   "at the most sampled steps, how far after the median rank on average, and its compute and input "
                   "wait against the median rank's; it is named when it was last at more than half the steps and "
                   "its lateness passes the threshold (docs/scaling_diagnosis.md), else none stands out.\n")
        out.append(straggler.straggler_markdown(straggler_rows))
    step_split_rows = _step_split_rows(report)
    if step_split_rows:
        out.append("## What limits each run\n")
        out.append("From each run's step_split_* attributes, as its `step split` line says it: the median rank's "
                   "step over the sampled steps of its steady epochs, in shares of the step, its accelerator "
                   "utilisation (AU, compute and optimizer) and what limits it, as the run named it (compute where AU "
                   "reaches 90%, else the largest wait; empty for a file written before the run stored it); for "
                   "image files decoded by CPU workers below 90% AU, the workers a rank would need "
                   "for 90% (docs/scaling_diagnosis.md, \"What limits one run\").\n")
        out.append(step_split.step_split_markdown(step_split_rows))
    if report.learning:
        out.append(learning_comparison.learning_markdown(report.learning))
    if figure_names:
        out.append("## Plots\n")
        for name, caption in figure_names:
            out.append(f"![{caption}]({name}.png)\n")
    if report.runs:
        out.append("## Epochs\n")
        for label, run in report.runs:
            state = "" if run.complete else " (the run stopped early)"
            out.append(f"### {label}{state}\n")
            out.append(tables.epoch_markdown(run))
            pipeline = tables.input_markdown(run)
            if pipeline:
                out.append("Input pipeline: the seconds every rank's workers spent reading, decoding and augmenting "
                           "(summed over workers and ranks), the copy stream's upload or GPU decode, and the time the GPU "
                           "waited for its input (the slowest rank's).\n")
                out.append(pipeline)
    return "\n".join(out)


def write_outputs(report, references, out_dir, title):
    os.makedirs(out_dir, exist_ok=True)
    written = []

    def write(name, text):
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        written.append(path)

    import plots
    figures = make_figures(report)
    for name, figure, _ in figures:
        written += plots.save_figure(figure, out_dir, name)
    if report.sweeps:
        write("sweeps.csv", tables.sweeps_csv(report.sweeps))
    if report.series:
        write("scaling.csv", tables.scaling_csv(report.series))
        write("fits.csv", tables.fits_csv(report.series))
    if len(report.series) >= 2:
        write("comparison.csv", tables.comparison_csv(report.series))
    if report.runs:
        write("epochs.csv", tables.epoch_csv(report.runs))
    write("report.md", report_markdown(report, references, title, [(n, c) for n, _, c in figures]))
    return written


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    predictions = [path for path in args.inputs if predict_report.is_prediction(path)]  # `scalebench predict` files
    try:
        results = [load_result(path) for path in args.inputs if path not in predictions]
        loaded = [load_reference(path) for path in args.reference]
    except ResultError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    sweeps = [r.path for r in results if r.comm]  # `scalebench comm` files: the comm section
    results = [r for r in results if not r.comm]
    if not results:
        return print_comm_only(sweeps, args, predictions)
    for result in results:
        if not result.attrs.get("complete", 1):
            warn(f"{result.path} is incomplete (the job stopped before closing it); its finished epochs are used.")
    references = [r for r in loaded if not isinstance(r, LearningReference)]
    learning_references = [r for r in loaded if isinstance(r, LearningReference)]
    report = Report(results, references, args.settle_epochs, learning_references)
    if args.table_only:
        sys.stdout.write(table_only_text(report))
    elif args.out:
        written = write_outputs(report, references, args.out, args.title)
        if sweeps or predictions:
            section, comm_files = extra_sections(sweeps, predictions, args.out)
            with open(os.path.join(args.out, "report.md"), "a", encoding="utf-8") as handle:
                handle.write("\n" + section)
            written += comm_files
        print(f"{PROG}: wrote {len(written)} files to {args.out}: {', '.join(os.path.basename(p) for p in written)}")
    else:
        sys.stdout.write(report_markdown(report, references, args.title))
    if (sweeps or predictions) and not args.out:
        sys.stdout.write("\n" + extra_sections(sweeps, predictions)[0])
    return 0


def extra_sections(sweeps, predictions, out_dir=None):
    """The sections of all-reduce sweeps and predictions: (markdown, written files)."""
    text, written = "", []
    for module, paths in ((comm_report, sweeps), (predict_report, predictions)):
        if paths:
            section, files = module.report(paths, out_dir)
            text += ("\n" if text else "") + section
            written += files
    return text, written


def print_comm_only(sweeps, args, predictions=()):
    """Inputs that are all all-reduce sweeps or predictions: their sections alone (report.md in --out)."""
    section, written = extra_sections(sweeps, predictions, args.out)
    if args.out:
        path = os.path.join(args.out, "report.md")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(f"# {args.title}\n\n{section}")
        written.append(path)
        print(f"{PROG}: wrote {len(written)} files to {args.out}: {', '.join(os.path.basename(p) for p in written)}")
    else:
        sys.stdout.write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
