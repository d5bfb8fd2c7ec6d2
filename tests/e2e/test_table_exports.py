"""--csv and --json on train (epochs and summary, continued by a resume) and scale (the study and its efficiency split); a resume
leaves the log of --mllog as it is. comm's tables are tested with the sweep (test_comm_sweep.py)."""
import csv
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

DATA = ["--device", "cpu", "--model", "mlp", "--data", "synthetic:1x16x16:10:512:128", "--batch-size", "32"]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class TableExports(unittest.TestCase):
    def test_train_tables_continue_across_a_resume(self):
        with temp_dir() as tmp:
            out, table, lines, log = (os.path.join(tmp, name) for name in ("run.h5", "run.csv", "run.jsonl", "run.mllog"))
            exports = ["--csv", table, "--json", lines, "--mllog", log]
            first = run_scalebench(2, "train", *DATA, "--epochs", "1", "--out", out, "--checkpoint-every", "1", *exports)
            self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
            with open(log) as f:
                first_log = f.read()
            second = run_scalebench(2, "train", *DATA, "--epochs", "2", "--out", out, "--resume", out + ".ckpt.h5", *exports)
            self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
            self.assertIn(f"--mllog {log}: the log of the run before the resume is left as it is", second.stdout)
            with open(log) as f:
                self.assertEqual(f.read(), first_log)

            epochs = read_csv(table)  # one header, a row per epoch of both commands
            self.assertEqual([int(r["epoch"]) for r in epochs], [1, 2])
            self.assertTrue(all(float(r["images_per_s"]) > 0 for r in epochs), epochs)
            summary = read_csv(os.path.join(tmp, "run-summary.csv"))
            self.assertEqual([r["epochs_run"] for r in summary], ["1", "2"])
            self.assertEqual(summary[-1]["stop_reason"], "completed")
            self.assertEqual(summary[0]["time_to_target_s"], "")  # no target: not measured
            self.assertEqual(summary[0]["wall_to_target_s"], "")
            objects = read_jsonl(lines)
            self.assertEqual([(o["table"], o.get("epoch")) for o in objects],
                             [("epochs", 1), ("summary", None), ("epochs", 2), ("summary", None)])
            self.assertIsNone(objects[1]["time_to_target_s"])

    def test_scale_exports_its_study_table(self):
        with temp_dir() as tmp:
            table, lines = os.path.join(tmp, "study.csv"), os.path.join(tmp, "study.jsonl")
            result = run_scalebench(2, "scale", *DATA, "--gpus", "1,2", "--epochs", "1", "--settle-epochs", "0",
                                    "--csv", table, "--json", lines)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            rows = read_csv(table)
            self.assertEqual([int(r["gpus"]) for r in rows], [1, 2])
            self.assertEqual(float(rows[0]["speedup"]), 1.0)
            split = read_csv(os.path.join(tmp, "study-efficiency_split.csv"))
            self.assertEqual(len(split), 2)  # one row per study row, in its order
            self.assertIn("unexplained", split[0])
            exported = read_jsonl(lines)
            self.assertEqual([o["gpus"] for o in exported if o["table"] == "study"], [1, 2])
            self.assertEqual([o["gpus"] for o in exported if o["table"] == "efficiency_split"], [1, 2])


if __name__ == "__main__":
    unittest.main()
