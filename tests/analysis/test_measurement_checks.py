"""Figures the data cannot support are flagged, not reported: no Amdahl fit through fewer points than
it needs, efficiencies above 100% beyond their range or against a baseline of one steady epoch, and
Karp-Flatt values outside [0, 1] (measurement_checks.py); plots draw no line through them. And a
study's figures leave out the settle epochs the file records."""
import math
import unittest

import h5py

import fixtures
from fixtures import NAN, epoch
from report_test_util import TempDirTest, read_csv, run_report

import plots  # noqa: E402
import tables  # noqa: E402
from measurement_checks import efficiency_flagged, karp_flatt_flagged  # noqa: E402
from scalebench_results import load_result  # noqa: E402
from scaling_fits import fit_amdahl  # noqa: E402
from scaling_series import series_from_study  # noqa: E402


def study_file(path, rates, time=2.0, settle_epochs=None, mode="weak"):
    """A study whose configuration on n GPUs has epochs of the images/s in rates[n] (each `time` s);
    /study's settle_epochs attribute where given."""
    configs = {n: [epoch(i + 1, time, float(v)) for i, v in enumerate(values)] for n, values in rates.items()}
    rows = [{"gpus": n, "images_per_s": float(values[-1]), "epoch_time_s": time, "speedup": NAN, "efficiency": NAN,
             "exposed_comm_fraction": 0.05, "time_to_accuracy_s": NAN} for n, values in rates.items()]
    fixtures.write_study(path, mode, rows, configs)
    if settle_epochs is not None:
        with h5py.File(path, "a") as f:
            f["study"].attrs.create("settle_epochs", settle_epochs, dtype="<i8")
    return path


def one_series(path, settle_epochs=1):
    [series] = series_from_study(load_result(path), settle_epochs)
    return series


def table_cells(markdown, gpus):
    """The cells of the table row of `gpus`."""
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == str(gpus):
            return cells
    raise AssertionError(f"no row for {gpus} in\n{markdown}")


class AmdahlFitTest(TempDirTest):
    def test_no_fit_through_one_point_beyond_the_baseline(self):
        self.assertIsNone(fit_amdahl([1, 2], [1.0, 1.8]))
        self.assertIsNotNone(fit_amdahl([1, 2, 4], [1.0, 1.8, 3.2]))

    def test_a_series_of_two_counts_has_no_fit_sentence_or_line(self):
        series = one_series(study_file(self.path("two.h5"), {1: [50, 100, 100, 100], 2: [50, 180, 180, 180]}))
        self.assertIsNone(series.fit)
        self.assertIn("Amdahl fit: none", tables.amdahl_sentence(series))
        self.assertIn("this series has 1", tables.amdahl_sentence(series))
        ax = plots.speedup_figure([series]).axes[0]
        self.assertFalse([line for line in ax.get_lines() if "Amdahl" in line.get_label()])


