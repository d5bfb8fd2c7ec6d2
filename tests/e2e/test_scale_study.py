"""`mpirun -np 4 scalebench scale --device cpu` on synthetic data writes a study whose table is
consistent; sweeps and repeats give one configuration each, and a swept value the CPU cannot run is
refused before any run."""
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
                self.assertTrue(math.isnan(row["wall_to_accuracy_s"]))
                group = f[f"configs/gpus_{row['gpus']}"]
                epochs = group["epochs"][:]
                self.assertEqual(len(epochs), 3)  # one warm-up epoch plus two measured
                measured = epochs[1:]
                # The study's figures are those of the measured epochs only.
                self.assertAlmostEqual(row["epoch_time_s"], measured["wall_time_max_s"].mean(), places=9)
                self.assertEqual(group["epoch_times_per_rank"].shape, (3, row["gpus"]))
                # Start-up per configuration: the first holds the study's own parts and the first step,
                # every one its engine's construction.
                first = row["gpus"] == study["gpus"][0]
                for attribute in ("startup_data_s", "startup_first_step_s", "startup_to_first_step_s"):
                    self.assertEqual(math.isfinite(group.attrs[attribute]), first, (row["gpus"], attribute))
                self.assertTrue(math.isfinite(group.attrs["startup_engine_other_s"]), row["gpus"])
            base = study[0]
            for row in study:
                if mode == "strong":
                    expected = base["epoch_time_s"] / row["epoch_time_s"]
                else:
                    expected = row["images_per_s"] / base["images_per_s"]
                self.assertAlmostEqual(row["speedup"], expected, places=9)

    def test_time_to_accuracy_and_its_wall_clock_twin(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "target.h5")
            result = run_scalebench(2, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64",
                                    "--epochs", "1", "--warmup-epochs", "0", "--batch-size", "16",
                                    "--target-accuracy", "0.01", "--out", out, timeout=600)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            with h5py.File(out, "r") as f:
                study = f["study"][:]
            self.assertEqual(list(study["gpus"]), [1, 2])
            for row in study:
                # Each configuration as if it had run alone: the study's shared start-up, then its own time
                # from its start, which holds its training and evaluation.
                self.assertGreater(row["time_to_accuracy_s"], 0)
                self.assertGreater(row["wall_to_accuracy_s"], row["time_to_accuracy_s"])

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

    def sweep(self, tmp, ranks, *sweep_args):
        out = os.path.join(tmp, f"sweep-np{ranks}.h5")
        result = run_scalebench(ranks, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64",
                                "--epochs", "2", "--warmup-epochs", "1", "--sample-steps", "0", *sweep_args,
                                "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return out

    def test_batch_size_sweep_on_one_and_two_ranks(self):
        with temp_dir() as tmp:
            for ranks in (1, 2):
                gpus = list(range(1, ranks + 1))
                out = self.sweep(tmp, ranks, "--sweep-batch-size", "32,64", "--sweep-precision", "fp32")
                with h5py.File(out, "r") as f:
                    self.assertEqual(f.attrs["schema_version"], 3)
                    self.assertEqual(f.attrs["complete"], 1)
                    study = f["study"][:]
                    attrs = f["study"].attrs
                    self.assertEqual(list(attrs["swept"]), ["batch_size", "precision"])
                    self.assertEqual(attrs["repeats"], 1)
                    # Batch size outermost, then the GPU counts: one row per configuration.
                    self.assertEqual(list(study["batch_size"]), [b for b in (32, 64) for _ in gpus])
                    self.assertEqual(list(study["gpus"]), gpus * 2)
                    self.assertEqual({attrs["precision_names"][p] for p in study["precision"]}, {"fp32"})
                    self.assertEqual(set(study["repeat"]), {1})
                    for row in study:
                        name = f"configs/gpus_{row['gpus']}_batch_size_{row['batch_size']}_precision_fp32"
                        self.assertEqual(json.loads(f[name].attrs["config_json"])["batch_size"], row["batch_size"])
                        self.assertEqual(len(f[name]["epochs"]), 3)
                        if row["gpus"] == 1:  # each batch size is its own baseline
                            self.assertEqual(row["speedup"], 1.0)
                        self.assertAlmostEqual(row["efficiency"], row["speedup"] / row["gpus"])
                    self.assertEqual(len(f["configs"]), 2 * ranks)

    def test_repeats_get_a_group_each(self):
        with temp_dir() as tmp:
            out = self.sweep(tmp, 2, "--gpus", "2", "--repeats", "2")
            with h5py.File(out, "r") as f:
                self.assertEqual(sorted(f["configs"]), ["gpus_2_repeat_1", "gpus_2_repeat_2"])
                self.assertEqual(list(f["study"]["repeat"]), [1, 2])
                self.assertEqual(list(f["study"].attrs["swept"]), [])

    def test_a_swept_value_the_cpu_cannot_run_is_refused_before_any_run(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            result = run_scalebench(2, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16",
                                    "--sweep-precision", "fp32,fp16", "--out", out, timeout=120)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn("--sweep-precision fp16 cannot run in this study", result.stderr)
            self.assertIn("--device cuda", result.stderr)
            self.assertNotIn("== scale:", result.stdout)
            self.assertFalse(os.path.exists(out))

    def test_bad_sweep_lists_are_refused_naming_the_option(self):
        for args, message in ((["--sweep-batch-size", "64,64"], "--sweep-batch-size lists 64 twice"),
                              (["--sweep-precision", "fp8"], "--sweep-precision expects one of fp32, tf32, fp16, bf16"),
                              (["--repeats", "0"], "--repeats expects an integer from 1")):
            result = run_scalebench(1, "scale", "--device", "cpu", "--model", "mlp", *args, timeout=120)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn(message, result.stderr)
        result = run_scalebench(1, "train", "--sweep-batch-size", "64,128", timeout=120)
        self.assertIn("unknown option '--sweep-batch-size' for 'scalebench train'", result.stderr)

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
