"""`mpirun -np 4 scalebench scale --device cpu` on synthetic data writes a study whose table is
consistent."""
import json
import math
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402


class ScaleStudy(unittest.TestCase):
    def run_study(self, tmp, mode, batch):
        out = os.path.join(tmp, f"study-{mode}.h5")
        result = run_scalebench(4, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x16x16:10:2048:256",
                                "--epochs", "2", "--warmup-epochs", "1", "--scaling", mode, "--batch-size", str(batch),
                                "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return out, result.stdout

    def check_study(self, path, mode):
        with h5py.File(path, "r") as f:
            self.assertEqual(f.attrs["complete"], 1)
            study = f["study"][:]
            self.assertEqual(f["study"].attrs["mode"], mode)
            self.assertEqual(list(study["gpus"]), [1, 2, 4])
            self.assertEqual(study["speedup"][0], 1.0)
            self.assertEqual(study["efficiency"][0], 1.0)
            for row in study:
                self.assertGreater(row["efficiency"], 0.0)
                self.assertLessEqual(row["efficiency"], 1.2)
                self.assertAlmostEqual(row["efficiency"], row["speedup"] / row["gpus"])
                self.assertGreaterEqual(row["exposed_comm_fraction"], 0.0)
                self.assertLessEqual(row["exposed_comm_fraction"], 1.0)
                self.assertTrue(math.isnan(row["time_to_accuracy_s"]))
                group = f[f"configs/gpus_{row['gpus']}"]
                epochs = group["epochs"][:]
                self.assertEqual(len(epochs), 3)  # one warm-up epoch plus two measured
                measured = epochs[1:]
                # The study's figures are those of the measured epochs only.
                self.assertAlmostEqual(row["epoch_time_s"], measured["wall_time_max_s"].mean(), places=9)
                self.assertEqual(group["epoch_times_per_rank"].shape, (3, row["gpus"]))
            base = study[0]
            for row in study:
                if mode == "strong":
                    expected = base["epoch_time_s"] / row["epoch_time_s"]
                else:
                    expected = row["images_per_s"] / base["images_per_s"]
                self.assertAlmostEqual(row["speedup"], expected, places=9)

    def test_weak_and_strong_studies(self):
        with temp_dir() as tmp:
            weak, stdout = self.run_study(tmp, "weak", 32)
            self.assertIn("efficiency", stdout)
            self.check_study(weak, "weak")
            strong, _ = self.run_study(tmp, "strong", 64)
            self.check_study(strong, "strong")
            with h5py.File(strong, "r") as f:
                # Strong scaling splits the global batch: 64 on 1 rank, 16 per rank on 4.
                config = json.loads(f.attrs["config_json"])
                self.assertEqual(config["batch_size"], 64)
                self.assertEqual(config["scaling"], "strong")

    def test_more_gpus_than_ranks_is_refused(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            result = run_scalebench(2, "scale", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16", "--gpus", "1,4",
                                    "--out", out, timeout=120)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("--gpus lists 4", result.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
