"""The report's Straggler table from hand-made /arrivals and /straggler tables: a named rank with its host,
lateness and cause; an epoch where none stands out; an epoch without a verdict left out."""
import os
import sys
import tempfile
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
import straggler  # noqa: E402

COLUMNS = ["epoch", "rank", "candidate", "steps", "last_share", "excess_s", "threshold_s", "jitter_s", "compute_s",
           "median_compute_s", "input_s", "median_input_s", "cause"]


def write_run(path, verdicts):
    with h5py.File(path, "w") as f:
        table = f.create_dataset("straggler", data=np.array(verdicts, dtype=np.float64))
        table.attrs["columns"] = COLUMNS
        table.attrs["causes"] = ["none", "compute", "input"]
        arrivals = f.create_dataset("arrivals", data=np.zeros((len(verdicts), 2, 7)))
        arrivals.attrs["hosts"] = ["node-a", "node-b"]


class StragglerTable(unittest.TestCase):
    def test_named_none_and_unjudged_epochs(self):
        named = [1, 1, 1, 20, 0.95, 0.0123, 0.004, 0.001, 0.0451, 0.033, 0.0002, 0.0002, 1]
        none = [2, -1, 0, 20, 0.55, 0.0004, 0.004, 0.001, 0.033, 0.033, 0.0002, 0.0002, 0]
        unjudged = [3, -1, -1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "run.h5")
            write_run(path, [named, none, unjudged])
            with h5py.File(path, "r") as f:
                read = straggler.read_straggler(f)
        rows, hosts = read
        self.assertEqual(hosts, ["node-a", "node-b"])
        self.assertEqual([r["cause"] for r in rows], ["compute", "none", "none"])
        lines = straggler.straggler_markdown([("run", read)]).splitlines()
        self.assertEqual(len(lines), 4)  # header, rule, and the two judged epochs
        self.assertIn("| run | 1 | 20 | rank 1 | node-b | 95 | 12.3 | 4.0 | 45.1 vs 33.0 | 0.2 vs 0.2 | compute |", lines[2])
        self.assertIn("| run | 2 | 20 | none (rank 0 last most often) | node-a | 55 | 0.4 |", lines[3])

    def test_a_run_without_the_tables_has_none(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "old.h5")
            with h5py.File(path, "w") as f:
                f.create_dataset("epochs", data=np.zeros(1))
            with h5py.File(path, "r") as f:
                self.assertIsNone(straggler.read_straggler(f))


if __name__ == "__main__":
    unittest.main()
