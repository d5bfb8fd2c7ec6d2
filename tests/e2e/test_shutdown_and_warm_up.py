"""The two ends of a run around the training clock: the untimed initialisation before it (--untimed-init, the
start-up part `warm_up`; off by default on the CPU) leaves the training as it is without it, and rank 0's last
line, `shutdown:`, breaks down the time from the end of training to the end of MPI, whose engine part the
results file records too."""
import math
import os
import re
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

SHUTDOWN = re.compile(r"^shutdown: (?P<total>[\d.]+) s from the end of training to the end of MPI \(rank 0\): "
                      r"(?P<parts>.*); (?P<process>[\d.]+) s from process start$", re.MULTILINE)
STARTUP = re.compile(r"^startup: .*$", re.MULTILINE)
COLUMNS = ["train_loss", "test_loss", "test_accuracy"]


class ShutdownAndWarmUp(unittest.TestCase):
    def train(self, out, *extra):
        # 300 samples on 2 ranks in batches of 32: four full steps and a short one of 22 per rank.
        result = run_scalebench(2, "train", "--model", "mnist-cnn", "--data", "synthetic", "--train-limit", "300",
                                "--test-limit", "100", "--eval-batch-size", "64", "--epochs", "2",
                                "--batch-size", "32", "--no-plan-cache", "--out", out, *extra, timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result

    def test_the_warm_up_changes_no_result_and_the_shutdown_line_comes_last(self):
        with temp_dir() as tmp:
            warm = self.train(os.path.join(tmp, "warm.h5"), "--untimed-init")
            cold = self.train(os.path.join(tmp, "cold.h5"))  # the CPU's default: none
            self.assertTrue(recorded_config(os.path.join(tmp, "warm.h5"))["untimed_init"])
            self.assertFalse(recorded_config(os.path.join(tmp, "cold.h5"))["untimed_init"])
            with h5py.File(os.path.join(tmp, "warm.h5"), "r") as w, h5py.File(os.path.join(tmp, "cold.h5"), "r") as c:
                for column in COLUMNS:
                    self.assertEqual(list(w["epochs"][column]), list(c["epochs"][column]), column)
                self.assertGreater(w.attrs["startup_warm_up_s"], 0)
                self.assertTrue(math.isnan(c.attrs["startup_warm_up_s"]))
                for f in (w, c):
                    self.assertGreaterEqual(f.attrs["shutdown_engine_s"], 0)
            self.assertIn(" warm_up ", STARTUP.search(warm.stdout)[0])
            self.assertNotIn(" warm_up ", STARTUP.search(cold.stdout)[0])

            for result in (warm, cold):
                lines = SHUTDOWN.findall(result.stdout)
                self.assertEqual(len(lines), 1, result.stdout)  # rank 0 alone
                self.assertTrue(result.stdout.rstrip().splitlines()[-1].startswith("shutdown: "), result.stdout)
                match = SHUTDOWN.search(result.stdout)
                parts = dict(re.findall(r"(\w+) ([\d.]+) s", match["parts"]))
                self.assertEqual(list(parts), ["engine", "results", "mpi_finalize", "other"], match["parts"])
                # The parts add up to the total (each printed to the millisecond).
                self.assertAlmostEqual(sum(float(v) for v in parts.values()), float(match["total"]), delta=0.0025)
                self.assertGreater(float(match["process"]), float(match["total"]))

    def test_a_run_without_results_file_prints_no_results_part(self):
        result = run_scalebench(1, "train", "--model", "mlp", "--data", "synthetic", "--train-limit", "64",
                                "--test-limit", "16", "--epochs", "1", "--no-plan-cache", timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        parts = dict(re.findall(r"(\w+) ([\d.]+) s", SHUTDOWN.search(result.stdout)["parts"]))
        self.assertEqual(list(parts), ["engine", "mpi_finalize", "other"])

    def test_other_commands_print_no_shutdown_line(self):
        result = run_scalebench(1, "info")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn("shutdown:", result.stdout)


if __name__ == "__main__":
    unittest.main()