class EfficiencyProblemTest(TempDirTest):
    def test_efficiency_above_100_percent_beyond_its_range_is_a_measurement_problem(self):
        # 2 GPUs at 300-320 img/s against 100: 150-160%, all of it above 100%; epochs of 0.01 s.
        series = one_series(study_file(self.path("fast.h5"), {1: [50, 100, 100, 100], 2: [50, 300, 310, 320]},
                                       time=0.01))
        two = series.points[1]
        self.assertTrue(efficiency_flagged(series, two))
        self.assertFalse(efficiency_flagged(series, series.points[0]))
        [problem] = series.problems
        self.assertIn("155.0% (range 150.0-160.0%), lies above 100% beyond its measured range", problem.text)
        self.assertIn("too short for the timer", problem.text)
        cells = table_cells(tables.scaling_markdown(series), 2)
        self.assertEqual(cells[5], "155.0%*")
        self.assertEqual(cells[9], "-*")  # its Karp-Flatt e is no result either
        self.assertIn("* Measurement problem: the efficiency at 2 GPUs", tables.problems_markdown(series))

    def test_efficiency_within_its_range_of_100_percent_is_a_result(self):
        series = one_series(study_file(self.path("near.h5"), {1: [50, 100, 100, 100], 2: [50, 190, 200, 206]}))
        self.assertEqual(series.problems, [])
        self.assertFalse(efficiency_flagged(series, series.points[1]))
        self.assertEqual(table_cells(tables.scaling_markdown(series), 2)[5], "100.0%")

    def test_a_baseline_of_one_steady_epoch_is_no_result(self):
        path = study_file(self.path("short.h5"), {1: [50, 100], 2: [50, 3812]}, settle_epochs=1)
        series = one_series(path)
        self.assertTrue(efficiency_flagged(series, series.points[1]))
        self.assertEqual(len(series.problems), 1)
        self.assertIn("the 1-GPU baseline has one steady epoch", series.problems[0].text)
        self.assertIn("--epochs 3 or more", series.problems[0].text)
        self.assertIsNone(series.fit)
        result = run_report(path, "--out", self.path("out"))
        self.assert_ok(result)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            report = handle.read()
        self.assertIn("1906.0%*", report)
        self.assertIn("* Measurement problem: the 1-GPU baseline has one steady epoch", report)
        rows = read_csv(self.path("out", "scaling.csv"))
        self.assertEqual(rows[0]["measurement_problem"], "")
        self.assertIn("one steady epoch", rows[1]["measurement_problem"])

    def test_karp_flatt_outside_0_1_is_flagged(self):
        # 2 GPUs slower than 1: speedup 0.5, e = 3, no serial fraction.
        series = one_series(study_file(self.path("slow.h5"), {1: [50, 100, 100, 100], 2: [25, 50, 50, 50]}))
        two = series.points[1]
        self.assertAlmostEqual(two.karp_flatt, 3.0)
        self.assertFalse(efficiency_flagged(series, two))
        self.assertTrue(karp_flatt_flagged(series, two))
        [problem] = series.problems
        self.assertIn("Karp-Flatt e at 2 GPUs is 3.00, outside [0, 1]", problem.text)
        cells = table_cells(tables.scaling_markdown(series), 2)
        self.assertEqual((cells[5], cells[9]), ("25.0%", "-*"))


class PlotLinesTest(TempDirTest):
    def test_no_line_through_a_measurement_problem(self):
        series = one_series(study_file(self.path("short.h5"), {1: [50, 100], 2: [50, 400], 4: [50, 800]}))
        for figure in (plots.speedup_figure([series]), plots.efficiency_figure([series])):
            ax = figure.axes[0]
            measured = next(line for line in ax.get_lines() if line.get_label() == series.label)
            self.assertEqual(list(measured.get_xdata()), [1])  # the baseline alone is a result
            self.assertEqual(measured.get_linestyle(), "None")
            doubtful = [line for line in ax.get_lines() if line.get_label() == "_measurement problem"]
            self.assertEqual([list(line.get_xdata()) for line in doubtful], [[2, 4]])
            self.assertEqual(doubtful[0].get_linestyle(), "None")


class SettleEpochsTest(TempDirTest):
    RATES = {1: [50, 100, 110, 120], 2: [60, 200, 200, 200]}

    def test_the_files_settle_epochs_decide(self):
        path = study_file(self.path("s0.h5"), self.RATES, settle_epochs=0)
        series = one_series(path, settle_epochs=1)
        self.assertEqual(series.points[0].images_per_s, 105.0)  # of 50, 100, 110, 120
        self.assertEqual(series.points[0].throughput.count, 4)
        self.assertTrue(series.settle_recorded)
        self.assertEqual(one_series(study_file(self.path("s2.h5"), self.RATES, settle_epochs=2)).points[0].images_per_s,
                         115.0)
        result = run_report(path, "--table-only")
        self.assert_ok(result)
        self.assertNotIn("settle", result.stderr)

    def test_a_file_without_them_gets_the_option_and_says_so_once(self):
        path = study_file(self.path("old.h5"), self.RATES)
        series = one_series(path, settle_epochs=1)
        self.assertFalse(series.settle_recorded)
        self.assertEqual(series.points[0].images_per_s, 110.0)
        result = run_report(path, "--table-only")
        self.assert_ok(result)
        self.assertEqual(result.stderr.count("does not record its settle epochs"), 1, result.stderr)

    def test_the_former_option_is_refused_with_the_new_name(self):
        result = run_report(study_file(self.path("x.h5"), self.RATES), "--warmup-epochs", "0", "--table-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--warmup-epochs is now --settle-epochs: give --settle-epochs 0", result.stderr)


if __name__ == "__main__":
    unittest.main()
