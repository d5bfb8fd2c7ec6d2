"""`mpirun -np N scalebench comm --device cpu` sweeps MPI all-reduces, checks them and writes a consistent
/comm table."""
import json
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

MNIST_CNN_PARAMETERS = 1_199_882
POWERS_OF_TWO = [1 << k for k in range(10, 21)]  # 1K .. 1M


class CommSweep(unittest.TestCase):
    def run_sweep(self, tmp, np):
        out = os.path.join(tmp, f"comm-np{np}.h5")
        result = run_scalebench(np, "comm", "--device", "cpu", "--min-bytes", "1K", "--max-bytes", "1M",
                                "--comm-model", "mnist-cnn", "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return out, result.stdout

    def check_stdout(self, stdout):
        self.assertIn("busbw(GB/s)", stdout)
        self.assertIn("#wrong", stdout)
        # The default dtypes are fp32,bf16; MPI has no bf16 sum, and the output says so.
        self.assertIn("bf16 skipped", stdout)
        self.assertIn("--device cuda", stdout)
        self.assertIn("mnist-cnn gradients", stdout)
        rows = [line.split() for line in stdout.splitlines() if line.strip() and not line.startswith("#")]
        self.assertEqual([int(r[0]) for r in rows], POWERS_OF_TWO + [4 * MNIST_CNN_PARAMETERS])
        self.assertTrue(all(r[6] == "0" for r in rows), stdout)

    def check_file(self, path, np):
        factor = 2.0 * (np - 1) / np
        with h5py.File(path, "r") as f:
            self.assertEqual(f.attrs["schema_version"], 2)
            self.assertEqual(f.attrs["complete"], 1)
            self.assertNotEqual(f.attrs["end_time"], "")
            self.assertEqual(f.attrs["world_size"], np)
            self.assertEqual(len(f.attrs["hosts"]), np)
            self.assertEqual(list(f.attrs["gpu_models"]), ["cpu"] * np)
            # The linked NCCL's version in a CUDA build, "n/a" without the CUDA backend.
            self.assertRegex(f.attrs["nccl_version"], r"^(n/a|\d+\.\d+\.\d+)$")
            self.assertIn("comm", f.attrs["command_line"])
            config = json.loads(f.attrs["config_json"])
            self.assertEqual(config["command"], "comm")
            self.assertEqual(config["device"], "cpu")
            self.assertEqual((config["min_bytes"], config["max_bytes"]), (1024, 1 << 20))
            self.assertEqual(config["comm_model"], "mnist-cnn")
            self.assertEqual(config["model_elements"], MNIST_CNN_PARAMETERS)
            self.assertEqual(config["dtypes_run"], ["fp32"])
            self.assertNotIn("epochs", f)  # a comm file holds no training tables

            table = f["comm"]
            attrs = table.attrs
            self.assertEqual(attrs["backend"], "mpi")
            self.assertEqual(attrs["op"], "sum")
            self.assertEqual(attrs["ranks"], np)
            self.assertEqual(attrs["iterations"], config["iterations"])
            self.assertEqual(list(attrs["skipped_dtypes"]), ["bf16"])
            self.assertEqual(attrs["model"], "mnist-cnn")
            self.assertEqual(attrs["model_elements"], MNIST_CNN_PARAMETERS)
            names = list(attrs["dtype_names"])
            self.assertEqual(len(attrs["units"]), len(table.dtype.names))

            rows = table[:]
            self.assertEqual(list(rows["bytes"]), POWERS_OF_TWO + [4 * MNIST_CNN_PARAMETERS])
            self.assertEqual(list(rows["is_model_size"]), [0] * len(POWERS_OF_TWO) + [1])
            self.assertEqual({names[code] for code in rows["dtype"]}, {"fp32"})
            self.assertEqual(list(rows["count"]), [b // 4 for b in rows["bytes"]])
            self.assertEqual(list(rows["wrong"]), [0] * len(rows))
            for row in rows:
                self.assertGreater(row["time_us_min_rank"], 0.0)
                self.assertLessEqual(row["time_us_min_rank"], row["time_us_mean"] * (1 + 1e-12))
                self.assertLessEqual(row["time_us_mean"], row["time_us_max_rank"] * (1 + 1e-12))
                # nccl-tests: algbw from the slowest rank's time; busbw = algbw * 2(n-1)/n.
                self.assertAlmostEqual(row["algbw_gbps"], row["bytes"] / (row["time_us_max_rank"] * 1e-6) / 1e9,
                                       delta=1e-9 * row["algbw_gbps"])
                self.assertAlmostEqual(row["busbw_gbps"], row["algbw_gbps"] * factor, delta=1e-9 * row["algbw_gbps"])

    def test_sweep_on_2_and_4_ranks(self):
        with temp_dir() as tmp:
            for np in (2, 4):
                with self.subTest(np=np):
                    path, stdout = self.run_sweep(tmp, np)
                    self.check_stdout(stdout)
                    self.check_file(path, np)
                    # No working or staging copies are left beside the finished file.
                    self.assertEqual(sorted(os.listdir(tmp)), sorted(f"comm-np{k}.h5" for k in (2, 4) if k <= np))

    def test_bad_input_is_refused_before_any_file(self):
        cases = [
            (["--dtypes", "bf16,fp16"], "--device cuda"),
            (["--dtypes", "fp8"], "--dtypes"),
            (["--min-bytes", "4K", "--max-bytes", "1K"], "--max-bytes"),
            (["--iterations", "0"], "--iterations"),
            (["--comm-model", "alexnet"], "alexnet"),
        ]
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            for extra, needle in cases:
                with self.subTest(args=extra):
                    result = run_scalebench(2, "comm", "--device", "cpu", *extra, "--out", out, timeout=120)
                    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                    self.assertIn(needle, result.stderr)
                    self.assertEqual(result.stderr.count("scalebench: error:"), 1, result.stderr)
                    self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
