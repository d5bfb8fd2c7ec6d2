"""The optimizer options as the program takes them: a name in any case runs as its canonical name, the
results file records the weight decay applied (AdamW's default 1e-2), --help shows each optimizer's
default, and bad --optimizer, --beta1 or --beta2 values are refused before anything is written."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

TINY = ["--model", "mlp", "--data", "synthetic:1x8x8:4:64:16", "--batch-size", "16", "--epochs", "1"]


class OptimizerOptions(unittest.TestCase):
    def test_name_in_any_case_records_canonical_name_and_adamw_default_decay(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "adamw.h5")
            result = run_scalebench(1, "train", *TINY, "--optimizer", "AdamW", "--lr", "0.001", "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertEqual(config["optimizer"], "adamw")
            self.assertEqual(config["weight_decay"], 0.01)
            self.assertEqual((config["beta1"], config["beta2"]), (0.9, 0.999))

    def test_betas_are_taken_and_recorded(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "adam.h5")
            result = run_scalebench(1, "train", *TINY, "--optimizer", "adam", "--lr", "0.001", "--beta1", "0.8",
                                    "--beta2", "0.99", "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertEqual((config["beta1"], config["beta2"], config["weight_decay"]), (0.8, 0.99, 0.0))

    def test_help_shows_each_optimizers_default(self):
        result = subprocess.run([os.environ["SCALEBENCH"], "train", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = {l.split()[0]: l for l in result.stdout.splitlines() if l.startswith("  --")}
        self.assertIn("[default: 0, adamw: 0.01]", lines["--weight-decay"])
        self.assertIn("[default: 1e-08, adadelta: 1e-06]", lines["--eps"])
        self.assertIn("[0.9]", lines["--beta1"])
        self.assertIn("[0.999]", lines["--beta2"])
        self.assertIn("any case", lines["--optimizer"])

    def test_bad_values_are_refused_before_anything_is_written(self):
        cases = [(["--optimizer", "rmsprop"], "--optimizer expects one of sgd, adadelta, adam, adamw (any case), got 'rmsprop'"),
                 (["--optimizer", "adam", "--beta1", "1"], "--beta1 must lie in [0, 1) (got 1)"),
                 (["--optimizer", "adamw", "--beta2", "-0.5"], "--beta2 must lie in [0, 1) (got -0.5)")]
        for args, message in cases:
            with self.subTest(args=args), temp_dir() as tmp:
                out = os.path.join(tmp, "never.h5")
                result = run_scalebench(1, "train", *TINY, *args, "--out", out, timeout=300)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn(message, result.stderr)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
