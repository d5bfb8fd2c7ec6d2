"""The report's "Efficiency loss, split" section from a hand-made study file: the /efficiency_split rows as
`scale` wrote them, one table row and one stacked bar per count above the baseline, the parts shown as
written (never recomputed); a study file without the table says so."""
import os
import unittest

import numpy as np

from fixtures import NAN, epoch, write_study
from report_test_util import TempDirTest, run_report

import efficiency_split  # noqa: E402  (fixtures put analysis/ on the path)
from scalebench_results import load_result  # noqa: E402

FIELDS = [("gpus", "<i8"), ("repeat", "<i8"), ("efficiency_loss", "<f8"), ("exposed_comm", "<f8"), ("skew", "<f8"),
          ("skew_compute", "<f8"), ("skew_input", "<f8"), ("skew_optimizer", "<f8"), ("input", "<f8"),
          ("compute", "<f8"), ("unexplained", "<f8"), ("step_s", "<f8"), ("ideal_step_s", "<f8"),
          ("median_rank", "<i8"), ("steps", "<i8")]

# 2 GPUs: 10 points lost (2 comm, 3 skew, 1 input, 4.5 compute, -0.5 unexplained); 4 GPUs: 30 points, its
# skew not measured (inside exposed comm).
SPLIT = [(1, 1, 0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0.100, 0.100, 0, 64),
         (2, 1, 0.10, 0.02, 0.03, 0.025, 0.004, 0.001, 0.01, 0.045, -0.005, 0.1111, 0.100, 0, 32),
         (4, 1, 0.30, 0.20, NAN, NAN, NAN, NAN, 0.0, 0.09, 0.01, 0.1429, 0.100, 1, 16)]


def write(path, with_split=True):
    rows, configs = [], {}
    for gpus, efficiency in ((1, 1.0), (2, 0.9), (4, 0.7)):
        ips = 1000.0 * gpus * efficiency
        rows.append({"gpus": gpus, "images_per_s": ips, "epoch_time_s": 60.0, "speedup": gpus * efficiency,
                     "efficiency": efficiency, "exposed_comm_fraction": 0.0, "time_to_accuracy_s": NAN})
        configs[gpus] = [epoch(1, 60.0, ips), epoch(2, 60.0, ips)]
    write_study(path, "weak", rows, configs)
    if with_split:
        import h5py
        with h5py.File(path, "a") as f:
            table = f.create_dataset("efficiency_split", data=np.array(SPLIT, dtype=FIELDS))
            table.attrs["units"] = ["1"] * 11 + ["s", "s", "1", "1"]
    return path


class EfficiencySplitSection(TempDirTest):
    def test_one_row_per_count_above_the_baseline_as_written(self):
        result = load_result(write(self.path("study.h5")))
        entries = efficiency_split.split_entries(result, "GPUs")
        self.assertEqual([label for label, _ in entries], ["2 GPUs", "4 GPUs"])
        lines = efficiency_split.split_markdown(entries).splitlines()
        self.assertEqual(len(lines), 4)
        cells = [c.strip() for c in lines[2].strip("|").split("|")]
        self.assertEqual(cells, ["2 GPUs", "90.0%", "10.0", "2.0", "3.0", "2.5 / 0.4 / 0.1", "1.0", "4.5", "-0.5",
                                 "111.1", "100.0", "0"])
        cells = [c.strip() for c in lines[3].strip("|").split("|")]
        self.assertEqual(cells[4:6], ["in exposed comm", "n/a / n/a / n/a"])

    def test_the_stacked_bars_add_up_to_the_loss(self):
        entries = efficiency_split.split_entries(load_result(write(self.path("study.h5"))), "GPUs")
        fig = efficiency_split.split_figure(entries, "study")
        ax = fig.axes[0]
        bars = [p for container in ax.containers for p in container.patches]
        self.assertEqual(len(bars), len(efficiency_split.PARTS) * 2)
        first = [b for b in bars if abs(b.get_x() + b.get_width() / 2) < 1e-9]  # the 2-GPU bar
        up = sum(b.get_height() for b in first if b.get_height() > 0)
        down = sum(b.get_height() for b in first if b.get_height() < 0)
        self.assertAlmostEqual(up, 10.5)
        self.assertAlmostEqual(down, -0.5)  # the negative rest hangs below zero
        self.assertAlmostEqual(up + down, 10.0)

    def test_the_report_has_the_table_and_the_figure(self):
        study = write(self.path("study.h5"))
        out = self.path("out")
        self.assert_ok(run_report(study, "--out", out))
        with open(os.path.join(out, "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## Efficiency loss, split", text)
        self.assertIn("| 2 GPUs ", text)
        self.assertIn("efficiency_split.png", text)
        self.assertTrue(os.path.exists(os.path.join(out, "efficiency_split.svg")))

    def test_a_file_without_the_table_says_so(self):
        study = write(self.path("old.h5"), with_split=False)
        self.assertIsNone(efficiency_split.split_entries(load_result(study), "GPUs"))
        result = run_report(study)
        self.assert_ok(result)
        self.assertIn("The efficiency loss, split: not in this file", result.stdout)


if __name__ == "__main__":
    unittest.main()
