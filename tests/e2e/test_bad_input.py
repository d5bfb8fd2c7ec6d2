"""Bad input gets one sentence from rank 0 naming the problem, a non-zero exit, and no results file."""
import gzip
import os
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, scalebench_command, temp_dir  # noqa: E402


def write_idx(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    with gzip.open(path, "wb") as f:
        f.write(header + payload)


def write_mnist_dir(directory, n=40, label_override=None, image_magic=0x803, truncate=False):
    os.makedirs(directory, exist_ok=True)
    pixels = bytes((i * 37) % 256 for i in range(n * 28 * 28))
    labels = bytes(i % 10 for i in range(n))
    if label_override is not None:
        labels = labels[:-1] + bytes([label_override])
    for split in ("train", "t10k"):
        images = pixels[: len(pixels) // 2] if truncate and split == "train" else pixels
        write_idx(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"), image_magic, (n, 28, 28), images)
        write_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"), 0x801, (n,), labels)


class BadInput(unittest.TestCase):
    def assert_refused(self, args, *expected_words, np=2):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            full = [a.replace("{tmp}", tmp) for a in args]
            if "--out" not in full:
                full += ["--out", out]
            self.prepare(tmp)
            result = run_scalebench(np, "train", *full, timeout=300)
            self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
            errors = [l for l in result.stderr.splitlines() if l.startswith("scalebench: error:")]
            self.assertEqual(len(errors), 1, "expected one error sentence from rank 0:\n" + result.stderr)
            for word in expected_words:
                self.assertIn(word.replace("{tmp}", tmp), errors[0])
            self.assertNotIn("Traceback", result.stderr)
            self.assertFalse(os.path.exists(out), "no results file may be left behind")
            self.assertFalse(any(name.endswith(".h5") for name in os.listdir(tmp)), os.listdir(tmp))
            return errors[0]

    def prepare(self, tmp):
        write_mnist_dir(os.path.join(tmp, "good"))
        write_mnist_dir(os.path.join(tmp, "truncated"), truncate=True)
        write_mnist_dir(os.path.join(tmp, "magic"), image_magic=0x1234)
        write_mnist_dir(os.path.join(tmp, "labels"), label_override=42)
        os.makedirs(os.path.join(tmp, "empty"), exist_ok=True)

    base = ["--model", "mnist-cnn", "--epochs", "1"]

    def test_missing_dataset_directory(self):
        self.assert_refused(self.base + ["--data", "fashion-mnist:/nonexistent/fmnist"], "/nonexistent/fmnist")

    def test_missing_dataset_files(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/empty"], "{tmp}/empty", "train-images")

    def test_truncated_file(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/truncated"], "train-images-idx3-ubyte.gz", "truncated")

    def test_wrong_magic_number(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/magic"], "train-images-idx3-ubyte.gz", "magic")

    def test_label_out_of_range(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/labels"], "labels-idx1-ubyte.gz", "42")

    def test_unwritable_output(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--out", "/nonexistent-dir/run.h5"],
                            "/nonexistent-dir/run.h5")

    def test_unknown_model(self):
        self.assert_refused(["--model", "alexnet", "--data", "mnist:{tmp}/good"], "alexnet", "mnist-cnn")

    def test_unknown_option(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--learning-rate", "0.1"], "--learning-rate")

    def test_bad_number(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--epochs", "three"], "--epochs", "three")

    def test_batch_that_does_not_divide(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--scaling", "strong", "--batch-size", "7"],
                            "--batch-size 7", "2 ranks")

    def test_more_ranks_than_samples(self):
        self.assert_refused(["--model", "mlp", "--data", "synthetic:1x8x8:4:1:10"], "1 samples", "2 ranks")

    def test_cuda_without_backend_or_gpu(self):
        message = self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--device", "cuda"], "--device cuda")
        self.assertTrue("CUDA" in message, message)

    def test_resume_of_a_directory(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--resume", "{tmp}/empty"], "--resume {tmp}/empty",
                            "is a directory", "checkpoint file")

    def test_former_spelling_of_untimed_init(self):
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--warm-up"], "--warm-up", "--untimed-init")
        self.assert_refused(self.base + ["--data", "mnist:{tmp}/good", "--no-warm-up"], "--no-warm-up", "--no-untimed-init")


class OneProcessErrors(unittest.TestCase):
    """A one-process job that fails says its sentence once, with no rank named twice and no MPI_Abort banner
    after it: it finalizes MPI and exits with the error's code."""

    def assert_one_clean_sentence(self, result, code, *words):
        self.assertEqual(result.returncode, code, result.stdout + result.stderr)
        errors = [l for l in result.stderr.splitlines() if l.startswith("scalebench: error")]
        self.assertEqual(len(errors), 1, result.stderr)
        for word in words:
            self.assertIn(word, errors[0])
        self.assertEqual(errors[0].count("rank "), 0, errors[0])
        for noise in ("MPI_ABORT", "ORTE_ERROR_LOG", "exiting improperly"):
            self.assertNotIn(noise, result.stderr)

    def test_bad_option_under_mpirun_and_alone(self):
        args = ["train", "--device", "cpu", "--model", "nosuch"]
        self.assert_one_clean_sentence(run_scalebench(1, *args, timeout=120), 2, "nosuch")
        alone = subprocess.run([os.environ["SCALEBENCH"], *args], capture_output=True, text=True, timeout=120)
        self.assert_one_clean_sentence(alone, 2, "nosuch")

    def test_error_mid_training_under_mpirun_and_alone(self):
        args = ["train", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64", "--epochs", "1"]
        env = dict(os.environ, SCALEBENCH_FAULT="0:step")
        with temp_dir() as tmp:
            for command in (scalebench_command(1, *args), [os.environ["SCALEBENCH"], *args]):
                if command[0] != os.environ["SCALEBENCH"]:
                    command = command[:1] + ["-x", "SCALEBENCH_FAULT"] + command[1:]
                result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
                self.assert_one_clean_sentence(result, 3, "second training step")


if __name__ == "__main__":
    unittest.main()
