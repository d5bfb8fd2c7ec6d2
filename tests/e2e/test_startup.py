"""The start of a run as a user waits for it: rank 0 prints one `startup:` line, the results file holds each
start-up part (`startup_<part>_s`) and the wall-clock time to the target from process start
(`wall_to_target_s`), and a file-backed data set is decoded once, then read from the decoded-data cache in
the plan cache's folder; a damaged cache file is ignored with a warning, --no-plan-cache writes none."""
import glob
import gzip
import math
import os
import re
import struct
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

# Parts timed on every engine (warm_up with --untimed-init, which these runs ask for: on the CPU it is off by
# default), and those only the CUDA engine has (NaN on --device cpu).
CPU_PARTS = ["launch", "mpi", "setup", "data", "network", "engine_other", "warm_up", "first_step", "other"]
CUDA_PARTS = ["cuda_context", "nccl", "upload", "peak_gemm", "graph_capture"]
STARTUP = re.compile(r"^startup: (?P<total>[\d.]+) s from process start to the end of the first step "
                     r"\(slowest rank per part\): (?P<parts>.*)$", re.MULTILINE)


def write_idx_dir(folder, n_train, n_test):
    """Fashion-MNIST's four files (gzip) with n_train and n_test 28x28 images of an easy pattern."""
    def images(n, salt):
        return struct.pack(">IIII", 0x803, n, 28, 28) + bytes((i * 31 + salt * 7 + (i // 784) * 13) % 256
                                                            for i in range(n * 784))

    def labels(n):
        return struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n))

    for name, data in (("train-images-idx3-ubyte", images(n_train, 1)), ("train-labels-idx1-ubyte", labels(n_train)),
                       ("t10k-images-idx3-ubyte", images(n_test, 2)), ("t10k-labels-idx1-ubyte", labels(n_test))):
        with gzip.open(os.path.join(folder, name + ".gz"), "wb") as handle:
            handle.write(data)


class Startup(unittest.TestCase):
    def train(self, data_dir, out, *extra):
        result = run_scalebench(2, "train", "--model", "mlp", "--data", "fashion-mnist:" + data_dir, "--epochs", "1",
                                "--batch-size", "32", "--target-accuracy", "0.01", "--untimed-init", "--out", out, *extra,
                                timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result

    def test_startup_parts_wall_time_and_the_data_cache(self):
        with temp_dir() as tmp:
            data_dir, cache = os.path.join(tmp, "data"), os.path.join(tmp, "cache")
            os.makedirs(data_dir)
            write_idx_dir(data_dir, 256, 64)
            first = self.train(data_dir, os.path.join(tmp, "1.h5"), "--plan-cache", cache)
            lines = STARTUP.findall(first.stdout)
            self.assertEqual(len(lines), 1, first.stdout)  # rank 0 alone
            match = STARTUP.search(first.stdout)
            printed = dict(re.findall(r"(\w+) ([\d.]+) s", match["parts"]))
            self.assertEqual(list(printed), CPU_PARTS, match["parts"])  # the list's order; CUDA parts left out
            self.assertRegex(first.stdout, r"1\.00% reached after [\d.]+ s \([\d.]+ s from process start\)")
            cached = glob.glob(os.path.join(cache, "data-fashion-mnist-*.sbdata"))
            self.assertEqual(len(cached), 1, os.listdir(cache))

            with h5py.File(os.path.join(tmp, "1.h5"), "r") as f:
                attrs = f.attrs
                for part in CPU_PARTS:
                    self.assertAlmostEqual(attrs[f"startup_{part}_s"], float(printed[part]), delta=0.0006)
                for part in CUDA_PARTS:
                    self.assertTrue(math.isnan(attrs[f"startup_{part}_s"]), part)
                self.assertGreaterEqual(attrs["startup_data_s"], 0)
                self.assertAlmostEqual(attrs["startup_to_first_step_s"], float(match["total"]), delta=0.0006)
                # The parts before the first step add up to it (the remainder, `other`, sees to that);
                # each is its slowest rank's, so their sum is at least the slowest rank's total.
                self.assertGreaterEqual(sum(attrs[f"startup_{p}_s"] for p in CPU_PARTS) + 1e-6,
                                        attrs["startup_to_first_step_s"])
                # From process start the target came later than after the training and evaluation alone.
                self.assertGreater(attrs["wall_to_target_s"], attrs["time_to_target_s"])
                self.assertGreater(attrs["wall_to_target_s"], attrs["startup_to_first_step_s"])
                first_epochs = f["epochs"][:]

            # The second run reads the cache: the same tensors, so the same training.
            second = self.train(data_dir, os.path.join(tmp, "2.h5"), "--plan-cache", cache)
            self.assertNotIn("data cache", second.stdout + second.stderr)
            with h5py.File(os.path.join(tmp, "2.h5"), "r") as f:
                self.assertEqual(list(f["epochs"]["train_loss"]), list(first_epochs["train_loss"]))
                self.assertEqual(list(f["epochs"]["test_accuracy"]), list(first_epochs["test_accuracy"]))

            # A damaged cache file is never trusted: one warning from each rank that read it (a rank that
            # reads after another has written it afresh finds a whole file), the files decoded again.
            with open(cached[0], "r+b") as handle:
                handle.seek(-10, os.SEEK_END)
                handle.write(b"\xff\x00\xff")
            third = self.train(data_dir, os.path.join(tmp, "3.h5"), "--plan-cache", cache)
            warnings = (third.stdout + third.stderr).count("warning: data cache ignores " + cached[0])
            self.assertIn(warnings, (1, 2), third.stdout + third.stderr)
            with h5py.File(os.path.join(tmp, "3.h5"), "r") as f:
                self.assertEqual(list(f["epochs"]["train_loss"]), list(first_epochs["train_loss"]))
            fourth = self.train(data_dir, os.path.join(tmp, "4.h5"), "--plan-cache", cache)
            self.assertNotIn("data cache", fourth.stdout + fourth.stderr)

    def test_no_plan_cache_keeps_no_decoded_data(self):
        with temp_dir() as tmp:
            data_dir, xdg = os.path.join(tmp, "data"), os.path.join(tmp, "xdg")
            os.makedirs(data_dir)
            write_idx_dir(data_dir, 64, 16)
            old = os.environ.get("XDG_CACHE_HOME")
            os.environ["XDG_CACHE_HOME"] = xdg
            try:
                self.train(data_dir, os.path.join(tmp, "off.h5"), "--no-plan-cache")
                self.assertFalse(os.path.exists(xdg))
                self.train(data_dir, os.path.join(tmp, "on.h5"))  # the default folder, $XDG_CACHE_HOME/scalebench
                self.assertEqual(len(glob.glob(os.path.join(xdg, "scalebench", "data-fashion-mnist-*.sbdata"))), 1)
            finally:
                if old is None:
                    del os.environ["XDG_CACHE_HOME"]
                else:
                    os.environ["XDG_CACHE_HOME"] = old


if __name__ == "__main__":
    unittest.main()
