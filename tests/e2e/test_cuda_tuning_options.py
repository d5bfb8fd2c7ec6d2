"""The CUDA backend's tuning options as the program takes them on any machine: --batchnorm-path,
--fused-bn, --fused-residual-grad, --parallel-wgrad, --autotune (also as `--autotune off`, two words) and --plan-cache /
--no-plan-cache parse,
are recorded in the results file where they say something about the run, and bad values are refused
naming the option before anything is written."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

TINY = ["--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16", "--batch-size", "16", "--epochs", "1"]


class CudaTuningOptions(unittest.TestCase):
    def test_defaults_are_recorded(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "defaults.h5")
            result = run_scalebench(1, "train", *TINY, "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertEqual((config["batchnorm_path"], config["fused_bn"], config["autotune"]), ("auto", True, True))
            self.assertIs(config["parallel_wgrad"], True)
            self.assertIs(config["fused_residual_grad"], True)
            self.assertNotIn("plan_cache", config)  # where a node keeps its cache says nothing about the run

    def test_values_in_every_spelling(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "set.h5")
            result = run_scalebench(1, "train", *TINY, "--batchnorm-path", "legacy", "--no-fused-bn", "--autotune", "off",
                                    "--parallel-wgrad", "off", "--no-fused-residual-grad", "--no-plan-cache", "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertEqual((config["batchnorm_path"], config["fused_bn"], config["autotune"]), ("legacy", False, False))
            self.assertIs(config["parallel_wgrad"], False)
            self.assertIs(config["fused_residual_grad"], False)
            out2 = os.path.join(tmp, "set2.h5")
            result = run_scalebench(1, "train", *TINY, "--fused-bn=off", "--autotune", "--plan-cache", tmp,
                                    "--out", out2, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out2)
            self.assertEqual((config["fused_bn"], config["autotune"]), (False, True))

    def test_bad_values_are_refused_naming_the_option(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            for args, words in ((["--batchnorm-path", "cudnn"], ["--batchnorm-path", "'cudnn'", "auto, graph, pointwise, legacy"]),
                                (["--autotune=maybe"], ["--autotune", "'maybe'", "on or off"]),
                                (["--parallel-wgrad=both"], ["--parallel-wgrad", "'both'", "on or off"]),
                                (["--no-plan-cache=x"], ["--no-plan-cache", "takes no value"])):
                result = run_scalebench(1, "train", *TINY, *args, "--out", out, timeout=120)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                for word in words:
                    self.assertIn(word, result.stderr, args)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(verbosity=2)
