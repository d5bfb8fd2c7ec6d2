"""The CUDA backend's tuning options as the program takes them on any machine: --autotune (also as
`--autotune off`, two words) and --plan-cache / --no-plan-cache parse, are recorded in the results file
where they say something about the run, and bad values are refused naming the option before anything is
written. The CUDA paths' A/B switches are no options (unknown, named as such), and no environment
variable chooses one (SCALEBENCH_DEV_* included): only a test chooses a path's twin, through the engine's
options (docs/kernels.md, "Paths kept for comparison")."""
import contextlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

TINY = ["--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16", "--batch-size", "16", "--epochs", "1"]
RETIRED = ("batchnorm-path", "fused-bn", "fused-residual-grad", "parallel-wgrad", "optimizer-overlap", "symmetric-memory")


@contextlib.contextmanager
def environment(name, value):
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


class CudaTuningOptions(unittest.TestCase):
    def test_defaults_are_recorded(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "defaults.h5")
            result = run_scalebench(1, "train", *TINY, "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertIs(config["autotune"], True)
            self.assertNotIn("plan_cache", config)  # where a node keeps its cache says nothing about the run
            for option in RETIRED:
                self.assertNotIn(option.replace("-", "_"), config)

    def test_values_in_every_spelling(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "set.h5")
            result = run_scalebench(1, "train", *TINY, "--autotune", "off", "--no-plan-cache", "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIs(recorded_config(out)["autotune"], False)
            out2 = os.path.join(tmp, "set2.h5")
            result = run_scalebench(1, "train", *TINY, "--autotune", "--plan-cache", tmp, "--out", out2, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIs(recorded_config(out2)["autotune"], True)

    def test_bad_values_are_refused_naming_the_option(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            for args, words in ((["--autotune=maybe"], ["--autotune", "'maybe'", "on or off"]),
                                (["--no-plan-cache=x"], ["--no-plan-cache", "takes no value"])):
                result = run_scalebench(1, "train", *TINY, *args, "--out", out, timeout=120)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                for word in words:
                    self.assertIn(word, result.stderr, args)
                self.assertFalse(os.path.exists(out))

    def test_the_ab_switches_are_no_options(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            for option in RETIRED:
                result = run_scalebench(1, "train", *TINY, "--" + option, "--out", out, timeout=120)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn("unknown option '--%s'" % option, result.stderr)
                self.assertFalse(os.path.exists(out))

    def test_a_switch_in_the_environment_is_no_option_of_the_run(self):
        with temp_dir() as tmp, environment("SCALEBENCH_DEV_PARALLEL_WGRAD", "off"):
            out = os.path.join(tmp, "switched.h5")
            result = run_scalebench(1, "train", *TINY, "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            config = recorded_config(out)
            self.assertNotIn("parallel_wgrad", config)
            self.assertIs(config["autotune"], True)

    def test_a_switch_in_the_environment_is_not_read(self):
        with temp_dir() as tmp, environment("SCALEBENCH_DEV_FUSED_BN", "maybe"):
            out = os.path.join(tmp, "read.h5")
            result = run_scalebench(1, "train", *TINY, "--out", out, timeout=300)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertNotIn("SCALEBENCH_DEV_FUSED_BN", result.stdout + result.stderr)
            self.assertTrue(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(verbosity=2)
