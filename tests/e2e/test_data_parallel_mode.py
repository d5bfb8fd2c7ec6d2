"""`scalebench train --parallel dp` on the CPU: one rank drives CPU replicas as nn.DataParallel drives GPUs.
It records the mode, trains as one process with the whole batch does (mlp has no dropout or batch norm, so
the losses agree to the rounding of the summed gradients), and is refused on several ranks or without dp."""
import json
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

def recorded_config_of(group):
    value = group.attrs["config_json"]
    return json.loads(value.decode() if isinstance(value, bytes) else value)


COMMON = ["train", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x16x16:10:480:96", "--epochs", "2",
          "--lr", "0.05"]


class DataParallelMode(unittest.TestCase):
    def train(self, tmp, name, *args, np=1):
        out = os.path.join(tmp, name + ".h5")
        result = run_scalebench(np, *COMMON, "--out", out, *args, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        with h5py.File(out, "r") as f:
            return out, f["epochs"][:]

    def test_three_cpu_replicas_train_as_one_process_with_the_whole_batch(self):
        with temp_dir() as tmp:
            dp_out, dp = self.train(tmp, "dp", "--parallel", "dp", "--replicas", "3", "--batch-size", "8")
            _, one = self.train(tmp, "one", "--batch-size", "24")
            config = recorded_config(dp_out)
            self.assertEqual(config["parallel"], "dp")
            self.assertEqual(config["replicas"], 3)
            self.assertEqual(len(dp), 2)
            for got, want in zip(dp, one):
                self.assertAlmostEqual(got["train_loss"], want["train_loss"], delta=1e-5 * abs(want["train_loss"]))
                self.assertAlmostEqual(got["test_accuracy"], want["test_accuracy"], delta=1.5 / 96)
            # Its communication (broadcast, scatter, gather, reduce) is timed as such.
            self.assertTrue((dp["comm_s"] > 0).all())

    def test_a_study_puts_dataparallel_beside_ddp(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "study.h5")
            result = run_scalebench(2, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x16x16:10:960:96",
                                    "--epochs", "1", "--settle-epochs", "1", "--batch-size", "16", "--parallel", "dp,ddp",
                                    "--out", out, timeout=600)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["complete"], 1)
                study = f["study"][:]
                self.assertEqual(list(study["gpus"]), [1, 2, 1, 2])
                names = [n.decode() if isinstance(n, bytes) else n for n in f["study"].attrs["parallel_names"]]
                self.assertEqual([names[i] for i in study["parallel"]], ["dp", "dp", "ddp", "ddp"])  # dp rows first
                self.assertEqual(list(f["study"].attrs["swept"]), ["parallel"])
                self.assertEqual(sorted(f["configs"]), ["gpus_1_parallel_ddp", "gpus_1_parallel_dp", "gpus_2_parallel_ddp",
                                                        "gpus_2_parallel_dp"])
                self.assertEqual(f["configs/gpus_2_parallel_dp/epoch_times_per_rank"].shape, (2, 1))  # one process
                self.assertEqual(f["configs/gpus_2_parallel_ddp/epoch_times_per_rank"].shape, (2, 2))
                self.assertEqual(recorded_config_of(f["configs/gpus_2_parallel_dp"])["replicas"], 2)
                self.assertEqual(recorded_config_of(f["configs/gpus_2_parallel_ddp"])["parallel"], "ddp")
                # Each mode's speedup is against its own one-GPU configuration.
                self.assertEqual(study["speedup"][0], 1.0)
                self.assertEqual(study["speedup"][2], 1.0)

    def test_refusals_name_the_option_and_the_way_out(self):
        result = run_scalebench(2, *COMMON, "--parallel", "dp", "--replicas", "2")
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--parallel dp runs in one process", result.stderr)
        self.assertIn("mpirun -n 1", result.stderr)
        result = run_scalebench(1, *COMMON, "--replicas", "2")
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--replicas 2 needs --parallel dp", result.stderr)


if __name__ == "__main__":
    unittest.main()
