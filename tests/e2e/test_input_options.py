"""--input, --workers and --pin-memory as the program takes them: --help describes them, the results file
records them, and on --device cpu, where every batch is built on the host, --input host trains exactly
as --input device; bad values are refused naming the option."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

TINY = ["--model", "mlp", "--data", "synthetic:3x8x8:4:96:32", "--batch-size", "16", "--epochs", "2", "--augment",
        "--device", "cpu"]


def epoch_losses(path):
    import h5py
    with h5py.File(path, "r") as f:
        rows = f["epochs"][:]
    return list(rows["train_loss"]), list(rows["test_loss"])


class InputOptions(unittest.TestCase):
    def test_help_describes_the_options(self):
        result = subprocess.run([os.environ["SCALEBENCH"], "train", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        text = result.stdout
        self.assertIn("--input WHERE", text)
        self.assertIn("--workers N", text)
        self.assertIn("--pin-memory, --no-pin-memory", text)

    def test_host_input_on_the_cpu_trains_as_device_input_and_is_recorded(self):
        with temp_dir() as tmp:
            device, host = os.path.join(tmp, "device.h5"), os.path.join(tmp, "host.h5")
            result = run_scalebench(2, "train", *TINY, "--out", device, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            result = run_scalebench(2, "train", *TINY, "--input", "host", "--workers", "2", "--no-pin-memory", "--out", host,
                                    timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(epoch_losses(host), epoch_losses(device))
            config = recorded_config(host)
            self.assertEqual((config["input"], config["workers"], config["pin_memory"]), ("host", 2, False))

    def test_bad_values_are_refused_naming_the_option(self):
        cases = [(["--input", "disk"], "--input expects one of device, host (any case), got 'disk'"),
                 (["--workers", "-2"], "--workers must lie in [0, 1024] (got -2); 0 takes the cores the launcher gives"),
                 (["--pin-memory=maybe"], "--pin-memory expects on or off, got 'maybe'")]
        for args, message in cases:
            with self.subTest(args=args):
                result = run_scalebench(1, "train", *TINY, *args, timeout=120)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn(message, result.stderr)


if __name__ == "__main__":
    unittest.main()
