"""Early stopping as the program runs it: --target-accuracy with --patience stops after that many
evaluations in a row at or above the target, --stop-after-no-improvement after epochs without a better
accuracy, --patience alone is refused, and rank 0 closes with one summary line whose numbers the results
file also holds."""
import math
import os
import re
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

# 64 test images of 4 classes: any model gets more than 5% of them right.
TINY = ["--model", "mlp", "--data", "synthetic:1x8x8:4:128:64", "--batch-size", "16", "--device", "cpu"]
SUMMARY = re.compile(r"^summary: (?P<total>[\d.]+) s in total, (?P<images>[\d,]+) images at (?P<rate>[\d,]+) img/s, "
                     r"best test accuracy (?P<best>[\d.]+)%(?P<target>.*)$", re.MULTILINE)


def epoch_lines(stdout):
    return re.findall(r"^epoch +\d+/\d+ .*$", stdout, re.MULTILINE)


class EarlyStopping(unittest.TestCase):
    def test_target_with_patience_stops_after_that_many_evaluations_at_the_target(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "target.h5")
            result = run_scalebench(1, "train", *TINY, "--epochs", "6", "--target-accuracy", "0.05", "--patience", "2",
                                    "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(len(epoch_lines(result.stdout)), 2, result.stdout)
            self.assertIn("done: 2 epoch(s), test accuracy at or above 5.00% for 2 evaluations in a row "
                          "(--target-accuracy, --patience)", result.stdout)
            match = SUMMARY.search(result.stdout)
            self.assertIsNotNone(match, result.stdout)
            self.assertEqual(int(match["images"].replace(",", "")), 2 * 128)
            self.assertRegex(match["target"], r"^, 5\.00% reached after [\d.]+ s \([\d.]+ s from process start\)$")
            with h5py.File(out, "r") as f:
                attrs = f.attrs
                self.assertEqual(attrs["total_images"], 2 * 128)
                self.assertAlmostEqual(attrs["total_time_s"], float(match["total"]), places=3)
                self.assertAlmostEqual(100 * attrs["best_test_accuracy"], float(match["best"]), places=2)
                self.assertEqual(attrs["best_test_accuracy"], max(f["epochs"]["test_accuracy"]))
                # First reached at the first of the two evaluations: before the run's end.
                self.assertGreater(attrs["time_to_target_s"], 0)
                self.assertLess(attrs["time_to_target_s"], attrs["total_time_s"])
                # Its wall-clock twin counts from process start: the start-up comes on top.
                self.assertGreater(attrs["wall_to_target_s"], attrs["time_to_target_s"])
                self.assertAlmostEqual(attrs["overall_images_per_s"], 2 * 128 / sum(f["epochs"]["wall_time_max_s"]))
                self.assertGreater(attrs["overall_images_per_s"], 0)

    def test_no_improvement_stops_a_run_whose_accuracy_stands_still(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "flat.h5")
            # A learning rate this small leaves the test accuracy where it was.
            result = run_scalebench(1, "train", *TINY, "--epochs", "6", "--lr", "1e-12", "--stop-after-no-improvement", "1",
                                    "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIn("done: 2 epoch(s), no better test accuracy for 1 evaluation (--stop-after-no-improvement)",
                          result.stdout)
            match = SUMMARY.search(result.stdout)
            self.assertIsNotNone(match, result.stdout)
            self.assertEqual(match["target"], "")  # no target, no time to it
            with h5py.File(out, "r") as f:
                self.assertTrue(math.isnan(f.attrs["time_to_target_s"]))
                self.assertTrue(math.isnan(f.attrs["wall_to_target_s"]))
                self.assertEqual(f["epochs"].shape[0], 2)

    def test_patience_without_a_target_is_refused_naming_both_rules(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            result = run_scalebench(1, "train", *TINY, "--epochs", "2", "--patience", "3", "--out", out, timeout=300)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("--patience 3 counts evaluations at or above --target-accuracy", result.stderr + result.stdout)
            self.assertIn("--stop-after-no-improvement 3", result.stderr + result.stdout)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
