"""2-rank CPU training of mnist-cnn on Fashion-MNIST reaches >= 80% test accuracy, and its HDF5 file
holds what the run printed."""
import json
import math
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"


@unittest.skipUnless(os.path.isdir(FASHION), "Debian's dataset-fashion-mnist is not installed")
class TrainFashionMnist(unittest.TestCase):
    def test_two_ranks_reach_80_percent_and_record_everything(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "run.h5")
            # The MNIST guide's recipe (Adadelta lr 1.0, StepLR gamma 0.7) with its global batch of 64.
            result = run_scalebench(2, "train", "--model", "mnist-cnn", "--data", "fashion-mnist",
                                    "--train-limit", "6000", "--epochs", "2", "--batch-size", "64",
                                    "--scaling", "strong", "--optimizer", "adadelta", "--lr", "1.0",
                                    "--scheduler", "step", "--gamma", "0.7", "--out", out)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            epoch_lines = [l for l in result.stdout.splitlines() if l.startswith("epoch")]
            self.assertEqual(len(epoch_lines), 2, result.stdout)

            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["schema_version"], 3)
                self.assertEqual(f.attrs["world_size"], 2)
                self.assertEqual(f.attrs["complete"], 1)
                self.assertEqual(list(f.attrs["gpu_models"]), ["cpu", "cpu"])
                config = json.loads(f.attrs["config_json"])
                self.assertEqual(config["model"], "mnist-cnn")
                self.assertEqual(config["train_limit"], 6000)
                epochs = f["epochs"][:]
                self.assertEqual(len(epochs), 2)
                self.assertEqual(list(epochs["epoch"]), [1, 2])
                final = epochs[-1]
                self.assertGreaterEqual(final["test_accuracy"], 0.80)
                self.assertLess(epochs[1]["train_loss"], epochs[0]["train_loss"])
                # StepLR(step_size 1, gamma 0.7): the second epoch trains at 0.7.
                self.assertAlmostEqual(epochs[0]["learning_rate"], 1.0)
                self.assertAlmostEqual(epochs[1]["learning_rate"], 0.7)
                for row in epochs:
                    self.assertLessEqual(row["wall_time_min_s"], row["wall_time_mean_s"])
                    self.assertLessEqual(row["wall_time_mean_s"], row["wall_time_max_s"])
                    # 6000 samples per epoch at the slowest rank's pace.
                    self.assertAlmostEqual(row["images_per_s"] * row["wall_time_max_s"], 6000, delta=1)
                    phases = [row[p] for p in ("data_s", "forward_s", "backward_s", "backward_overlap_s", "comm_s", "optimizer_s")]
                    # Each phase's slowest rank fits in the epoch, and the phases account for the epoch.
                    for seconds in phases:
                        self.assertLessEqual(seconds, row["wall_time_max_s"])
                    self.assertGreater(sum(phases), 0.8 * row["wall_time_min_s"])
                    self.assertTrue(math.isnan(row["energy_j"]))
                per_rank = f["epoch_times_per_rank"][:]
                self.assertEqual(per_rank.shape, (2, 2))
                for e in range(2):
                    self.assertAlmostEqual(per_rank[e].max(), epochs[e]["wall_time_max_s"])
                    self.assertAlmostEqual(per_rank[e].min(), epochs[e]["wall_time_min_s"])
                self.assertEqual(f["steps"].shape[0], 2)
                self.assertEqual(f["steps"].shape[2], 6)
                # The printed accuracy is the stored one.
                self.assertIn(f"{100 * final['test_accuracy']:.2f}%", epoch_lines[-1])


if __name__ == "__main__":
    unittest.main()
