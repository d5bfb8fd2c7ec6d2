"""`scalebench predict` on a real CPU study (1 and 2 ranks, a tiny model, a batch-size sweep) and a CPU comm
sweep: it prints weak and strong predictions, writes a `predict` file and the --csv/--json tables, --check
sets the measured 2-rank step beside its prediction, and bad input is refused with one sentence before any
work."""
import csv
import json
import math
import os
import shutil
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

DATA = "synthetic:1x8x8:4:256:64"
BATCH = 32


def measured_step(study, gpus):
    """The step predict measures at `gpus` GPUs and the batch of BATCH per GPU (weak scaling): the
    configuration's measured epochs' wall time over their steps."""
    measured = study[f"configs/gpus_{gpus}_batch_size_{BATCH}"]["epochs"][-2:]  # --epochs 2
    steps = sum(measured["images_per_s"] * measured["wall_time_max_s"]) / (BATCH * gpus)
    return sum(measured["wall_time_max_s"]) / steps


class Predict(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_dir = temp_dir()
        cls.tmp = cls.tmp_dir.name
        cls.study = os.path.join(cls.tmp, "study.h5")
        cls.comm = os.path.join(cls.tmp, "comm.h5")
        cls.run_ok(2, "scale", "--model", "mlp", "--data", DATA, "--epochs", "2", "--settle-epochs", "1", "--gpus", "1,2",
                   "--batch-size", str(BATCH), "--sweep-batch-size", "8,16,32", "--out", cls.study)
        cls.run_ok(2, "comm", "--min-bytes", "1K", "--max-bytes", "256K", "--dtypes", "fp32", "--iterations", "5",
                   "--comm-model", "mlp", "--out", cls.comm)

    @classmethod
    def tearDownClass(cls):
        cls.tmp_dir.cleanup()

    @classmethod
    def run_ok(cls, np, *args):
        result = run_scalebench(np, *args, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    def predict(self, *args):
        return run_scalebench(1, "predict", "--study", self.study, "--comm", self.comm, *args, timeout=300)

    def assert_refused(self, result, *words):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")  # refused before any work
        errors = [line for line in result.stderr.splitlines() if line.startswith("scalebench: error: ")]
        self.assertEqual(len(errors), 1, result.stderr)  # one sentence (mpirun may add its own lines)
        message = errors[0]
        for word in words:
            self.assertIn(word, message)

    def test_prediction_file_tables_and_check(self):
        out = os.path.join(self.tmp, "pred.h5")
        result = self.predict("--gpus", "1,2,4,8", "--check", "--out", out, "--csv", out + ".csv", "--json", out + ".jsonl")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("exposed communication passes", result.stdout)
        # Batch 32 over 8 GPUs needs a 1-GPU point at 4 per GPU, below the sweep's 8: named, not guessed.
        self.assertIn("strong scaling at 8 GPUs is left out", result.stdout)
        self.assertIn("--sweep-batch-size 4", result.stdout)
        check_lines = [line.split() for line in result.stdout.splitlines() if line.strip().startswith("2 ") and len(line.split()) == 13]
        self.assertEqual(len(check_lines), 1, result.stdout)
        self.assertEqual(check_lines[0][4:8], ["0", "none", "none", "none"])  # 2 GPUs: nothing below to calibrate on
        # The study sampled its steps: the 2-rank runs' spread is measured and the larger counts wait for their slowest rank.
        self.assertIn("# ranks' spread: ", result.stdout)
        self.assertIn("sampled steps at the measured 2 GPUs", result.stdout)
        self.assertIn("no multi-GPU calibration was possible at 2 GPUs", result.stdout)
        self.assertIn("# compute factors: ", result.stdout)
        self.assertIn("# overlap calibration: ", result.stdout)
        self.assertIn("at the measured 2 GPUs", result.stdout)

        with h5py.File(out, "r") as f, h5py.File(self.study, "r") as study:
            self.assertEqual(f.attrs["complete"], 1)
            self.assertEqual(json.loads(f.attrs["config_json"])["command"], "predict")
            table = f["predict"]
            rows = table[:]
            names = list(table.attrs["scaling_names"])
            weak, strong = names.index("weak"), names.index("strong")
            self.assertEqual(len(table.attrs["units"]), len(rows.dtype.names))
            self.assertEqual(sorted(rows[rows["scaling"] == weak]["gpus"]), [1, 2, 4, 8])
            self.assertEqual(sorted(rows[rows["scaling"] == strong]["gpus"]), [1, 2, 4])
            # Weak scaling keeps each GPU's work, so only compute factors below 1 (the measured multi-rank compute
            # faster than the 1-rank run's, as noise on a busy host can make it) lift its efficiency above 1.
            factors = [table.attrs[name] for name in ("compute_factor", "backward_factor")]
            fastest_factor = min([1.0] + [x for x in factors if math.isfinite(x)])  # NaN: not measured, 1
            for row in rows:
                self.assertGreater(row["images_per_s"], 0)
                self.assertGreater(row["efficiency"], 0)
                if row["scaling"] == weak:  # strong scaling may be superlinear where smaller batches run faster per sample
                    self.assertLessEqual(row["efficiency"], 1 / fastest_factor + 1e-12)
                self.assertGreaterEqual(row["exposed_comm_fraction"], 0)
                self.assertGreaterEqual(row["best_images_per_s"], row["images_per_s"] * (1 - 1e-12))
                expected_batch = BATCH if row["scaling"] == weak else BATCH / row["gpus"]
                self.assertAlmostEqual(row["per_gpu_batch"], expected_batch)
                if row["gpus"] == 1:
                    self.assertAlmostEqual(row["efficiency"], 1.0, places=12)
                    self.assertEqual(row["exposed_comm_fraction"], 0.0)
            self.assertIn(table.attrs["ready_source"], ("flops", "recorded"))
            self.assertGreater(table.attrs["intra_beta_bytes_per_s"], 0)
            self.assertEqual(table.attrs["intra_ranks"], 2)
            # The study's largest multi-GPU count calibrates the overlap: the simulated step there is its measured step.
            # The CPU engine all-reduces after backward, so nothing overlaps and the factor on the all-reduce is fitted.
            self.assertEqual(table.attrs["calibration_gpus"], 2)
            parameters = [str(n, "utf-8") if isinstance(n, bytes) else n for n in table.attrs["calibration_parameter_names"]]
            self.assertEqual(parameters[table.attrs["calibration_parameter"]], "comm_scale")
            # The compute factors are measured at 2 GPUs from the phases, within their bounds.
            self.assertGreaterEqual(table.attrs["compute_factor"], 0.8)
            self.assertLessEqual(table.attrs["compute_factor"], 1.25)
            self.assertGreaterEqual(table.attrs["backward_factor"], 0.8)
            self.assertLessEqual(table.attrs["backward_factor"], 5.0)
            weak_two = rows[(rows["scaling"] == weak) & (rows["gpus"] == 2)][0]
            ratio = weak_two["step_s"] / measured_step(study, 2)
            value = table.attrs["calibration_value"]
            if table.attrs["calibration_at_bound"]:  # a noisy CPU step out of reach: the bound on the side it lies
                self.assertIn(value, (0.0, 10.0))
                self.assertGreater(ratio, 1.0) if value == 0.0 else self.assertLess(ratio, 1.0)
            else:
                self.assertGreater(value, 0.0)
                self.assertAlmostEqual(ratio, 1.0, places=6)
            # The 2-rank runs' spread, carried: the slowest of 4 and 8 ranks takes a growing share; 1 GPU waits for nobody.
            self.assertGreater(table.attrs["rank_spread"], 0.0)
            lateness = {int(r["gpus"]): r["slowest_rank_fraction"] * r["step_s"] for r in rows[rows["scaling"] == weak]}
            self.assertEqual(lateness[1], 0.0)
            self.assertGreater(lateness[2], 0.0)
            self.assertGreater(lateness[4], lateness[2])
            self.assertGreater(lateness[8], lateness[4])

            check = f["check"][:]
            self.assertEqual(list(check["gpus"]), [2])
            measured = [r for r in study["study"][:] if r["gpus"] == 2 and r["batch_size"] == BATCH]
            self.assertEqual(len(measured), 1)
            self.assertAlmostEqual(check["measured_step_s"][0] / measured_step(study, 2), 1.0, places=6)
            self.assertEqual(check["repeats"][0], 1)
            self.assertEqual(check["repeat_spread"][0], 0.0)
            self.assertEqual(check["calibration_gpus"][0], 0)
            self.assertEqual(check["calibration_value"][0], 0.0)
            self.assertEqual(check["calibration_applied"][0], 0)
            self.assertTrue(math.isnan(check["compute_factor"][0]))  # nothing multi-GPU below 2 measured it
            self.assertEqual(check["rank_spread"][0], 0.0)
            self.assertEqual(check["compute_factor_applied"][0], 0)
            self.assertAlmostEqual(check["predicted_error"][0],
                                   (check["predicted_step_s"][0] - check["measured_step_s"][0]) / check["measured_step_s"][0])
            self.assertEqual(check["naive_from_gpus"][0], 1)  # 1 GPU's efficiency (1) carried forward
            self.assertAlmostEqual(check["naive_step_s"][0] / measured_step(study, 1), 1.0, places=6)

        with open(out + ".csv", newline="") as f:
            csv_rows = list(csv.DictReader(f))
        self.assertEqual(len(csv_rows), 7)
        self.assertTrue(os.path.exists(out + "-check.csv"))
        with open(out + ".jsonl") as f:
            tables = [json.loads(line)["table"] for line in f]
        self.assertEqual(tables, ["predict"] * 7 + ["check"])

        again = self.predict("--gpus", "2", "--out", out)
        self.assert_refused(again, "--out", "exists")

    def test_hierarchical_network(self):
        result = self.predict("--gpus", "2,4,8,16", "--network", "nodes=4,gpus-per-node=2,inter=ib:100Gbps,latency=3us")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("between nodes of 2 GPUs", result.stdout)
        bad = self.predict("--gpus", "3", "--network", "gpus-per-node=2,inter=ib:100Gbps")
        self.assert_refused(bad, "--gpus", "3 GPUs do not fill whole nodes of 2 GPUs")

    def test_recorded_bucket_ready_times(self):
        # The reserved /configs/<group>/bucket_ready (docs/results_schema.md): one value per bucket of the plan. The mlp's
        # gradients make one bucket at the study's 25 MiB.
        recorded = os.path.join(self.tmp, "study-ready.h5")
        shutil.copy(self.study, recorded)
        with h5py.File(recorded, "a") as f:
            f["configs/gpus_1_batch_size_32"].create_dataset("bucket_ready", data=[1e-4])
        out = os.path.join(self.tmp, "pred-ready.h5")
        result = run_scalebench(1, "predict", "--study", recorded, "--comm", self.comm, "--gpus", "2", "--out", out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["predict"].attrs["ready_source"], "recorded")
        with h5py.File(recorded, "a") as f:
            del f["configs/gpus_1_batch_size_32/bucket_ready"]
            f["configs/gpus_1_batch_size_32"].create_dataset("bucket_ready", data=[1e-4, 2e-4])
        self.assert_refused(run_scalebench(1, "predict", "--study", recorded, "--comm", self.comm),
                            "bucket_ready does not fit", "2 recorded ready times for a plan of 1 bucket")

    def test_bad_input(self):
        missing = os.path.join(self.tmp, "missing.h5")
        self.assert_refused(run_scalebench(1, "predict", "--study", missing, "--comm", self.comm), "--study", "missing.h5")
        self.assert_refused(run_scalebench(1, "predict", "--study", self.comm, "--comm", self.comm), "--study", "`comm` sweep")
        self.assert_refused(run_scalebench(1, "predict", "--study", self.study, "--comm", self.study), "--comm", "`scale` study")
        self.assert_refused(self.predict("--network", "nodes=2,inter=ib"), "--network", "NAME:BANDWIDTH")
        self.assert_refused(run_scalebench(1, "predict", "--comm", self.comm), "--study is required")

        one_rank = os.path.join(self.tmp, "comm-np1.h5")
        self.run_ok(1, "comm", "--min-bytes", "1K", "--max-bytes", "4K", "--dtypes", "fp32", "--iterations", "2", "--out", one_rank)
        self.assert_refused(run_scalebench(1, "predict", "--study", self.study, "--comm", one_rank), "--comm", "1 rank", "-np 2")

        two_only = os.path.join(self.tmp, "study-2.h5")
        self.run_ok(2, "scale", "--model", "mlp", "--data", DATA, "--epochs", "1", "--settle-epochs", "0", "--gpus", "2",
                    "--batch-size", str(BATCH), "--sample-steps", "0", "--out", two_only)
        self.assert_refused(run_scalebench(1, "predict", "--study", two_only, "--comm", self.comm), "--study", "1-GPU",
                            "--gpus 1")

        self.assert_refused(self.predict("--batch-size", "4"), "--batch-size 4", "--sweep-batch-size 4")
        several = run_scalebench(2, "predict", "--study", self.study, "--comm", self.comm)
        self.assertEqual(several.returncode, 2, several.stdout + several.stderr)
        self.assertIn("one process", several.stderr)


if __name__ == "__main__":
    unittest.main()
