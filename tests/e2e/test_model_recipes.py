"""Per-model default recipes and gradient accumulation as the program takes them: `train --model mnist-cnn`
with no optimizer options trains and records the MNIST guide's recipe, a given option wins over it,
--help lists every model's recipe, and --accumulate-steps is recorded, counts every image once and is
refused out of bounds."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

MNIST_SHAPED = "synthetic:1x28x28:10:256:64"


def root_attribute(path, name):
    import h5py
    with h5py.File(path, "r") as f:
        return f.attrs[name]


class ModelRecipes(unittest.TestCase):
    def test_mnist_cnn_without_optimizer_options_records_the_mnist_guides_recipe(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "mnist.h5")
            result = run_scalebench(1, "train", "--model", "mnist-cnn", "--data", MNIST_SHAPED, "--epochs", "1",
                                    "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertEqual((config["optimizer"], config["lr"], config["scheduler"], config["step_size"], config["gamma"],
                              config["batch_size"], config["accumulate_steps"]),
                             ("adadelta", 1.0, "step", 1, 0.7, 64, 1))

    def test_a_given_option_wins_over_the_recipe(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "given.h5")
            result = run_scalebench(1, "train", "--model", "mnist-cnn", "--data", MNIST_SHAPED, "--epochs", "1",
                                    "--lr", "0.5", "--batch-size", "32", "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertEqual((config["optimizer"], config["lr"], config["batch_size"], config["gamma"]),
                             ("adadelta", 0.5, 32, 0.7))

    def test_help_lists_each_models_recipe_and_accumulation(self):
        result = subprocess.run([os.environ["SCALEBENCH"], "train", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("  mnist-cnn   --optimizer adadelta --lr 1.0 --scheduler step --step-size 1 --gamma 0.7 --batch-size 64\n",
                      result.stdout)
        self.assertIn("  wrn         --optimizer sgd --lr 0.01 --batch-size 256\n", result.stdout)
        for model in ("cifar-cnn", "mlp", "resnet18-cifar"):
            self.assertIn(f"\n  {model} ", result.stdout)
        lines = {l.split()[0]: l for l in result.stdout.splitlines() if l.startswith("  --")}
        self.assertIn("[1]", lines["--accumulate-steps"])


class GradientAccumulation(unittest.TestCase):
    def test_accumulation_is_recorded_and_counts_every_image_once(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "accumulated.h5")
            # 2 ranks x 128 samples in micro-batches of 16, 3 to a step: 8 micro-batches, steps of 3, 3 and 2.
            result = run_scalebench(2, "train", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64", "--epochs", "2",
                                    "--batch-size", "16", "--accumulate-steps", "3", "--log-interval", "1", "--out", out,
                                    timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(recorded_config(out)["accumulate_steps"], 3)
            self.assertEqual(root_attribute(out, "total_images"), 2 * 256)
            self.assertIn("epoch 1 step 3/3 ", result.stdout)
            self.assertNotIn("step 4/", result.stdout)

    def test_out_of_bounds_is_refused_naming_the_option(self):
        result = run_scalebench(1, "train", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16", "--accumulate-steps", "0",
                                timeout=120)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--accumulate-steps must be at least 1 (got 0)", result.stderr + result.stdout)


if __name__ == "__main__":
    unittest.main()
