"""Medians and spreads with known numbers, studies that sweep options (schema 2) and their tables and
plots, and the committed schema-1 study file."""
import math
import os
import unittest

import fixtures
from fixtures import epoch
from report_test_util import TempDirTest, read_csv, run_report

import plots  # noqa: E402
from scalebench_results import load_result  # noqa: E402
from scaling_series import series_from_study  # noqa: E402
from spread import MISSING, median_spread, over_repeats  # noqa: E402
from sweeps import sweep_views, value_names  # noqa: E402

V1_STUDY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "study-schema-v1.h5")


class SpreadTest(unittest.TestCase):
    def test_median_range_and_quartiles(self):
        s = median_spread([3.0, 1.0, 2.0, 10.0])
        self.assertEqual((s.median, s.low, s.high, s.count), (2.5, 1.0, 10.0, 4))
        # Linear interpolation between order statistics: positions 0.75 and 2.25 of [1, 2, 3, 10].
        self.assertAlmostEqual(s.q1, 1.75)
        self.assertAlmostEqual(s.q3, 4.75)
        self.assertEqual(s.error_bar(), (1.5, 7.5))

    def test_missing_values_are_left_out(self):
        self.assertEqual(median_spread([math.nan, 4.0, None]).median, 4.0)
        self.assertIs(median_spread([math.nan]), MISSING)

    def test_repeats_take_the_median_of_their_medians(self):
        runs = [median_spread([10.0, 11.0, 40.0]), median_spread([12.0]), median_spread([9.0, 30.0])]
        s = over_repeats(runs)
        self.assertEqual((s.median, s.low, s.high, s.count), (12.0, 11.0, 19.5, 3))

    def test_one_run_keeps_the_spread_of_its_epochs(self):
        run = median_spread([10.0, 20.0, 60.0])
        self.assertEqual(over_repeats([run]), run)

    def test_scaled(self):
        s = median_spread([1.0, 2.0, 3.0]).scaled(0.5)
        self.assertEqual((s.median, s.low, s.high), (1.0, 0.5, 1.5))


def sweep_runs():
    """Batch 32 and 64 on 1 and 2 GPUs, two repeats each. Steady throughput (epochs 2-4) of all repeats:
    batch 32: 1 GPU 90-400 (median 120), 2 GPUs 170-210 (195); batch 64: 1 GPU 140-160 (150), 2 GPUs
    240-310 (265)."""
    steady = {(32, 1, 1): [90, 100, 400], (32, 1, 2): [120, 120, 120], (32, 2, 1): [180, 170, 190],
              (32, 2, 2): [200, 200, 210], (64, 1, 1): [150, 140, 160], (64, 1, 2): [150, 150, 150],
              (64, 2, 1): [300, 310, 290], (64, 2, 2): [240, 240, 240]}
    runs = []
    for (batch, gpus, repeat), values in steady.items():
        epochs = [epoch(1, 1.0, 10.0)] + [epoch(i + 2, 1.0, float(v)) for i, v in enumerate(values)]
        runs.append({"gpus": gpus, "repeat": repeat, "values": {"batch_size": batch, "precision": "fp32"},
                     "epochs": epochs})
    return runs


class SweepStudyTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.file = fixtures.write_sweep_study(self.path("sweep.h5"), "weak", sweep_runs(),
                                               swept=("batch_size", "precision"), repeats=2)

    def test_one_series_per_combination_with_medians_over_the_epochs_of_all_repeats(self):
        result = load_result(self.file)
        self.assertEqual(result.swept, ("batch_size", "precision"))
        self.assertEqual(len(result.configs), 8)
        series = {s.swept["batch_size"]: s for s in series_from_study(result, settle_epochs=1)}
        self.assertEqual(sorted(series), ["32", "64"])
        by_gpus = {p.gpus: p for p in series["32"].points}
        # Every steady epoch of both repeats counts once: 90 100 400 and 120 120 120 on 1 GPU (median 120),
        # 180 170 190 and 200 200 210 on 2 (an even count: the mean of the middle pair, 195).
        self.assertEqual(by_gpus[1].images_per_s, 120.0)
        self.assertEqual((by_gpus[1].throughput.low, by_gpus[1].throughput.high, by_gpus[1].throughput.count),
                         (90.0, 400.0, 6))
        self.assertEqual(by_gpus[2].images_per_s, 195.0)
        self.assertAlmostEqual(by_gpus[2].speedup, 195.0 / 120.0)
        self.assertAlmostEqual(by_gpus[2].efficiency, 195.0 / 120.0 / 2)
        self.assertAlmostEqual(by_gpus[2].speedup_spread.low, 170.0 / 120.0)
        self.assertAlmostEqual(by_gpus[2].efficiency_spread.high, 210.0 / 120.0 / 2)
        # Its own baseline: batch 64's speedup is against batch 64 on 1 GPU.
        self.assertAlmostEqual({p.gpus: p for p in series["64"].points}[2].speedup, 265.0 / 150.0)

    def test_throughput_against_each_swept_option(self):
        result = load_result(self.file)
        views = {v.column: v for v in sweep_views(series_from_study(result, 1), result.swept)}
        batch = views["batch_size"]
        self.assertTrue(batch.numeric)
        self.assertEqual([line.label for line in batch.lines], ["1 GPU, precision fp32", "2 GPUs, precision fp32"])
        self.assertEqual([(v, s.median) for v, s in batch.lines[1].points], [("32", 195.0), ("64", 265.0)])
        self.assertNotIn("precision", views)  # swept, but over one value: no trend to show
        ax = plots.sweep_figure(batch).axes[0]
        self.assertEqual(ax.get_xlabel(), "batch_size")
        line = next(l for l in ax.get_lines() if l.get_label() == "2 GPUs, precision fp32")
        self.assertEqual(list(line.get_ydata()), [195.0, 265.0])

    def test_report_writes_sweep_tables_and_plots(self):
        self.assert_ok(run_report(self.file, "--out", self.path("out")))
        written = set(os.listdir(self.path("out")))
        self.assertTrue({"sweeps.csv", "sweep_1_batch_size.png", "sweep_1_batch_size.svg"} <= written, written)
        self.assertFalse([name for name in written if "precision" in name])
        rows = [r for r in read_csv(self.path("out", "sweeps.csv")) if r["swept"] == "batch_size"]
        row = next(r for r in rows if r["gpus"] == "2" and r["value"] == "64")
        self.assertEqual((float(row["images_per_s"]), float(row["images_per_s_min"]), float(row["images_per_s_max"])),
                         (265.0, 240.0, 310.0))
        self.assertEqual(row["count"], "6")
        scaling = read_csv(self.path("out", "scaling.csv"))
        self.assertEqual(len(scaling), 4)  # two series of two GPU counts
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## Sweeps", text)
        self.assertIn("throughput against batch_size", text)

    def test_table_only_prints_each_series_and_the_sweep_table(self):
        result = run_report(self.file, "--table-only", cwd=self.tmp)
        self.assert_ok(result)
        self.assertIn("sweep.h5: weak scaling study, batch_size 32, precision fp32", result.stdout)
        self.assertIn("sweep.h5: weak scaling study, batch_size 64, precision fp32", result.stdout)
        self.assertIn("throughput against batch_size", result.stdout)
        row = next(line for line in result.stdout.splitlines() if line.replace(" ", "").startswith("|fp32|2|64|"))
        self.assertEqual([c.strip() for c in row.strip("|").split("|")][3:], ["265", "240-310", "240-298", "6"])

    def test_named_values_are_categories(self):
        runs = [{"gpus": g, "repeat": 1, "values": {"precision": p},
                 "epochs": [epoch(1, 1.0, 1.0), epoch(2, 1.0, rate * g)]}
                for p, rate in (("fp32", 100.0), ("bf16", 250.0)) for g in (1, 2)]
        path = fixtures.write_sweep_study(self.path("amp.h5"), "weak", runs, swept=("precision",),
                                          cfg=fixtures.config(device="cuda"))
        result = load_result(path)
        [view] = sweep_views(series_from_study(result, 1), result.swept, value_names(result))
        self.assertFalse(view.numeric)
        self.assertEqual([line.label for line in view.lines], ["1 GPU", "2 GPUs"])
        ax = plots.sweep_figure(view).axes[0]
        # In the order of the study's precision_names, not alphabetical.
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["fp32", "bf16"])
        line = next(l for l in ax.get_lines() if l.get_label() == "2 GPUs")
        self.assertEqual((list(line.get_xdata()), list(line.get_ydata())), ([0, 1], [200.0, 500.0]))

    def test_median_over_steady_epochs_not_the_fastest(self):
        # One run, no repeats: epochs 2-4 give 90, 100 and 400 img/s; the median is 100, the range 90-400.
        runs = [r for r in sweep_runs() if r["repeat"] == 1 and r["values"]["batch_size"] == 32]
        path = fixtures.write_sweep_study(self.path("one.h5"), "weak", runs, swept=("batch_size",))
        [series] = series_from_study(load_result(path), settle_epochs=1)
        point = {p.gpus: p for p in series.points}[1]
        self.assertEqual(point.images_per_s, 100.0)
        self.assertEqual((point.throughput.low, point.throughput.high, point.throughput.count), (90.0, 400.0, 3))


class SchemaOneTest(TempDirTest):
    def test_the_committed_version_1_study_reads(self):
        result = load_result(V1_STUDY)
        self.assertEqual(result.attrs["schema_version"], 1)
        self.assertEqual(result.swept, ())
        self.assertEqual(sorted(result.configs), ["gpus_1", "gpus_2"])
        self.assertEqual({run.repeat for run in result.configs.values()}, {1})
        [series] = series_from_study(result, settle_epochs=1)
        self.assertEqual([p.gpus for p in series.points], [1, 2])
        self.assertEqual(series.points[0].speedup, 1.0)
        for point in series.points:
            self.assertGreater(point.images_per_s, 0)
            self.assertEqual(point.throughput.count, 2)  # the two measured epochs
        self.assertEqual(sweep_views([series], result.swept), [])

    def test_report_on_the_version_1_study(self):
        result = run_report(V1_STUDY, "--out", self.path("out"))
        self.assert_ok(result)
        rows = read_csv(self.path("out", "scaling.csv"))
        self.assertEqual([r["gpus"] for r in rows], ["1", "2"])
        self.assertNotIn("sweeps.csv", os.listdir(self.path("out")))


if __name__ == "__main__":
    unittest.main()
