"""The report's "What limits each run" section from hand-made step_split_* attributes: a train file's root and
each /configs group of a study file, one table row per run with its parts, AU, limit and workers; the limit the
one the run stored (step_split_limited_by, with the late rank of a skew limit), never decided again from the
parts; empty where a file written before it lacks it; a run that sampled no steps; an older file without the
attributes left out, and no section where no file has them."""
import math
import os
import unittest

import h5py

from fixtures import NAN, epoch, write_run, write_study
from report_test_util import TempDirTest, run_report

import step_split  # noqa: E402  (fixtures put analysis/ on the path)
from scalebench_results import load_result  # noqa: E402


# step_split_limited_by's codes (docs/results_schema.md, "The step split").
COMPUTE, INPUT, COMMUNICATION, SKEW, REST = 1, 2, 3, 4, 5


def split(step_s=0.2, compute=0.6, optimizer=0.05, input_wait=0.3, comm=0.02, skew=0.01, workers=NAN, rank=0, steps=24,
          limited_by=INPUT, late_rank=NAN):
    """A step split as `train` writes it: the rest is what the parts leave, AU compute and optimizer; the limit
    as given (the run names it, not this helper)."""
    rest = 1 - (compute + optimizer + input_wait + comm + (skew if not math.isnan(skew) else 0))
    return {"step_s": step_s, "compute": compute, "optimizer": optimizer, "input": input_wait, "comm": comm, "skew": skew,
            "rest": rest, "accelerator_utilisation": compute + optimizer, "median_rank": rank, "steps": steps,
            "workers_for_bar": workers, "limited_by": limited_by, "late_rank": late_rank}


def without(values, *names):
    """The attributes but `names`: as a file written before them has them."""
    return {name: value for name, value in values.items() if name not in names}


def put(group, values):
    for name, value in values.items():
        group.attrs.create(step_split.PREFIX + name, float(value), dtype="<f8")


def train_file(path, values=None):
    write_run(path, 2, [epoch(1, 10.0, 1000.0), epoch(2, 9.0, 1100.0)])
    if values is not None:
        with h5py.File(path, "a") as f:
            put(f, values)
    return path


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


class StepSplitTable(TempDirTest):
    def test_a_train_file_has_one_row_with_its_parts(self):
        result = load_result(train_file(self.path("run.h5"), split(workers=7)))
        lines = step_split.step_split_markdown([("run", result.run.step_split)]).splitlines()
        self.assertEqual(len(lines), 3)
        self.assertEqual(cells(lines[2]), ["run", "200.0", "0", "24", "60.0", "30.0", "5.0", "2.0", "1.0", "2.0",
                                           "65.0", "input", "7"])

    def test_each_study_configuration_has_its_row(self):
        rows = [{"gpus": g, "images_per_s": 1000.0 * g, "epoch_time_s": 60.0, "speedup": float(g), "efficiency": 1.0,
                 "exposed_comm_fraction": 0.0, "time_to_accuracy_s": NAN} for g in (1, 2)]
        path = write_study(self.path("study.h5"), "weak", rows,
                           {g: [epoch(1, 60.0, 1000.0 * g), epoch(2, 60.0, 1000.0 * g)] for g in (1, 2)})
        with h5py.File(path, "a") as f:
            put(f["configs/gpus_1"], split(compute=0.85, optimizer=0.07, input_wait=0.05, comm=0.0, skew=0.0,
                                           limited_by=COMPUTE))
            put(f["configs/gpus_2"], split(compute=0.5, optimizer=0.05, input_wait=0.05, comm=0.3, skew=NAN, rank=1,
                                           limited_by=COMMUNICATION))
        result = load_result(path)
        entries = [(name, result.configs[name].step_split) for name in ("gpus_1", "gpus_2")]
        lines = step_split.step_split_markdown(entries).splitlines()
        self.assertEqual(cells(lines[2])[10:12], ["92.0", "compute"])
        self.assertEqual(cells(lines[3])[2], "1")
        self.assertEqual(cells(lines[3])[7:12], ["30.0", "in communication", "10.0", "55.0", "communication"])
        self.assertEqual(cells(lines[3])[12], "n/a")

    def test_a_run_without_sampled_steps_is_not_measured(self):
        values = {name: NAN for name in step_split.NAMES}
        values["steps"] = 0
        values["limited_by"] = 0
        lines = step_split.step_split_markdown([("run", values)]).splitlines()
        self.assertEqual(cells(lines[2]), ["run", "n/a", "n/a", "0"] + ["n/a"] * 7 +
                         ["not measured (no sampled steps)", "n/a"])


class StoredLimit(TempDirTest):
    def limit_cell(self, values):
        return cells(step_split.step_split_markdown([("run", values)]).splitlines()[2])[11]

    def test_each_code_reads_as_the_lines_words(self):
        self.assertEqual(self.limit_cell(split(limited_by=COMPUTE)), "compute")
        self.assertEqual(self.limit_cell(split(limited_by=INPUT)), "input")
        self.assertEqual(self.limit_cell(split(limited_by=COMMUNICATION)), "communication")
        self.assertEqual(self.limit_cell(split(limited_by=SKEW, late_rank=3)), "waiting for rank 3")
        self.assertEqual(self.limit_cell(split(limited_by=SKEW)), "waiting for other ranks")
        self.assertEqual(self.limit_cell(split(limited_by=REST)),
                         "time outside the timed phases (the loop between steps)")
        self.assertEqual(self.limit_cell(split(limited_by=0)), "no limit named")
        self.assertEqual(self.limit_cell(split(limited_by=9)), "unknown (code 9)")

    def test_the_stored_limit_is_shown_whatever_the_parts(self):
        # The parts would make input the largest wait; the run named communication, and that is what is shown.
        self.assertEqual(self.limit_cell(split(input_wait=0.3, comm=0.02, limited_by=COMMUNICATION)), "communication")

    def test_a_file_without_the_limit_leaves_it_empty(self):
        with h5py.File(train_file(self.path("run.h5")), "a") as f:
            put(f, without(split(), "limited_by", "late_rank"))
        values = load_result(self.path("run.h5")).run.step_split
        self.assertTrue(math.isnan(values["limited_by"]))
        self.assertEqual(self.limit_cell(values), "")


class StepSplitSection(TempDirTest):
    def test_the_report_has_the_section_and_leaves_out_an_older_file(self):
        new = train_file(self.path("new.h5"), split(workers=3, limited_by=SKEW, late_rank=3))
        unnamed = train_file(self.path("unnamed.h5"), without(split(workers=3), "limited_by", "late_rank"))
        old = train_file(self.path("old.h5"))
        self.assertIsNone(load_result(old).run.step_split)
        out = self.path("out")
        self.assert_ok(run_report(new, unnamed, old, "--out", out))
        with open(os.path.join(out, "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        section = text[text.index("## What limits each run"):]
        self.assertIn("docs/scaling_diagnosis.md", section)
        rows = {cells(line)[0]: cells(line) for line in section.splitlines() if line.startswith("| ")}
        self.assertEqual(rows["new"][11:], ["waiting for rank 3", "3"])  # the stored verdict
        self.assertEqual(rows["unnamed"][11:], ["", "3"])  # written before step_split_limited_by: unknown
        self.assertNotIn("old", rows)

    def test_no_section_where_no_file_has_the_attributes(self):
        result = run_report(train_file(self.path("old.h5")))
        self.assert_ok(result)
        self.assertNotIn("What limits each run", result.stdout)


if __name__ == "__main__":
    unittest.main()
