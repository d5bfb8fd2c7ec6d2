"""report.py's predict section: a `scalebench predict` file (docs/results_schema.md) drawn and tabled with the
study it was calibrated on, alone or beside other inputs."""
import math
import os
import sys
import unittest

import h5py
import numpy as np

import fixtures
from report_test_util import TempDirTest, read_csv, run_report

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "analysis"))
import predict_report  # noqa: E402

PREDICT_FIELDS = [("gpus", "<i8"), ("nodes", "<i8"), ("scaling", "<i8"), ("per_gpu_batch", "<f8"), ("bucket_mib", "<f8"),
                  ("buckets", "<i8"), ("step_s", "<f8"), ("images_per_s", "<f8"), ("efficiency", "<f8"),
                  ("exposed_comm_fraction", "<f8"), ("comm_s", "<f8"), ("slowest_rank_fraction", "<f8"), ("best_bucket_mib", "<f8"),
                  ("best_images_per_s", "<f8"), ("best_exposed_comm_fraction", "<f8")]
CHECK_FIELDS = [("gpus", "<i8"), ("scaling", "<i8"), ("batch_size", "<i8"), ("repeats", "<i8"), ("measured_step_s", "<f8"),
                ("repeat_spread", "<f8"), ("calibration_gpus", "<i8"), ("calibration_parameter", "<i8"),
                ("calibration_value", "<f8"), ("calibration_at_bound", "<i8"), ("calibration_applied", "<i8"),
                ("compute_factor", "<f8"), ("compute_factor_at_bound", "<i8"), ("backward_factor", "<f8"),
                ("backward_factor_at_bound", "<i8"), ("compute_factor_applied", "<i8"), ("rank_spread", "<f8"),
                ("predicted_step_s", "<f8"),
                ("predicted_error", "<f8"), ("naive_from_gpus", "<i8"), ("naive_step_s", "<f8"), ("naive_error", "<f8")]
CALIBRATION_NAMES = ["none", "contention", "comm_scale", "wait"]
STRONG, WEAK = 0, 1


def write_prediction(path, study, gpus=(1, 2, 4, 8, 16)):
    """A prediction of weak and strong scaling whose efficiency falls as 1 / (1 + 0.1 (n - 1))."""
    rows = []
    for scaling in (WEAK, STRONG):
        for n in gpus:
            eff = 1.0 / (1.0 + 0.1 * (n - 1))
            batch = 64.0 if scaling == WEAK else 64.0 / n
            slowest = 0.0 if n == 1 else 0.012
            rows.append((n, 1, scaling, batch, 25.0, 3, 0.1, 640.0 * n * eff, eff, 1 - eff, 0.01, slowest, 5.0,
                         640.0 * n * eff * 1.01, (1 - eff) * 0.9))
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = 2
        f.attrs["complete"] = 1
        f.attrs["predict_version"] = 5
        f.attrs["config_json"] = '{"command":"predict","batch_size":64}'
        table = f.create_dataset("predict", data=np.array(rows, dtype=PREDICT_FIELDS))
        table.attrs["scaling_names"] = ["strong", "weak"]
        table.attrs["study"] = study
        table.attrs["intra_alpha_s"] = 5e-6
        table.attrs["intra_beta_bytes_per_s"] = 100e9
        table.attrs["intra_fit_error"] = 0.04
        table.attrs["inter_alpha_s"] = math.nan
        table.attrs["inter_beta_bytes_per_s"] = math.nan
        table.attrs["gpus_per_node"] = 0
        table.attrs["ready_source"] = "flops"
        table.attrs["calibration_parameter_names"] = CALIBRATION_NAMES
        table.attrs["calibration_gpus"] = 4
        table.attrs["calibration_parameter"] = 3
        table.attrs["calibration_value"] = 1.4e-4
        table.attrs["calibration_at_bound"] = 0
        table.attrs["compute_factor"] = 1.044
        table.attrs["compute_factor_at_bound"] = 0
        table.attrs["backward_factor"] = 1.045
        table.attrs["backward_factor_at_bound"] = 0
        table.attrs["rank_spread"] = 0.0153
        table.attrs["weak_exposed_5pct_gpus"] = 2
        table.attrs["weak_exposed_20pct_gpus"] = 4
        table.attrs["strong_exposed_5pct_gpus"] = 2
        table.attrs["strong_exposed_20pct_gpus"] = -1
        check = f.create_dataset("check", data=np.array(
            [(2, STRONG, 64, 3, 0.05, 0.02, 0, 0, 0.0, 0, 0, math.nan, 0, math.nan, 0, 0, 0.0, 0.052, 0.04, 1, 0.045, -0.1),
             (4, STRONG, 64, 3, 0.03, 0.01, 2, 2, 0.8, 0, 0, 1.02, 0, 1.1, 0, 1, 0.0153, 0.031, 0.033, 2, 0.032, 0.06),
             (8, STRONG, 64, 3, 0.02, 0.01, 4, 3, 2.5e-4, 0, 1, 1.25, 1, 5.0, 1, 1, 0.02, 0.021, 0.05, 4, 0.02, 0.0)],
            dtype=CHECK_FIELDS))
        check.attrs["calibration_parameter_names"] = CALIBRATION_NAMES
    return path


class PredictReportTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.study = self.path("study.h5")
        self.speedups = fixtures.amdahl_study(self.study)  # strong scaling, 1, 2, 4, 8 GPUs
        self.prediction = write_prediction(self.path("pred.h5"), self.study)

    def test_loads_the_prediction_and_the_studys_points(self):
        self.assertTrue(predict_report.is_prediction(self.prediction))
        self.assertFalse(predict_report.is_prediction(self.study))
        self.assertFalse(predict_report.is_prediction(self.path("missing.h5")))
        p = predict_report.load_prediction(self.prediction)
        self.assertEqual(p.scaling_names, ["strong", "weak"])
        self.assertEqual(len(p.rows), 10)
        self.assertEqual(p.batch_size, 64)
        self.assertEqual(len(p.measured), 1)
        measured = p.measured[0]
        self.assertEqual(measured.scaling, "strong")
        self.assertEqual(list(measured.gpus), [1, 2, 4, 8])
        for n, eff in zip(measured.gpus, measured.efficiency):
            self.assertAlmostEqual(eff, self.speedups[n] / n)  # the study's own efficiency, from its images/s

    def test_section_table_thresholds_check_and_plot(self):
        result = run_report(self.prediction, "--out", self.path("out"))
        self.assert_ok(result)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## Predicted scaling", text)
        self.assertIn("| weak | 16 | 1 | 64.0 |", text)
        self.assertIn("| strong | 16 | 1 | 4.0 |", text)
        self.assertIn("weak scaling: exposed communication passes 5% at 2 GPUs, 20% at 4 GPUs", text)
        self.assertIn("strong scaling: exposed communication passes 5% at 2 GPUs, 20% at no count predicted", text)
        self.assertIn("compute factor: 1.044 outside backward, 1.045 on backward; overlap calibration: wait 0.14 ms, fitted at the "
                      "measured 4 GPUs; ranks' spread: 1.53% of the compute.", text)
        self.assertIn("| 1.2% | 5 | ", text)  # a multi-GPU row's slowest rank, before its best bucket
        self.assertIn("| 2 | 3 | 0.050000 | 2.0% | none | none | none | 0.052000 | 4.0% | 1 | -10.0% |", text)
        self.assertIn("| 4 | 3 | 0.030000 | 1.0% | 1.02 / 1.1 | comm_scale 0.8 at 2, not carried here | 1.53% | 0.031000 | 3.3% | 2 | "
                      "6.0% |", text)
        self.assertIn("| 8 | 3 | 0.020000 | 1.0% | 1.25 (bound) / 5 (bound) | wait 0.25 ms at 4 | 2.00% |", text)
        self.assertIn("predict_scaling.svg", text)
        for name in ("predict.csv", "predict_scaling.png", "predict_scaling.svg"):
            self.assertTrue(os.path.exists(self.path("out", name)), name)
        rows = read_csv(self.path("out", "predict.csv"))
        self.assertEqual(len(rows), 10)
        self.assertAlmostEqual(float(rows[4]["efficiency"]), 1.0 / (1.0 + 0.1 * 15))
        self.assertEqual([float(r["slowest_rank_fraction"]) for r in rows[:2]], [0.0, 0.012])

    def test_a_file_before_the_slowest_rank(self):
        # predict_version 4 files: no ranks' spread, no slowest-rank column; the report says so and writes NaN.
        with h5py.File(self.prediction, "a") as f:
            attrs = dict(f["predict"].attrs)
            del attrs["rank_spread"]
            old_rows = f["predict"][:][[n for n, _ in PREDICT_FIELDS if n != "slowest_rank_fraction"]]
            old_check = f["check"][:][[n for n, _ in CHECK_FIELDS if n != "rank_spread"]]
            del f["predict"], f["check"]
            table = f.create_dataset("predict", data=np.array(old_rows.tolist(), dtype=[
                (n, t) for n, t in PREDICT_FIELDS if n != "slowest_rank_fraction"]))
            for name, value in attrs.items():
                table.attrs[name] = value
            f.create_dataset("check", data=np.array(old_check.tolist(), dtype=[
                (n, t) for n, t in CHECK_FIELDS if n != "rank_spread"])).attrs["calibration_parameter_names"] = CALIBRATION_NAMES
        text = predict_report.predict_markdown([predict_report.load_prediction(self.prediction)])
        self.assertIn("ranks' spread: none recorded (a file written before the slowest-rank term).", text)
        self.assertIn("| 4 | 3 | 0.030000 | 1.0% | 1.02 / 1.1 | comm_scale 0.8 at 2, not carried here | n/a | 0.031000 |", text)
        self.assertIn("| n/a | 5 | ", text)
        lines = predict_report.predict_csv([predict_report.load_prediction(self.prediction)]).splitlines()
        self.assertIn("slowest_rank_fraction", lines[0])
        self.assertIn(",nan,", lines[1])

    def test_a_file_with_one_compute_factor(self):
        # predict_version 3 files: one factor on the whole compute, and contention or the all-reduce factor.
        with h5py.File(self.prediction, "a") as f:
            for name in [n for n in f["predict"].attrs if n.startswith(("backward_factor", "rank_spread"))]:
                del f["predict"].attrs[name]
            f["predict"].attrs["calibration_parameter"] = 1
            f["predict"].attrs["calibration_value"] = 0.052
            old_fields = [(n, t) for n, t in CHECK_FIELDS if not n.startswith("backward_factor") and n != "rank_spread"]
            old = np.array([(4, STRONG, 64, 3, 0.03, 0.01, 2, 2, 0.8, 0, 0, 1.02, 0, 1, 0.031, 0.033, 2, 0.032, 0.06)], dtype=old_fields)
            del f["check"]
            f.create_dataset("check", data=old).attrs["calibration_parameter_names"] = CALIBRATION_NAMES[:3]
        text = predict_report.predict_markdown([predict_report.load_prediction(self.prediction)])
        self.assertIn("compute factor: 1.044; overlap calibration: contention 0.052, fitted at the measured 4 GPUs; ranks' spread: none "
                      "recorded", text)
        self.assertIn("| 4 | 3 | 0.030000 | 1.0% | 1.02 | comm_scale 0.8 at 2, not carried here | n/a | 0.031000 | 3.3% |", text)

    def test_a_file_without_the_compute_factor(self):
        # predict_version 2 files: the overlap calibration without the compute factor; the report says so.
        with h5py.File(self.prediction, "a") as f:
            for name in [n for n in f["predict"].attrs if n.startswith(("compute_factor", "backward_factor", "rank_spread"))]:
                del f["predict"].attrs[name]
            old_fields = [(n, t) for n, t in CHECK_FIELDS
                          if not n.startswith(("compute_factor", "backward_factor")) and n != "rank_spread"]
            old = np.array([(4, STRONG, 64, 3, 0.03, 0.01, 2, 2, 0.8, 0, 0, 0.031, 0.033, 2, 0.032, 0.06)], dtype=old_fields)
            del f["check"]
            f.create_dataset("check", data=old).attrs["calibration_parameter_names"] = CALIBRATION_NAMES
        text = predict_report.predict_markdown([predict_report.load_prediction(self.prediction)])
        self.assertIn("compute factor: none recorded (a file written before the compute factor); overlap calibration: wait", text)
        self.assertIn("| 4 | 3 | 0.030000 | 1.0% | n/a | comm_scale 0.8 at 2, not carried here | n/a | 0.031000 | 3.3% |", text)

    def test_a_measured_prediction_without_a_compute_factor(self):
        with h5py.File(self.prediction, "a") as f:
            f["predict"].attrs["compute_factor"] = math.nan
        text = predict_report.predict_markdown([predict_report.load_prediction(self.prediction)])
        self.assertIn("compute factor: not measured (1); overlap calibration", text)

    def test_a_file_without_the_calibration(self):
        # predict_version 1 files: no calibration attributes or columns; the report says so and still tables the check.
        with h5py.File(self.prediction, "a") as f:
            for name in [n for n in f["predict"].attrs
                         if n.startswith(("calibration_", "compute_factor", "backward_factor", "rank_spread"))]:
                del f["predict"].attrs[name]
            old_fields = [(n, t) for n, t in CHECK_FIELDS
                          if not n.startswith(("calibration_", "compute_factor", "backward_factor", "rank_spread"))]
            old = np.array([(2, STRONG, 64, 3, 0.05, 0.02, 0.052, 0.04, 1, 0.045, -0.1)], dtype=old_fields)
            del f["check"]
            f.create_dataset("check", data=old)
        text = predict_report.predict_markdown([predict_report.load_prediction(self.prediction)])
        self.assertIn("overlap calibration: none recorded", text)
        self.assertIn("| 2 | 3 | 0.050000 | 2.0% | n/a | n/a | n/a | 0.052000 | 4.0% | 1 | -10.0% |", text)

    def test_beside_the_study_and_without_it(self):
        result = run_report(self.study, self.prediction)
        self.assert_ok(result)
        self.assertIn("## Predicted scaling", result.stdout)
        self.assertIn("| 8 |", result.stdout)  # the study's own table is there too
        os.remove(self.study)
        alone = run_report(self.prediction)
        self.assert_ok(alone)
        self.assertIn("is not at hand: no measured points are drawn", alone.stdout)


if __name__ == "__main__":
    unittest.main()
