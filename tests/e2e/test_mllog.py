"""`scalebench train --mllog FILE` writes a log that passes MLPerf Training's common rules (mllog_checker.py),
from rank 0 only; the checker itself refuses broken logs; an existing log is never written over."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402
import mllog_checker  # noqa: E402

EPOCHS = 2
BASE = ["train", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x28x28:10:512:128", "--epochs", str(EPOCHS),
        "--batch-size", "32", "--optimizer", "adam", "--lr", "0.001"]


class MlLog(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = temp_dir()
        cls.path = os.path.join(cls.tmp.name, "run.mllog")
        cls.result = run_scalebench(2, *BASE, "--mllog", cls.path, timeout=300)
        with open(cls.path) as f:
            cls.lines = f.read().splitlines()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_log_passes_the_checker(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        self.assertEqual(mllog_checker.check(self.lines), [])

    def test_keys_values_and_order(self):
        records = mllog_checker.parse(self.lines)
        self.assertEqual(len(records), len(self.lines))  # nothing but :::MLLOG lines: one writer, rank 0
        keys = [r["key"] for r in records]
        value = {r["key"]: r["value"] for r in records}
        self.assertEqual(keys[:7], ["submission_benchmark", "submission_division", "submission_org", "submission_platform",
                                    "submission_status", "cache_clear", "init_start"])
        self.assertEqual(value["submission_benchmark"], "mlp")
        self.assertEqual(value["submission_platform"], "2xcpu")
        self.assertEqual(value["global_batch_size"], 64)  # 32 per rank, weak scaling
        self.assertEqual(value["train_samples"], 512)
        self.assertEqual(value["eval_samples"], 128)
        self.assertEqual(value["opt_name"], "adam")
        self.assertEqual(value["opt_base_learning_rate"], 0.001)
        self.assertEqual((value["opt_adam_beta_1"], value["opt_adam_beta_2"]), (0.9, 0.999))
        per_epoch = ["epoch_start", "epoch_stop", "eval_start", "eval_accuracy", "eval_stop", "tracked_stats"]
        start = keys.index("run_start")
        self.assertEqual(keys[start + 1:], per_epoch * EPOCHS + ["run_stop"])
        self.assertEqual([r["metadata"]["epoch_num"] for r in records if r["key"] == "eval_accuracy"], [1, 2])
        self.assertEqual(records[-1]["metadata"]["status"], "success")
        accuracies = [r["value"] for r in records if r["key"] == "eval_accuracy"]
        self.assertTrue(all(0.0 <= a <= 1.0 for a in accuracies), accuracies)

    def test_the_checker_refuses_broken_logs(self):
        without_stop = [line for line in self.lines if '"run_stop"' not in line]
        self.assertIn("run_stop: 0 lines, exactly one required", mllog_checker.check(without_stop))
        start = next(i for i, line in enumerate(self.lines) if '"run_start"' in line)
        init_stop = next(i for i, line in enumerate(self.lines) if '"init_stop"' in line)
        swapped = list(self.lines)
        swapped[start], swapped[init_stop] = swapped[init_stop], swapped[start]
        self.assertTrue(any("before init_stop" in p for p in mllog_checker.check(swapped)))
        unpaired = [line for line in self.lines if '"epoch_stop"' not in line]
        self.assertTrue(mllog_checker.check(unpaired))
        self.assertTrue(mllog_checker.check(self.lines + [":::MLLOG {not json"]))

    def test_an_existing_log_is_never_written_over(self):
        with temp_dir() as tmp:
            kept = os.path.join(tmp, "kept.mllog")
            with open(kept, "w") as f:
                f.write("an earlier run\n")
            result = run_scalebench(1, *BASE, "--mllog", kept, timeout=120)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn(f"--mllog {kept}: the file exists already", result.stderr)
            with open(kept) as f:
                self.assertEqual(f.read(), "an earlier run\n")


if __name__ == "__main__":
    unittest.main()
